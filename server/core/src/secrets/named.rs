//! Values named like secrets (`DB_PASSWORD=…`, `"api_key": "…"`), masked in
//! tool output only, and only when the value is a literal that could be one
//! (docs/DIGESTS.md, "Masking secrets").
//!
//! Names come in two kinds. A password (`PASSWORD`, `PASSWD`, `PASSPHRASE`,
//! `SECRET`, `DB_PASS`, `ADMIN_PWD`, `REDIS_AUTH`) is chosen by people, so
//! on a config line or as a JSON string any literal is one. A token or key
//! (`TOKEN`, `API_KEY`, `CREDENTIALS`) is made by machines, so only a value
//! with a machine's character mix is one: `Token: '#f8f8f2'` in a style
//! table and `"input_token": "next_token"` in a paginator are not. In code
//! and prose every value must have that mix.

use regex::{Captures, Regex};
use std::ops::Range;
use std::sync::LazyLock;

use super::literal::{
    camel_identifier, code_expression, code_like, colour, identifier_shaped, literal, passphrase,
    path, placeholder, secret_mix, unquoted, word_name,
};

/// Where the secret of a match is in the text, if its value is one.
type Secret = fn(&Captures) -> Option<Range<usize>>;

/// A pattern whose group `name` names a secret, and where its value is.
pub(super) struct Rule {
    pub pattern: Regex,
    pub secret: Secret,
}

/// The words a secret's name ends with. `PASS`, `PWD` and `AUTH` only after
/// a separator or, for `Pass` and `Pwd`, a lower-case letter (`DB_PASS`,
/// `POSTGRES_PWD`, `REDIS_AUTH`, `adminPwd`): the shell's `PWD` and
/// `OLDPWD` are directories, `bypass` and `oauth` no secrets. A password's
/// name may end in a number, one account's of several (`DB_PASSWORD_2`).
const SECRET_WORD: &str = r"(?:(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|[_.\-](?:PASS|PWD|AUTH)|(?-i:[a-z0-9](?:Pass|Pwd)))(?:_?[0-9]{1,3})?|TOKEN|APIKEY|(?:API|ACCESS|SECRET|PRIVATE|AUTH)[_\-]KEY|CREDENTIALS|api key|access key)";

/// A value in code or prose: quoted, or unquoted up to a space, a quote, a
/// separator, a query string's `&` or an escaped newline (`"X_TOKEN=v\nNEXT=1"`
/// in a JSON string).
const VALUE: &str = r#"(?P<s>"[^"\n]*"|'[^'\n]*'|`[^`\n]*`|(?:[^\s"'`,;)\]}\\&]|\\[^nrt\s])+)"#;

