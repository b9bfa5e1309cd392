//! Secret masking: credentials are replaced with `[secret:KIND]` before a
//! message or tool output is hashed, stored or sent.
//!
//! Only shapes that credentials have are matched (prefixes such as `AKIA`,
//! `ghp_`, `sk-ant-`, PEM blocks, `scheme://user:pass@`, secret-named
//! variables); there is no entropy guess, so git SHAs, `b3:` ids, uuids and
//! sha256 digests stay. Every pattern runs on the `regex` crate's automata:
//! linear in the input, whatever it holds.

use regex::{Captures, Regex};
use std::borrow::Cow;
use std::sync::LazyLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecretKind {
    PrivateKey,
    AwsAccessKey,
    AwsSecretKey,
    GcpApiKey,
    AzureKey,
    GithubToken,
    GitlabToken,
    SlackToken,
    AnthropicKey,
    OpenaiKey,
    StripeKey,
    NpmToken,
    SendgridKey,
    Jwt,
    UrlPassword,
    /// The value of a variable or key named like a secret: `DB_PASSWORD=…`.
    NamedSecret,
}

impl SecretKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private-key",
            SecretKind::AwsAccessKey => "aws-access-key",
            SecretKind::AwsSecretKey => "aws-secret-key",
            SecretKind::GcpApiKey => "gcp-api-key",
            SecretKind::AzureKey => "azure-key",
            SecretKind::GithubToken => "github-token",
            SecretKind::GitlabToken => "gitlab-token",
            SecretKind::SlackToken => "slack-token",
            SecretKind::AnthropicKey => "anthropic-key",
            SecretKind::OpenaiKey => "openai-key",
            SecretKind::StripeKey => "stripe-key",
            SecretKind::NpmToken => "npm-token",
            SecretKind::SendgridKey => "sendgrid-key",
            SecretKind::Jwt => "jwt",
            SecretKind::UrlPassword => "url-password",
            SecretKind::NamedSecret => "named-secret",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Masked<'a> {
    pub text: Cow<'a, str>,
    /// One entry per masked secret, in the order the rules found them.
    pub found: Vec<SecretKind>,
}

/// A pattern and its kind. The secret is the group named `s`; text around it
/// (a variable name, `user:` of a URL) stays.
struct Rule {
    kind: SecretKind,
    pattern: Regex,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use SecretKind::*;
    let table: [(SecretKind, &str); 16] = [
        // PEM blocks, also inside JSON strings where newlines are `\n`.
        (
            PrivateKey,
            r"(?s)(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)",
        ),
        (
            AwsAccessKey,
            r"\b(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})\b",
        ),
        (
            AwsSecretKey,
            r#"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+]{40})\b"#,
        ),
        (GcpApiKey, r"\b(?P<s>AIza[0-9A-Za-z_\-]{35})"),
        (
            AzureKey,
            r"(?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=(?P<s>[A-Za-z0-9+/%]{20,}={0,2})",
        ),
        (
            GithubToken,
            r"\b(?P<s>(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,}))",
        ),
        (GitlabToken, r"\b(?P<s>glpat-[A-Za-z0-9_\-]{20,})"),
        (SlackToken, r"\b(?P<s>xox[abposr]-[A-Za-z0-9\-]{10,})"),
        (AnthropicKey, r"\b(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})"),
        (
            OpenaiKey,
            r"\b(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
        ),
        (StripeKey, r"\b(?P<s>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})"),
        (NpmToken, r"\b(?P<s>npm_[A-Za-z0-9]{36})\b"),
        (
            SendgridKey,
            r"\b(?P<s>SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,})",
        ),
        (
            Jwt,
            r"\b(?P<s>eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,})",
        ),
        (
            UrlPassword,
            r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:(?P<s>[^/\s@]+)@",
        ),
        // Variables and keys named like secrets, in env dumps, YAML and JSON.
        // The name must end with the secret word: `max_tokens` is not one.
        (
            NamedSecret,
            r#"(?i)(?:^|[\s,;{(])(?:export\s+)?["']?[A-Za-z0-9_.\-]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY|CREDENTIALS|AUTH_KEY)["']?[ \t]*[:=][ \t]*["']?(?P<s>[^\s"'#,;]{4,})"#,
        ),
    ];
    table
        .into_iter()
        .map(|(kind, p)| Rule {
            kind,
            pattern: Regex::new(p).unwrap(),
        })
        .collect()
});

