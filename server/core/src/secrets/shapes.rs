//! Credentials recognisable by their shape alone: a vendor prefix (`AKIA`,
//! `ghp_`, `sk-ant-`), a PEM block, the password of a URL, of `curl -u` or of
//! an `Authorization` header. They are masked in every source.

use regex::{Captures, Regex};
use std::sync::LazyLock;

use super::gitleaks::GITLEAKS;
use super::literal::{code_expression, filler, literal, placeholder};
use super::SecretKind::{self, *};

/// Whether a rule's match is a secret.
type Accept = fn(&Captures) -> bool;

/// A pattern and its kind. The secret is the group named `s`; text around it
/// (a variable name, `user:` of a URL) stays.
pub(super) struct Rule {
    pub kind: SecretKind,
    pub pattern: Regex,
    /// Whether a match is a secret.
    pub accept: Accept,
}

pub(super) static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let table: [(SecretKind, &str, Accept); 18] = [
        // PEM blocks, also inside JSON strings where newlines are `\n`.
        (
            PrivateKey,
            r"(?s)(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)",
            key_material,
        ),
        // A block cut short (`head -3 ~/.ssh/id_ed25519`): its header lines
        // and the base64 lines that follow, up to the first other line.
        (
            PrivateKey,
            r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z\-]+: [^\r\n\\]*)*(?:\r?\n|\\r\\n|\\n)*(?:(?:\r?\n|\\r\\n|\\n)?[A-Za-z0-9+/=]{16,})+)",
            any,
        ),
        (
            AwsAccessKey,
            r"(?-u:\b)(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})(?-u:\b)",
            not_filler,
        ),
        (
            AwsSecretKey,
            r#"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?-u:\b)"#,
            not_filler,
        ),
        (
            GcpApiKey,
            r"(?-u:\b)(?P<s>AIza[0-9A-Za-z_\-]{35})",
            not_published,
        ),
        (
            AzureKey,
            r"(?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=(?P<s>[A-Za-z0-9+/%]{20,}={0,2})",
            not_filler,
        ),
        (
            GithubToken,
            r"(?-u:\b)(?P<s>(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,}))",
            not_filler,
        ),
        (
            GitlabToken,
            r"(?-u:\b)(?P<s>glpat-[A-Za-z0-9_\-]{20,})",
            not_filler,
        ),
        (
            SlackToken,
            r"(?-u:\b)(?P<s>xox[abprs]-[0-9]{6,}-[A-Za-z0-9\-]{8,})",
            not_filler,
        ),
        (
            AnthropicKey,
            r"(?-u:\b)(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})",
            not_filler,
        ),
        (
            OpenaiKey,
            r"(?-u:\b)(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
            not_filler,
        ),
        (
            StripeKey,
            r"(?-u:\b)(?P<s>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})",
            not_filler,
        ),
        (
            NpmToken,
            r"(?-u:\b)(?P<s>npm_[A-Za-z0-9]{36})(?-u:\b)",
            not_filler,
        ),
        (
            SendgridKey,
            r"(?-u:\b)(?P<s>SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,})",
            not_filler,
        ),
        (
            Jwt,
            r"(?-u:\b)(?P<s>eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,})",
            not_filler,
        ),
        // `user:password@` in docs and tests is an example, not a password.
        (
            UrlPassword,
            r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*:(?P<s>[^/\s@]+)@",
            not_placeholder,
        ),
        (
            BasicAuth,
            r#"(?-u:\b)curl(?-u:\b)[^\n]*?[ \t](?:-u|--user)(?:[ \t]+|=)["']?[^\s:"'$]+:(?P<s>[^\s"']+)"#,
            not_placeholder,
        ),
        // `Bearer ACCESS_TOKEN` and `Bearer os.environ[…]` in docs are no tokens.
        (
            BasicAuth,
            r#"(?i)(?-u:\b)(?:proxy-)?authorization["']?[ \t]*[:=][ \t]*["']?(?:basic|bearer|token|digest)[ \t]+(?P<s>[A-Za-z0-9+/=._~\-]{8,})"#,
            not_placeholder_or_code,
        ),
    ];
    table
        .into_iter()
        .map(|(kind, p, accept)| Rule {
            kind,
            pattern: Regex::new(p).unwrap(),
            accept,
        })
        .collect()
});

/// Google publishes some API keys (its samples'); gitleaks lists them.
fn not_published(c: &Captures) -> bool {
    not_filler(c) && !GITLEAKS.allowlisted("gcp-api-key", literal(c).0)
}

fn any(_: &Captures) -> bool {
    true
}

fn not_placeholder(c: &Captures) -> bool {
    !placeholder(literal(c).0)
}

fn not_placeholder_or_code(c: &Captures) -> bool {
    let v = literal(c).0;
    !placeholder(v) && !code_expression(v)
}

fn not_filler(c: &Captures) -> bool {
    !filler(literal(c).0)
}

/// A PEM block with key material in it, not `-----BEGIN…-----\nanything\n-----END…`.
fn key_material(c: &Captures) -> bool {
    literal(c)
        .0
        .as_bytes()
        .chunk_by(|a, b| base64_byte(*a) == base64_byte(*b))
        .any(|run| run.len() >= 16 && base64_byte(run[0]))
}

fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}