pub(super) static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rules: [(String, Secret); 6] = [
        // A config line: `KEY=value` in an env file or a shell script,
        // `key: value` in YAML or JSON, optionally after `export` (`declare
        // -x`, `local`, `readonly`) or a list dash, the item quoted whole in
        // a compose file (`- "KEY=value"`). A bare `pass` names a password on
        // a config line only.
        (
            format!(
                r#"(?mi)^[ \t]*(?:(?:export|declare(?:[ \t]+-[a-zA-Z]+)*|local|readonly|typeset)[ \t]+|-[ \t]+)?(?P<open>["']?)(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD}|pass)["']?(?P<op>=|:[ \t]+)(?P<s>"[^"\n]*"|'[^'\n]*'|[^\s]+)(?P<rest>[^\n]*)"#
            ),
            config_line,
        ),
        // A JSON string named like a secret, wherever it is (`{"db":
        // {"password": "…"}}` on one line).
        (
            format!(
                r#"(?i)"(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD}|pass)"[ \t]*:[ \t]*(?P<s>"(?:[^"\\\n]|\\.)*")[ \t]*(?P<rest>[^ \t\n]?)"#
            ),
            json_string,
        ),
        // An assignment in a string, wherever it is: a compose file's flow
        // list (`environment: ["KEY=value"]`), `docker run -e "KEY=value"`;
        // not a command line's flag (`"--jobserver-auth=3,4 -j2"`).
        (
            format!(
                r#"(?i)(?P<open>["'])(?P<name>(?:[A-Za-z][A-Za-z0-9_.\-]*)?{SECRET_WORD})=(?P<s>(?:[^"'\\\n]|\\[^nrt])*)(?:["']|\\[nrt])"#
            ),
            quoted_assignment,
        ),
        // Anywhere else: an assignment in code (`var t string = "…"`, make's
        // `::=` and `?=`, PHP's `.=`), a key and its value (`=>`, `:`), a call's
        // arguments (`setProperty("X_TOKEN", "…")`), prose (`token is …`).
        (
            format!(
                r#"(?i)(?P<pre>[^\sA-Za-z0-9_.\-])?(?P<name>[A-Za-z0-9_.\-]*{SECRET_WORD})(?-u:\b)["'`]?(?P<op>[ \t]*(?::?[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*=|:{{1,3}}=|\?=|\.=|=>|=|:|,)?[ \t]*(?:(?:is|was|of)[ \t]+)?){VALUE}"#
            ),
            code_or_prose,
        ),
        // XML: `<add key="Password" value="…"/>`.
        (
            format!(
                r#"(?i)key=["'](?P<name>[A-Za-z0-9_.:\-]*{SECRET_WORD})["'](?P<op>[ \t]+value=)(?P<s>"[^"\n]*"|'[^'\n]*')"#
            ),
            xml_attribute,
        ),
        // XML: `<dbPassword>…</dbPassword>`, the value on its line or the next.
        (
            format!(
                r#"(?i)<(?P<name>[A-Za-z0-9_.:\-]*{SECRET_WORD})(?P<op>>)[ \t]*\r?\n?[ \t]*(?P<s>[^<\s]+)[ \t]*\r?\n?[ \t]*</"#
            ),
            code_or_prose,
        ),
    ];
    rules
        .into_iter()
        .map(|(p, secret)| Rule {
            pattern: Regex::new(&p).unwrap(),
            secret,
        })
        .collect()
});

/// What a name says of the values it takes.
#[derive(Clone, Copy)]
enum Named {
    /// Chosen by people: any literal.
    Password,
    /// Made by machines: a literal with a machine's character mix.
    Key,
}

impl Named {
    fn of(name: &str) -> Named {
        const PASSWORD_WORDS: [&str; 7] = [
            "password",
            "passwd",
            "passphrase",
            "pass",
            "pwd",
            "secret",
            "auth",
        ];
        let lower = name
            .to_ascii_lowercase()
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '_')
            .to_string();
        if PASSWORD_WORDS.iter().any(|w| lower.ends_with(w)) {
            Named::Password
        } else {
            Named::Key
        }
    }
}

/// How a setting is written, which decides what an unquoted value may be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `KEY=value`: an env file, a shell script, a compose list's item.
    Assignment,
    /// `key: value`: YAML or JSON, where ` #` starts a comment and a bare
    /// identifier is as likely code's (`password: hashed_pw`).
    Mapping,
}

/// A value as written: its text without quotes, where that starts in the
/// text, and whether it was quoted.
struct Value<'t> {
    text: &'t str,
    start: usize,
    quoted: bool,
}

impl Value<'_> {
    fn range(&self) -> Range<usize> {
        self.start..self.start + self.text.len()
    }
}

fn name<'c>(c: &'c Captures) -> &'c str {
    c.name("name").map_or("", |m| m.as_str())
}

/// A config line's value. An unquoted YAML value followed by more words is
/// no literal (`force_pass: match env::var(…)`, `master_password: !Ref X`),
/// nor is a quoted one that an expression goes on from (`"…".into()`,
/// `'user:' + name`).
fn config_line(c: &Captures) -> Option<Range<usize>> {
    let whole = c.get(0)?;
    let s = c.name("s")?;
    let rest = c.name("rest").map_or("", |m| m.as_str());
    let form = if c["op"].starts_with(':') {
        Form::Mapping
    } else {
        Form::Assignment
    };
    let open = &c["open"];
    let value = if !open.is_empty() && form == Form::Assignment {
        // `- "KEY=value with spaces"`: up to the quote that closes the item.
        let tail = whole.as_str()[s.start() - whole.start()..].trim_end();
        let text = tail.strip_suffix(open)?;
        Value {
            text,
            start: s.start(),
            quoted: true,
        }
    } else {
        let (text, quoted) = unquoted(s.as_str());
        let trailing = rest.trim_start();
        let ends_value = trailing.is_empty()
            || trailing.starts_with([',', ';', '}', ']', ')'])
            || trailing.starts_with('#') && rest.starts_with([' ', '\t']);
        if (quoted || form == Form::Mapping) && !ends_value {
            return None;
        }
        Value {
            text,
            start: s.start() + usize::from(quoted),
            quoted,
        }
    };
    // A test harness's verdict (`PASS: t/basic.sh` at a line's start), not
    // a compose file's `PASS: '…'`.
    let indented = whole.as_str().starts_with([' ', '\t']);
    if name(c) == "PASS" && form == Form::Mapping && !value.quoted && !indented {
        return None;
    }
    secret_in(c, &value, form)
}