const MARK_PREFIX: &str = "[secret:";

/// Whether `text` holds a mask put in place of a secret.
pub fn is_masked(text: &str) -> bool {
    text.contains(MARK_PREFIX)
}

/// `text` with every secret replaced by `[secret:KIND]`.
pub fn mask(text: &str) -> Masked<'_> {
    let mut current: Cow<str> = Cow::Borrowed(text);
    let mut found = Vec::new();
    for rule in RULES.iter() {
        let mut hits = Vec::new();
        let replaced = rule.pattern.replace_all(&current, |c: &Captures| {
            let whole = c.get(0).unwrap();
            let secret = c.name("s").unwrap();
            // A value another rule already masked stays as it is.
            if secret.as_str().starts_with(MARK_PREFIX) {
                return whole.as_str().to_string();
            }
            hits.push(rule.kind);
            let start = secret.start() - whole.start();
            let end = secret.end() - whole.start();
            let w = whole.as_str();
            format!(
                "{}{MARK_PREFIX}{}]{}",
                &w[..start],
                rule.kind.as_str(),
                &w[end..]
            )
        });
        if let Cow::Owned(s) = replaced {
            current = Cow::Owned(s);
        }
        found.extend(hits);
    }
    Masked {
        text: current,
        found,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_each_kind() {
        let cases = [
            (
                "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
                "AWS_ACCESS_KEY_ID=[secret:aws-access-key]",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [secret:aws-secret-key]",
            ),
            (
                "key=AIzaSyA1234567890abcdefghijklmnopqrstuv",
                "key=[secret:gcp-api-key]",
            ),
            (
                "AccountName=a;AccountKey=abcdEFGH1234abcdEFGH1234==;End",
                "AccountName=a;AccountKey=[secret:azure-key];End",
            ),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "token [secret:github-token]",
            ),
            ("glpat-abcdefghij0123456789", "[secret:gitlab-token]"),
            ("xoxb-123456789012-abcdefABCDEF", "[secret:slack-token]"),
            (
                "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
                "[secret:anthropic-key]",
            ),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz", "[secret:openai-key]"),
            (
                "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop",
                "Bearer [secret:jwt]",
            ),
            (
                "postgres://app:hunter22@db:5432/x",
                "postgres://app:[secret:url-password]@db:5432/x",
            ),
            (
                "DB_PASSWORD=correcthorse",
                "DB_PASSWORD=[secret:named-secret]",
            ),
            (
                "  client_secret: \"abc123xyz\"",
                "  client_secret: \"[secret:named-secret]\"",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
                "[secret:private-key]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(mask(input).text, want, "{input}");
        }
    }

    #[test]
    fn leaves_hashes_and_ids_alone() {
        let keep = [
            "commit 11f6ad8ec52a2984abaafd7c3b516503785c2072",
            "blob b3:594e519ae499",
            "id b9d676ad-2a4a-4b72-953a-0e2240de0d1f",
            "sha256:a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa",
            "max_tokens: 4000",
            "PWD=/home/runner/work",
            "token_uri: https://oauth2.googleapis.com/token",
            "see https://example.com:8080/path",
        ];
        for text in keep {
            let masked = mask(text);
            assert_eq!(masked.text, text);
            assert!(masked.found.is_empty(), "{text}");
        }
    }

    #[test]
    fn reports_what_it_found() {
        let masked = mask("A=AKIAIOSFODNN7EXAMPLE\nB=ghp_abcdefghijklmnopqrstuvwxyz0123456789");
        assert_eq!(
            masked.found,
            vec![SecretKind::AwsAccessKey, SecretKind::GithubToken]
        );
    }
}
