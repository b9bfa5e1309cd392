//! Secret masking: credentials are replaced with `[secret:KIND]` before a
//! message or tool output is hashed, stored or sent.
//!
//! Credentials are matched by their shape (prefixes such as `AKIA`, `ghp_`,
//! `sk-ant-`, PEM blocks, `scheme://user:pass@`) everywhere; values named
//! like secrets only in tool output, and only when they are literals with a
//! secret's character mix (docs/DIGESTS.md, "Masking secrets"). Bare hex and
//! ids are no shape, so git SHAs, `b3:` ids, uuids and sha256 digests stay.
//! Every pattern runs on the `regex` crate's automata: linear in the input.

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
    /// Whether a match is a secret (the named rules judge the value).
    accept: fn(&Captures) -> bool,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use SecretKind::*;
    let table: [(SecretKind, &str); 15] = [
        // PEM blocks, also inside JSON strings where newlines are `\n`.
        (
            PrivateKey,
            r"(?s)(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)",
        ),
        (
            AwsAccessKey,
            r"(?-u:\b)(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})(?-u:\b)",
        ),
        (
            AwsSecretKey,
            r#"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?-u:\b)"#,
        ),
        (GcpApiKey, r"(?-u:\b)(?P<s>AIza[0-9A-Za-z_\-]{35})"),
        (
            AzureKey,
            r"(?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=(?P<s>[A-Za-z0-9+/%]{20,}={0,2})",
        ),
        (
            GithubToken,
            r"(?-u:\b)(?P<s>(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,}))",
        ),
        (GitlabToken, r"(?-u:\b)(?P<s>glpat-[A-Za-z0-9_\-]{20,})"),
        (SlackToken, r"(?-u:\b)(?P<s>xox[abposr]-[A-Za-z0-9\-]{10,})"),
        (AnthropicKey, r"(?-u:\b)(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})"),
        (
            OpenaiKey,
            r"(?-u:\b)(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
        ),
        (
            StripeKey,
            r"(?-u:\b)(?P<s>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})",
        ),
        (NpmToken, r"(?-u:\b)(?P<s>npm_[A-Za-z0-9]{36})(?-u:\b)"),
        (
            SendgridKey,
            r"(?-u:\b)(?P<s>SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,})",
        ),
        (
            Jwt,
            r"(?-u:\b)(?P<s>eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,})",
        ),
        (
            UrlPassword,
            r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*:(?P<s>[^/\s@]+)@",
        ),
    ];
    let shaped = table.into_iter().map(|(kind, p)| Rule {
        kind,
        pattern: Regex::new(p).unwrap(),
        // `user:password@` in docs and tests is an example, not a password.
        accept: if kind == UrlPassword {
            |c| !placeholder(literal(c).0)
        } else {
            |_| true
        },
    });
    // Values named like secrets: a config line (`DB_PASSWORD=…` in an env
    // file, `password: …` in YAML) takes any literal; elsewhere (code, JSON
    // on one line, tool-call arguments, prose) only a literal with a
    // secret's character mix. Names must end with the secret word
    // (`max_tokens` is not one).
    let named = [
        (
            format!(
                r#"(?mi)^[ \t]*(?:export[ \t]+|-[ \t]+)?["']?(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD})["']?(?P<op>=|:[ \t]+)(?P<s>"[^"\n]*"|'[^'\n]*'|[^\s#]+)"#
            ),
            config_value as fn(&Captures) -> bool,
        ),
        (
            format!(
                r#"(?i)(?P<pre>[^\sA-Za-z0-9_.\-])?(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD})(?-u:\b)["'`]?(?P<op>[ \t]*(?::=|=>|=|:)?[ \t]*(?:(?:is|was|of)[ \t]+)?)(?P<s>"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|[^\s"'`,;)\]}}]+)"#
            ),
            strict_value,
        ),
    ];
    shaped
        .chain(named.into_iter().map(|(p, accept)| Rule {
            kind: NamedSecret,
            pattern: Regex::new(&p).unwrap(),
            accept,
        }))
        .collect()
});

/// The words a secret's name ends with.
const SECRET_WORD: &str = r"(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|API-KEY|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY|CREDENTIALS|AUTH_KEY|api key|access key)";

/// Words that are types, keywords or placeholders, never a secret.
const NOT_SECRETS: &[&str] = &[
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "string",
    "str",
    "bool",
    "boolean",
    "int",
    "integer",
    "number",
    "bytes",
    "any",
    "unknown",
    "object",
    "optional",
    "required",
    "default",
    "empty",
    "placeholder",
    "redacted",
    "changeme",
    "change-me",
    "secret",
    "password",
    "token",
    "example",
    "dummy",
    "sample",
    "test",
    "xxx",
    "todo",
    "fixme",
    "self",
    "this",
    "value",
    "char",
    "text",
    "varchar",
    "sensitive",
];

