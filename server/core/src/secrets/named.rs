//! Values named like secrets (`DB_PASSWORD=…`, `"api_key": "…"`), masked in
//! tool output only, and only when the value is a literal with a secret's
//! character mix (docs/DIGESTS.md, "Masking secrets"): a config line takes
//! any literal, code and prose a random-looking one.

use regex::{Captures, Regex};
use std::sync::LazyLock;

use super::{shannon_entropy, Accept, MARK_PREFIX};

/// A pattern whose group `s` is the value of the secret its group `name` names.
pub(super) struct Rule {
    pub pattern: Regex,
    /// Whether a match's value is a secret.
    pub accept: Accept,
}

/// The words a secret's name ends with. `PASS`, `PWD` and `AUTH` only after
/// a separator (`DB_PASS`, `POSTGRES_PWD`, `REDIS_AUTH`): the shell's `PWD`
/// and `OLDPWD` are directories, `bypass` and `oauth` no secrets.
const SECRET_WORD: &str = r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|APIKEY|(?:API|ACCESS|SECRET|PRIVATE|AUTH)[_\-]KEY|CREDENTIALS|[_.\-](?:PASS|PWD|AUTH)|api key|access key)";

/// A value: quoted, or unquoted up to a space, a quote, a separator or an
/// escaped newline (`"X_TOKEN=v\nNEXT=1"` in a JSON string).
const VALUE: &str = r#"(?P<s>"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|(?:[^\s"'`,;)\]}\\]|\\[^nrt\s])+)"#;

pub(super) static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rules: [(String, Accept); 4] = [
        // A config line: `KEY=value` in an env file, `key: value` in YAML or
        // JSON, optionally after `export` or a list dash.
        (
            format!(
                r#"(?mi)^[ \t]*(?:export[ \t]+|-[ \t]+)?["']?(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD})["']?(?P<op>=|:[ \t]+)(?P<s>"[^"\n]*"|'[^'\n]*'|[^\s#]+)"#
            ),
            config_value,
        ),
        // Anywhere else: an assignment in code (`var t string = "…"`, make's
        // `::=` and `?=`, PHP's `.=`), a key and its value (`=>`, `:`), a call's
        // arguments (`setProperty("X_TOKEN", "…")`), prose (`token is …`).
        (
            format!(
                r#"(?i)(?P<pre>[^\sA-Za-z0-9_.\-])?(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD})(?-u:\b)["'`]?(?P<op>[ \t]*(?::?[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*=|:{{1,3}}=|\?=|\.=|=>|=|:|,)?[ \t]*(?:(?:is|was|of)[ \t]+)?){VALUE}"#
            ),
            strict_value,
        ),
        // XML: `<add key="Password" value="…"/>`.
        (
            format!(
                r#"(?i)key=["'](?P<name>[A-Za-z0-9_.:\-]*{SECRET_WORD})["'](?P<op>[ \t]+value=)(?P<s>"[^"\n]*"|'[^'\n]*')"#
            ),
            config_value,
        ),
        // XML: `<dbPassword>…</dbPassword>`, the value on its line or the next.
        (
            format!(
                r#"(?i)<(?P<name>[A-Za-z0-9_.:\-]*{SECRET_WORD})(?P<op>>)[ \t]*\r?\n?[ \t]*(?P<s>[^<\s]+)[ \t]*\r?\n?[ \t]*</"#
            ),
            strict_value,
        ),
    ];
    rules
        .into_iter()
        .map(|(p, accept)| Rule {
            pattern: Regex::new(&p).unwrap(),
            accept,
        })
        .collect()
});

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
    "pass",
    "passwd",
    "pwd",
];

/// Names that end like a secret's but name none: a public key or token, a
/// form's anti-forgery token (`csrf_token`, Rails' `authenticity_token`).
const NOT_SECRET_NAMES: &[&str] = &["public", "csrf", "xsrf", "authenticity"];

/// The literal a capture names, without its quotes, and whether it had them.
pub(super) fn literal<'c>(c: &'c Captures) -> (&'c str, bool) {
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
pub(super) fn placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.len() < 4
        || NOT_SECRETS.contains(&lower.as_str())
        || v.starts_with(['%', '<', '['])
        || reference(v)
        || v.contains("${")
        || v.contains("{{")
        || lower.starts_with("your")
        || lower.contains("example")
        || lower.contains("placeholder")
        || lower.contains("redacted")
        || lower.contains("...")
        || v.chars().all(|c| c == v.chars().next().unwrap_or(' '))
        || v.starts_with(MARK_PREFIX)
        || filler(v)
        || v.ends_with(['>', ']'])
}