/// Where `value` is, if its name makes it a secret.
fn secret_in(c: &Captures, value: &Value, form: Form) -> Option<Range<usize>> {
    let secret = match Named::of(name(c)) {
        Named::Password => password_literal(c, value, form),
        Named::Key => key_literal(c, value),
    };
    secret.then(|| value.range())
}

/// A JSON string's value: a literal wherever the object is.
fn json_string(c: &Captures) -> Option<Range<usize>> {
    let s = c.name("s")?;
    if !matches!(&c["rest"], "" | "," | "}" | "]" | ")" | "\r") {
        return None;
    }
    let value = Value {
        text: unquoted(s.as_str()).0,
        start: s.start() + 1,
        quoted: true,
    };
    secret_in(c, &value, Form::Mapping)
}

/// `"KEY=value"`: the value up to the closing quote or an escaped newline
/// (`'password={0}\n'`, `"A_TOKEN=…\nDEBUG=true"`), quoted as the whole is.
fn quoted_assignment(c: &Captures) -> Option<Range<usize>> {
    let s = c.name("s")?;
    let value = Value {
        text: s.as_str(),
        start: s.start(),
        quoted: true,
    };
    secret_in(c, &value, Form::Assignment)
}

/// `<add key="Password" value="…"/>`: a config file's setting.
fn xml_attribute(c: &Captures) -> Option<Range<usize>> {
    let s = c.name("s")?;
    let value = Value {
        text: unquoted(s.as_str()).0,
        start: s.start() + 1,
        quoted: true,
    };
    secret_in(c, &value, Form::Assignment)
}

/// Names that end like a secret's but name none: a public key or token, a
/// form's anti-forgery token (`csrf_token`, Rails' `authenticity_token`).
const NOT_SECRET_NAMES: &[&str] = &["public", "csrf", "xsrf", "authenticity"];

/// What no name makes a secret: placeholders, references, the name itself,
/// a public or anti-forgery token, a path, a URL.
fn not_a_literal(c: &Captures, v: &str) -> bool {
    let lower_name = name(c).to_ascii_lowercase();
    placeholder(v)
        || names_itself(c, v)
        || NOT_SECRET_NAMES.iter().any(|w| lower_name.contains(w))
        || auth_mechanism(c, v)
        || path(v)
        || v.contains("://")
}

/// A password's value on a config line or in JSON: any literal that is not
/// a placeholder or code. Spaced, only quoted and a passphrase; unquoted
/// in YAML, not a comment, a tag (`!Ref`) or a variable's name.
fn password_literal(c: &Captures, v: &Value, form: Form) -> bool {
    let t = v.text;
    if not_a_literal(c, t) {
        return false;
    }
    if t.contains(char::is_whitespace) {
        return v.quoted && passphrase(t);
    }
    if v.quoted {
        return true;
    }
    let yaml_tag =
        t.starts_with('!') && t[1..].chars().all(|c| c.is_ascii_alphabetic() || c == '!');
    let mapping = form == Form::Mapping;
    let variable = mapping && identifier_shaped(t) && !t.chars().any(|c| c.is_ascii_digit());
    !(mapping && t.starts_with('#') || yaml_tag || variable || code_expression(t))
}

