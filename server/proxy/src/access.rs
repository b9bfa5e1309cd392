//! Who may use the proxy, and whose their sessions are: anyone who reaches
//! it (loopback only), whoever sends the one `--token`, or each person on
//! a `--tokens` list with a token of their own, whose tenant is then their
//! name (without a list, a client's tenant is derived from its API key:
//! `Service::tenant_of`).

use std::path::Path;

use thiserror::Error;

/// The header a client sends its ctxproxy token in.
pub const TOKEN_HEADER: &str = "x-ctxproxy-token";

#[derive(Clone, Debug, Default)]
pub enum Access {
    /// Anyone who reaches the proxy.
    #[default]
    Open,
    /// Whoever sends this token (`--token`).
    Token(String),
    /// Each person with a token of their own (`--tokens FILE`).
    People(Vec<Person>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// Their tenant.
    pub name: String,
    pub token: String,
}

/// Who a request comes from, once admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted<'a> {
    /// Anyone with access: the tenant is the client's API key's.
    Anyone,
    /// A person on the `--tokens` list: the tenant is their name.
    Person(&'a str),
}

impl Admitted<'_> {
    /// The tenant whose sessions a person may see; `None`: every tenant's
    /// (the proxy's own operator, or a proxy without a list).
    pub fn tenant(self) -> Option<String> {
        match self {
            Admitted::Anyone => None,
            Admitted::Person(name) => Some(name.to_string()),
        }
    }
}

#[derive(Debug, Error)]
pub enum TokensError {
    #[error("--tokens {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--tokens {path}:{line}: {why}")]
    Line {
        path: String,
        line: usize,
        why: String,
    },
    #[error("--tokens {path}: no `name token` line: nobody could use the proxy")]
    Empty { path: String },
}

impl Access {
    /// Whether a request that sent `given` as its token may be served, and
    /// as whom.
    pub fn admit(&self, given: Option<&[u8]>) -> Option<Admitted<'_>> {
        match self {
            Access::Open => Some(Admitted::Anyone),
            Access::Token(t) => given
                .is_some_and(|g| g == t.as_bytes())
                .then_some(Admitted::Anyone),
            Access::People(people) => people
                .iter()
                .find(|p| given.is_some_and(|g| g == p.token.as_bytes()))
                .map(|p| Admitted::Person(&p.name)),
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self, Access::Open)
    }

    /// `--tokens FILE`: one `name token` per line; blank lines and lines
    /// starting with `#` are skipped.
    pub fn read_tokens(path: &Path) -> Result<Access, TokensError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TokensError::Read {
            path: shown.clone(),
            source,
        })?;
        Access::parse_tokens(&text, &shown)
    }

    fn parse_tokens(text: &str, path: &str) -> Result<Access, TokensError> {
        let mut people: Vec<Person> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: String| TokensError::Line {
                path: path.to_string(),
                line: i + 1,
                why,
            };
            let mut words = line.split_whitespace();
            let (Some(name), Some(token), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad("expected `name token`, two words".into()));
            };
            check_name(name).map_err(bad)?;
            if token.len() < MIN_TOKEN_LEN {
                return Err(bad(format!(
                    "{name}'s token is {} characters: at least {MIN_TOKEN_LEN}",
                    token.len()
                )));
            }
            if people.iter().any(|p| p.name == name) {
                return Err(bad(format!("{name} is listed twice")));
            }
            if let Some(p) = people.iter().find(|p| p.token == token) {
                return Err(bad(format!("{name} has the token {} has", p.name)));
            }
            people.push(Person {
                name: name.to_string(),
                token: token.to_string(),
            });
        }
        if people.is_empty() {
            return Err(TokensError::Empty {
                path: path.to_string(),
            });
        }
        Ok(Access::People(people))
    }
}

/// A token shorter than this is guessable.
const MIN_TOKEN_LEN: usize = 16;

/// A name is a tenant as stored and listed (`ctxproxy sessions --tenant`):
/// letters, digits, `.`, `_`, `-` and `@`, not starting as the tenants
/// derived from API keys do (`t-`).
fn check_name(name: &str) -> Result<(), String> {
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(format!(
            "name {name:?}: use letters, digits, `.`, `_`, `-` and `@`"
        ));
    }
    if name.starts_with("t-") {
        return Err(format!(
            "name {name:?}: `t-` starts the tenants derived from API keys"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Access, String> {
        Access::parse_tokens(text, "team.tokens").map_err(|e| e.to_string())
    }

    #[test]
    fn a_tokens_file_names_each_person_and_admits_them_as_their_tenant() {
        let access = parsed(
            "# the team\nana  ana-0123456789abcdef\n\nbo@example.org bo-0123456789abcdef0\n",
        )
        .unwrap();
        assert_eq!(
            access.admit(Some(b"bo-0123456789abcdef0")),
            Some(Admitted::Person("bo@example.org"))
        );
        assert_eq!(
            access
                .admit(Some(b"ana-0123456789abcdef"))
                .unwrap()
                .tenant(),
            Some("ana".to_string())
        );
        assert_eq!(access.admit(Some(b"ana-0123456789abcde")), None);
        assert_eq!(access.admit(None), None);
    }

    #[test]
    fn a_bad_tokens_file_is_refused_naming_the_line() {
        let cases = [
            ("ana\n", "team.tokens:1: expected `name token`, two words"),
            (
                "ana a b\n",
                "team.tokens:1: expected `name token`, two words",
            ),
            (
                "ana short\n",
                "team.tokens:1: ana's token is 5 characters: at least 16",
            ),
            (
                "\nt-ana 0123456789abcdef\n",
                "team.tokens:2: name \"t-ana\": `t-` starts",
            ),
            (
                "ana/x 0123456789abcdef\n",
                "team.tokens:1: name \"ana/x\": use letters",
            ),
            (
                "ana 0123456789abcdef\nana 0123456789abcdeg\n",
                "team.tokens:2: ana is listed twice",
            ),
            (
                "ana 0123456789abcdef\nbo 0123456789abcdef\n",
                "team.tokens:2: bo has the token ana has",
            ),
            ("# nobody\n", "team.tokens: no `name token` line"),
        ];
        for (text, expected) in cases {
            let error = parsed(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn one_token_admits_anyone_who_sends_it_and_no_token_admits_everyone() {
        let token = Access::Token("shared-0123456789".into());
        assert_eq!(
            token.admit(Some(b"shared-0123456789")),
            Some(Admitted::Anyone)
        );
        assert_eq!(token.admit(Some(b"other")), None);
        assert_eq!(Access::Open.admit(None), Some(Admitted::Anyone));
    }
}