/// A documented fake: `ghp_xxxx…`, `glpat-XXXX…`, `sha256~XXXX_PUT_YOUR_TOKEN…`.
pub(super) fn filler(v: &str) -> bool {
    v.as_bytes()
        .chunk_by(|a, b| a == b)
        .any(|run| run.len() >= 8)
}

/// A variable, anchor or alias (`$DB_PASS`, `$(cat f)`, `@Value`, `*default`,
/// `&Token`), not a literal that starts with the same sigil (`$Pz8wq1Vn`):
/// a name is in one case or made of letters only.
fn reference(v: &str) -> bool {
    let Some(rest) = v.strip_prefix(['$', '@', '&', '*']) else {
        return false;
    };
    let name = rest.trim_end_matches('@');
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let one_case = !name.chars().any(|c| c.is_ascii_uppercase())
        || !name.chars().any(|c| c.is_ascii_lowercase());
    let letters_only = name.chars().all(|c| c.is_ascii_alphabetic());
    rest.starts_with(['{', '(', '$']) || rest.is_empty() || identifier && (one_case || letters_only)
}

/// Code, not a literal: a path (`a::b`, `self.x`), a call, a type, an index,
/// a negation or a YAML tag (`!Ref`).
fn code_expression(v: &str) -> bool {
    let dotted_identifiers = v.contains('.')
        && v.split('.').all(|seg| {
            seg.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    dotted_identifiers
        || v.starts_with([':', '!'])
        || v.ends_with([';', ','])
        || v.contains([':', '(', ')', '[', ']', '{', '}', '<', '>', '|', '\\', '?'])
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

fn not_a_secret_name(c: &Captures) -> bool {
    let name = c
        .name("name")
        .map_or("", |m| m.as_str())
        .to_ascii_lowercase();
    NOT_SECRET_NAMES.iter().any(|w| name.contains(w))
}

/// `jjwt-jackson-0.11.2`: a package and its version.
fn versioned(v: &str) -> bool {
    let Some((_, version)) = v.rsplit_once('-') else {
        return false;
    };
    let parts: Vec<&str> = version.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
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

/// `REDIS_AUTH=r3d1s…` is a password, `MAIL_AUTH=plain` a mechanism.
fn auth_mechanism(c: &Captures, v: &str) -> bool {
    let name = c.name("name").map_or("", |m| m.as_str());
    name.to_ascii_lowercase().ends_with("auth")
        && v.chars().all(|c| c.is_ascii_lowercase() || c == '-')
}

/// A quoted passphrase (`"my secret Pass 42"`), not a sentence: a few
/// words, a digit among them, no closing punctuation.
fn passphrase(v: &str) -> bool {
    v.split_whitespace().count() <= 5
        && v.chars().any(|c| c.is_ascii_digit())
        && !v.ends_with(['.', ':', '?', '!'])
}

/// A config line's value (`KEY=value` in an env file, `key: value` in YAML):
/// any literal that is not a placeholder, a type or code.
fn config_value(c: &Captures) -> bool {
    let (v, quoted) = literal(c);
    let spaced = v.contains(char::is_whitespace);
    if placeholder(v)
        || names_itself(c, v)
        || not_a_secret_name(c)
        || auth_mechanism(c, v)
        || spaced && !(quoted && passphrase(v))
        || v.starts_with(['/', '~'])
    {
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
        || not_a_secret_name(c)
        || v.len() < 6
        || v.len() > 500
        || v.contains(char::is_whitespace)
        || v.starts_with(['/', '.'])
        || v.contains("://")
    {
        return false;
    }
    // `tiktoken-rs-0.12.1/src`: a name running into what follows is no
    // assignment, and an unquoted value needs an operator (`passwd HTTP/1.1`
    // is a request line). After a comma, a quoted value is an argument
    // beside the name (`setProperty("X_TOKEN", "…")`) only when it looks
    // random: `('password', 'localhost:22')` is a tuple of strings.
    let op = c["op"].trim();
    if c["op"].is_empty() || op.is_empty() && !quoted {
        return false;
    }
    if !quoted || op == "," {
        // Unquoted, a value must look random: letters and digits, no
        // grammar (`1*tchar`), path, identifier or type shape.
        let letters_and_digits =
            v.chars().any(|c| c.is_ascii_alphabetic()) && v.chars().any(|c| c.is_ascii_digit());
        if code_expression(v)
            || identifier_shaped(v)
            || versioned(v)
            || v.contains(['*', '!'])
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