/// The literal a capture names, without its quotes, and whether it had them.
fn literal<'c>(c: &'c Captures) -> (&'c str, bool) {
    let v = c.name("s").map_or("", |m| m.as_str());
    let quoted = v.len() >= 2
        && matches!(v.as_bytes()[0], b'"' | b'\'' | b'`')
        && v.as_bytes()[v.len() - 1] == v.as_bytes()[0];
    if quoted {
        (&v[1..v.len() - 1], true)
    } else {
        (v, false)
    }
}

/// What no rule masks: placeholders, references, keywords and types.
fn placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.len() < 4
        || NOT_SECRETS.contains(&lower.as_str())
        || v.starts_with(['$', '%', '<', '@', '&', '*'])
        || v.contains("${")
        || v.contains("{{")
        || lower.starts_with("your")
        || lower.contains("example")
        || lower.contains("placeholder")
        || lower.contains("redacted")
        || lower.contains("...")
        || v.chars().all(|c| c == v.chars().next().unwrap_or(' '))
        || v.starts_with(MARK_PREFIX)
}

/// Code, not a literal: a path (`a::b`, `self.x`), a call, a type, an index.
fn code_expression(v: &str) -> bool {
    let dotted_identifiers = v.contains('.')
        && v.split('.').all(|seg| {
            seg.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    dotted_identifiers
        || v.starts_with(':')
        || v.ends_with([';', ','])
        || v.contains([
            ':', '(', ')', '[', ']', '{', '}', '<', '>', '|', '!', '\\', '?',
        ])
}

/// The value repeats its name (`PUBLIC_KEY_OR_PASSWORD = "PUBLIC_KEY_OR_PASSWORD"`,
/// `ALLOW_CREDENTIALS = "allowCredentials"`): an enum's or a field's name.
fn names_itself(c: &Captures, v: &str) -> bool {
    let fold = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let name = fold(c.name("name").map_or("", |m| m.as_str()));
    let value = fold(v);
    !value.is_empty() && (name.ends_with(&value) || value.ends_with(&name))
}

/// `Name` or `snake_case_name`: a type or a variable, not a key.
fn identifier_shaped(v: &str) -> bool {
    let ident = v
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let pascal = v.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && v.chars().all(|c| c.is_ascii_alphabetic());
    ident && (v.contains('_') || pascal)
}

/// A config line's value (`KEY=value` in an env file, `key: value` in YAML):
/// any literal that is not a placeholder, a type or code.
fn config_value(c: &Captures) -> bool {
    let (v, quoted) = literal(c);
    if placeholder(v) || v.contains(char::is_whitespace) || names_itself(c, v) {
        return false;
    }
    quoted || !(code_expression(v) || identifier_shaped(v))
}

/// A value outside config lines (code, JSON on one line, tool-call arguments,
/// prose): a literal with a secret's character mix, letters with digits or
/// symbols and some entropy, the way gitleaks' generic-api-key rule and
/// detect-secrets' keyword plugin tell keys from identifiers and words.
fn strict_value(c: &Captures) -> bool {
    let (v, quoted) = literal(c);
    // Prose ends a sentence after the value.
    let v = if quoted {
        v
    } else {
        v.trim_end_matches(['.', ':'])
    };
    // `AWS::ApiGateway::ApiKey`: a type path, not a secret's name.
    if c.name("pre").is_some_and(|m| m.as_str() == ":") {
        return false;
    }
    if placeholder(v)
        || names_itself(c, v)
        || v.len() < 6
        || v.len() > 500
        || v.contains(char::is_whitespace)
        || v.starts_with(['/', '.'])
        || v.contains("://")
    {
        return false;
    }
    // `tiktoken-rs-0.12.1/src`: a name running into what follows is no assignment.
    if c["op"].is_empty() {
        return false;
    }
    if !quoted {
        // Unquoted, a value must look random: letters and digits, no
        // grammar (`1*tchar`), path, identifier or type shape.
        let letters_and_digits =
            v.chars().any(|c| c.is_ascii_alphabetic()) && v.chars().any(|c| c.is_ascii_digit());
        if code_expression(v)
            || identifier_shaped(v)
            || v.contains('*')
            || !letters_and_digits
            || v.len() < 8
        {
            return false;
        }
    }
    let letters = v.chars().any(|c| c.is_ascii_alphabetic());
    let digits_or_symbols = v.chars().any(|c| !c.is_ascii_alphabetic());
    letters && digits_or_symbols && shannon_entropy(v) >= 2.5
}

fn shannon_entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in v.bytes() {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum()
}

const MARK_PREFIX: &str = "[secret:";

/// Whether `text` holds a mask put in place of a secret.
pub fn is_masked(text: &str) -> bool {
    text.contains(MARK_PREFIX)
}

/// Where a text comes from, which decides the rules that apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// What the user and the model wrote: messages and tool-call arguments.
    /// Only credentials recognisable by their shape are masked: a value the
    /// user shared by name ("use access token 'abc123'") is shown, in the
    /// prose and in the arguments the model later passes it in alike, so the
    /// assistant can still do what it was asked with it.
    Conversation,
    /// What tools returned (files, env dumps, logs): secrets nobody chose to
    /// share. Values named like secrets are masked too.
    ToolOutput,
}

impl Source {
    /// A tool message holds a tool's output; every other role, conversation.
    pub fn of(role: crate::message::Role) -> Source {
        match role {
            crate::message::Role::Tool => Source::ToolOutput,
            _ => Source::Conversation,
        }
    }
}

/// A message as it is stored and sent: its content masked as its role's
/// source, its tool-call arguments as conversation.
pub fn mask_message(mut m: crate::message::Message) -> crate::message::Message {
    m.content = mask(&m.content, Source::of(m.role)).text.into_owned();
    for c in &mut m.tool_calls {
        c.arguments = mask(&c.arguments, Source::Conversation).text.into_owned();
    }
    m
}

/// `text` with every secret replaced by `[secret:KIND]`.
pub fn mask(text: &str, source: Source) -> Masked<'_> {
    let mut current: Cow<str> = Cow::Borrowed(text);
    let mut found = Vec::new();
    for rule in RULES.iter() {
        if source == Source::Conversation && rule.kind == SecretKind::NamedSecret {
            continue;
        }
        let mut hits = Vec::new();
        let replaced = rule.pattern.replace_all(&current, |c: &Captures| {
            let whole = c.get(0).unwrap();
            let secret = c.name("s").unwrap();
            // A value another rule already masked stays as it is (and the
            // word `secret` in a mask is no secret's name).
            if whole.as_str().contains(MARK_PREFIX) || !(rule.accept)(c) {
                return whole.as_str().to_string();
            }
            hits.push(rule.kind);
            // A quoted literal keeps its quotes.
            let quotes = usize::from(literal(c).1);
            let start = secret.start() - whole.start() + quotes;
            let end = secret.end() - whole.start() - quotes;
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
            // A URL with an empty user keeps no password either.
            (
                "REDIS_URL=redis://:UDqa7Rk2wq9@localhost:6379/0",
                "REDIS_URL=redis://:[secret:url-password]@localhost:6379/0",
            ),
            // Config lines take any literal; code and prose a secret-like one.
            (
                "export API_TOKEN='s3cr3t-v4lue'",
                "export API_TOKEN='[secret:named-secret]'",
            ),
            (
                "  password: hunter2hunter",
                "  password: [secret:named-secret]",
            ),
            (
                r#"{"name": "deploy", "token": "a8Fk29dlQpz3"}"#,
                r#"{"name": "deploy", "token": "[secret:named-secret]"}"#,
            ),
            (
                "my access token is 'abc123def456ghi'",
                "my access token is '[secret:named-secret]'",
            ),
            (
                "conn(password=\"Tr0ub4dor&3\")",
                "conn(password=\"[secret:named-secret]\")",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(mask(input, Source::ToolOutput).text, want, "{input}");
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
            // Source code: identifiers, types, paths, calls, keywords, placeholders.
            "    pub bracket_token: token::Bracket,",
            "use crate::job_token::JobToken,",
            "  constructor(token: string, options?: Options) {",
            "    password: string;",
            "    continuationToken: string;",
            "        token = self.next()",
            "    def login(self, user='', passwd='', acct=''):",
            "        token = kwargs.get('token')",
            "let token = tokens.next();",
            "PASSWORD=${DB_PASSWORD}",
            "api_key: <your-api-key>",
            "password = None",
            "secret_key: Optional[str] = None",
            "  token: TokenKind;",
            "the token expired yesterday",
            "access_token = response.json()['access_token']",
            "    self.secret = secret",
        ];
        for text in keep {
            let masked = mask(text, Source::ToolOutput);
            assert_eq!(masked.text, text);
            assert!(masked.found.is_empty(), "{text}");
        }
    }

    #[test]
    fn the_conversation_keeps_values_shared_by_name_and_loses_shaped_credentials() {
        // The same value in prose and in the arguments that pass it on: both
        // shown, or (a credential by its shape) both masked.
        for text in [
            "use my access token 'abc123def456ghi' for the booking",
            r#"{"access_token": "abc123def456ghi", "card": "c1"}"#,
        ] {
            assert_eq!(mask(text, Source::Conversation).text, text);
            assert_ne!(mask(text, Source::ToolOutput).text, text);
        }
        for text in [
            "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            r#"{"token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}"#,
        ] {
            let masked = mask(text, Source::Conversation);
            assert!(
                masked.text.contains("[secret:github-token]"),
                "{}",
                masked.text
            );
        }
    }

    #[test]
    fn reports_what_it_found() {
        let masked = mask(
            "A=AKIAIOSFODNN7EXAMPLE\nB=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            Source::ToolOutput,
        );
        assert_eq!(
            masked.found,
            vec![SecretKind::AwsAccessKey, SecretKind::GithubToken]
        );
    }
}
