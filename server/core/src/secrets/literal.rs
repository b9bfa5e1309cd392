//! What a value looks like, whatever names it: a placeholder, a reference,
//! code, a name, a path, or a literal a secret could be. `named` judges the
//! values of names with these, `shapes` and the gitleaks pass drop the
//! placeholders their patterns match.

use regex::Captures;

use super::{shannon_entropy, MARK_PREFIX};

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

/// The literal a capture names, without its quotes, and whether it had them.
pub(super) fn literal<'c>(c: &'c Captures) -> (&'c str, bool) {
    unquoted(c.name("s").map_or("", |m| m.as_str()))
}

/// `v` without the quotes around it, and whether it had them.
pub(super) fn unquoted(v: &str) -> (&str, bool) {
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
        || stand_in(v)
        || v.starts_with('[')
        || lower.contains("example")
        || lower.contains("placeholder")
        || lower.contains("redacted")
        || lower.contains("...")
        || v.chars().all(|c| c == v.chars().next().unwrap_or(' '))
        || v.starts_with(MARK_PREFIX)
        || filler(v)
        || v.ends_with(']')
}

/// What stands for a value in docs and templates: `<token>`, `YOUR_TOKEN`,
/// `your-api-key`, `${VAR}`, `{{ var }}`, `{name}`, `%(password)s`,
/// `$DB_PASS`, a keyword (`None`, `string`, `changeme`, `password`).
/// gitleaks' patterns match these too (`curl -H "Authorization: Bearer
/// YOUR_TOKEN"`, `PASSWORD = "PASSWORD"`); its own allowlists catch the
/// rest of its fakes.
pub(super) fn stand_in(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    NOT_SECRETS.contains(&lower.as_str())
        || lower.starts_with("your")
        || v.starts_with('<')
        || v.ends_with('>')
        || v.contains("${")
        || v.contains("{{")
        || format_field(v)
        || capitals_name(v)
        || format_directive(v)
        || reference(v)
}

/// A documented fake: `ghp_xxxx…`, `glpat-XXXX…`, `sha256~XXXX_PUT_YOUR_TOKEN…`.
pub(super) fn filler(v: &str) -> bool {
    v.as_bytes()
        .chunk_by(|a, b| a == b)
        .any(|run| run.len() >= 8)
}

/// A name in capitals standing for the value (`YOUR_TOKEN`, `ACCESS_TOKEN`,
/// `OAUTH-TOKEN`): letters and separators only.
fn capitals_name(v: &str) -> bool {
    v.contains(['_', '-'])
        && v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || matches!(c, '_' | '-'))
}

/// A format string's or an f-string's field: `{}`, `{0}`, `{name}`,
/// `{self.token}`.
fn format_field(v: &str) -> bool {
    v.strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|inner| {
            inner
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
        })
}

/// A format string's slot (`%s`, `%(password)s`, `%{token}`) or a Windows
/// variable (`%DB_PASSWORD%`), not a literal that starts with `%`.
fn format_directive(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('%') else {
        return false;
    };
    let windows_variable = rest
        .strip_suffix('%')
        .is_some_and(|name| !name.is_empty() && identifier(name));
    rest.starts_with(['(', '{']) || windows_variable
}

fn identifier(v: &str) -> bool {
    v.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A variable, anchor or alias (`$DB_PASS`, `$(cat f)`, `@Value`, `@VERSION@`,
/// `*default`, `&Token`), not a literal that starts with the same sigil
/// (`$Pz8wq1Vn`, `@Mx7vq2Lp`, `$ab12cd34`): a name is in one case or made of
/// letters only, and letters do not follow its digits unless a separator
/// splits it (`$s3_bucket`).
fn reference(v: &str) -> bool {
    let Some(rest) = v.strip_prefix(['$', '@', '&', '*']) else {
        return false;
    };
    if rest.is_empty() || rest.starts_with(['{', '(', '$']) {
        return true;
    }
    let name = rest.trim_end_matches('@');
    let name_shaped = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !name_shaped {
        return false;
    }
    let letters_only = name
        .chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '-' | '.'));
    if v.starts_with('@') {
        // Ruby's `@name`, Spring's `@Value`, Maven's `@name@`.
        return letters_only || rest.ends_with('@');
    }
    let one_case = !name.chars().any(|c| c.is_ascii_uppercase())
        || !name.chars().any(|c| c.is_ascii_lowercase());
    let separated = name.contains(['_', '-', '.']);
    let letters_after_digits = name
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && w[1].is_ascii_alphabetic());
    letters_only || one_case && (separated || !letters_after_digits)
}