/// A token's or key's value: a literal with a machine's character mix, not
/// a name (`next_token`) or a colour (`#f8f8f2`).
fn key_literal(c: &Captures, v: &Value) -> bool {
    let t = v.text;
    let unquoted_code = !v.quoted && (code_like(t) || identifier_shaped(t));
    !(not_a_literal(c, t)
        || word_name(t)
        || colour(t)
        || unquoted_code
        || t.contains(char::is_whitespace)
        || !(6..=500).contains(&t.len()))
        && secret_mix(t)
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
    let name = fold(name(c));
    let value = fold(v);
    !value.is_empty() && (name.ends_with(&value) || value.ends_with(&name))
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

/// `36947i32`, `0x7fu8`: a number with its type, as Rust writes constants.
fn typed_number(v: &str) -> bool {
    const TYPES: [&str; 14] = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
        "f32", "f64",
    ];
    TYPES.iter().any(|t| {
        v.strip_suffix(t).is_some_and(|n| {
            let digits = n.strip_prefix("0x").unwrap_or(n);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_')
        })
    })
}

/// `REDIS_AUTH=r3d1s…` is a password, `MAIL_AUTH=plain` a mechanism.
fn auth_mechanism(c: &Captures, v: &str) -> bool {
    name(c).to_ascii_lowercase().ends_with("auth")
        && v.chars().all(|c| c.is_ascii_lowercase() || c == '-')
}

/// `v` without the `\n` (or `\\n`) a string in code ends a line with.
fn without_newline_escape(v: &str) -> &str {
    v.trim_end_matches("\\n").trim_end_matches('\\')
}

/// Words of a stand-in value in a URL or prose (`?access_token=token123`,
/// `password is test1234`).
const STAND_IN_WORDS: &[&str] = &[
    "token", "secret", "passw", "test", "dummy", "fake", "sample",
];

/// A value outside config lines (code, tool-call arguments, prose, a URL's
/// query): a literal with a secret's character mix, letters with digits or
/// symbols and some entropy, the way gitleaks' generic-api-key rule and
/// detect-secrets' keyword plugin tell keys from identifiers and words.
fn code_or_prose(c: &Captures) -> Option<Range<usize>> {
    let s = c.name("s")?;
    let (v, quoted) = literal(c);
    // Prose ends a sentence after the value; a prompt's answer ends with
    // its newline (`'secret\n'`).
    let v = if quoted {
        without_newline_escape(v)
    } else {
        v.trim_end_matches(['.', ':'])
    };
    // `AWS::ApiGateway::ApiKey`: a type path, not a secret's name.
    if c.name("pre").is_some_and(|m| m.as_str() == ":") {
        return None;
    }
    if not_a_literal(c, v)
        || v.len() < 6
        || v.len() > 500
        || v.contains(char::is_whitespace)
        || v.starts_with(['/', '.'])
    {
        return None;
    }
    // `tiktoken-rs-0.12.1/src`: a name running into what follows is no
    // assignment, and an unquoted value needs an operator (`passwd HTTP/1.1`
    // is a request line). After a comma, a value is an argument beside the
    // name (`setProperty("X_TOKEN", "…")`) only when quoted and random:
    // `isinstance(self.private_key, X25519PrivateKey)` passes a type and
    // `('password', 'localhost:22')` is a tuple of strings.
    let op = c["op"].trim();
    if c["op"].is_empty() || op.is_empty() && !quoted || op == "," && !quoted {
        return None;
    }
    // Quoted, a value is no name (`"next_token"`), colour or the start of a
    // concatenation (`'username:' + …`).
    if quoted && (word_name(v) || colour(v) || v.ends_with([':', '='])) {
        return None;
    }
    if !quoted || op == "," {
        // Unquoted, a value must look random: letters and digits, no
        // grammar (`1*tchar`), path, identifier, type or typed number
        // (`36947i32`), no stand-in word.
        let lower = v.to_ascii_lowercase();
        let letters_and_digits =
            v.chars().any(|c| c.is_ascii_alphabetic()) && v.chars().any(|c| c.is_ascii_digit());
        if code_like(v)
            || identifier_shaped(v)
            || camel_identifier(v)
            || versioned(v)
            || typed_number(v)
            || v.contains(['*', '!'])
            || !letters_and_digits
            || v.len() < 8
            || STAND_IN_WORDS.iter().any(|w| lower.contains(w))
        {
            return None;
        }
    }
    let start = s.start() + usize::from(quoted);
    secret_mix(v).then(|| start..start + v.len())
}