/// Code, not a literal: a path of identifiers (`self.x`, `a::b`), brackets
/// of a call, an index, a generic type or a block (`get()`, `&[u8]`,
/// `Option<String>`, `Token![fn]`), quotes or a backslash in an unquoted
/// value (`f"{x}"`), an arrow, a Ruby symbol; a list's or a call's item or
/// a statement when what precedes the `,` or `;` is code or a name
/// (`String,`, `&OkmBlock,`: a password may end with a comma).
pub(super) fn code_expression(v: &str) -> bool {
    if let Some(item) = v.strip_suffix([',', ';']) {
        return item.is_empty() || identifier(item) || reference(item) || code_expression(item);
    }
    dotted_identifiers(v)
        || v.contains(['(', ')', '[', ']', '{', '}', '<', '>', '"', '\'', '`', '\\'])
        || v.contains("::")
        || v.contains("->")
        || v.strip_prefix(':').is_some_and(identifier)
}

/// Code, where a secret would be a machine's string (code, prose, a
/// token's value): also a colon, a pipe or a question mark anywhere
/// (`Token::U32(1)`, `a | b`, `x ? y`), or a leading `!`. People put these
/// in passwords; tokens are letters, digits and a few separators.
pub(super) fn code_like(v: &str) -> bool {
    code_expression(v) || v.contains([':', '|', '?']) || v.starts_with('!')
}

/// `self.db_password`, `os.environ`: identifiers joined by dots. Code names
/// rarely carry digits; passwords and keys of this shape do
/// (`violet.Maple4691`, `V8gDRUO5xSqAiUkNSVlvUMie.Kx.Q6`).
fn dotted_identifiers(v: &str) -> bool {
    v.contains('.') && v.split('.').all(identifier) && !v.chars().any(|c| c.is_ascii_digit())
}

/// `Name` or `snake_case_name`: a type or a variable, not a key.
pub(super) fn identifier_shaped(v: &str) -> bool {
    let pascal = v.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && v.chars().all(|c| c.is_ascii_alphabetic());
    identifier(v) && (v.contains('_') || pascal)
}

/// Words run together without digits (`next_token`, `nextToken`,
/// `Access-Control-Allow-Credentials`): a name, as a token never is.
pub(super) fn word_name(v: &str) -> bool {
    let letters_and_separators = v
        .chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '-' | '.'));
    let separated = v.contains(['_', '-', '.']);
    let camel = v.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && v.chars().any(|c| c.is_ascii_uppercase());
    letters_and_separators && (separated || camel)
}

/// `PKCS7PrivateKeyTypes`, `X25519PrivateKey`: capitalised words, digits
/// between them. Each run of lower case follows a capital and is two
/// letters or more; a random key has lone lower-case letters.
pub(super) fn camel_identifier(v: &str) -> bool {
    let b = v.as_bytes();
    if !b.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    let mut words = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_lowercase() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        if start == 0 || !b[start - 1].is_ascii_uppercase() || i - start < 2 {
            return false;
        }
        words += 1;
    }
    words >= 2
}

/// A file path (`/run/secrets/db`, `~/.pgpass`, `./key.txt`): path
/// characters only, and a relative prefix or two segments or more.
pub(super) fn path(v: &str) -> bool {
    let relative = v.starts_with("~/") || v.starts_with("./") || v.starts_with("../");
    let absolute = v.starts_with('/') && v[1..].contains('/');
    (relative || absolute)
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.' | '~'))
}

/// A CSS colour (`#f8f8f2`), as a style table gives its `Token`.
pub(super) fn colour(v: &str) -> bool {
    v.strip_prefix('#').is_some_and(|hex| {
        matches!(hex.len(), 3 | 4 | 6 | 8) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// Words a name's value repeats when it is a label, not a secret
/// (`"Reset password"`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwort",
    "passphrase",
    "passwd",
    "pass",
    "secret",
    "token",
    "key",
];

/// A quoted passphrase (`"correct horse battery staple"`, `"my secret Pass
/// 42"`), not a sentence or a label: a few words, no closing punctuation,
/// and a digit or a symbol unless no word of it names a secret.
pub(super) fn passphrase(v: &str) -> bool {
    let words: Vec<&str> = v.split_whitespace().collect();
    let marked = v.chars().any(|c| !c.is_alphabetic() && !c.is_whitespace());
    let label = words
        .iter()
        .any(|w| SECRET_WORDS.contains(&w.to_lowercase().as_str()));
    (1..=8).contains(&words.len())
        && !v.trim_end().ends_with(['.', '?', ':', ',', ';'])
        && (marked || !label)
}

/// A literal with a secret's character mix: letters with digits or
/// symbols, and some entropy (gitleaks' generic-api-key and detect-secrets'
/// keyword plugin tell keys from words this way).
pub(super) fn secret_mix(v: &str) -> bool {
    let letters = v.chars().any(|c| c.is_ascii_alphabetic());
    let others = v.chars().any(|c| !c.is_ascii_alphabetic());
    letters && others && shannon_entropy(v) >= 2.5
}
