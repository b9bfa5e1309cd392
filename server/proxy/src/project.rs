//! Which project a model request belongs to, stored as its session's
//! workspace: the `x-ctxproxy-project` header, else the proxy's own
//! (`--project`, or the directory `ctxproxy run` was started in), else the
//! working directory the assistant states in its opening messages, else
//! none (an empty workspace).

use std::path::Path;

use axum::http::HeaderMap;
use ctxproxy_core::message::{Message, Role};
use ctxproxy_model_apis::project::{normalise, stated_working_directory, PROJECT_MAX};

pub(crate) const HEADER: &str = "x-ctxproxy-project";

/// An `x-ctxproxy-project` value that cannot be a project.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum BadHeader {
    #[error("x-ctxproxy-project: not visible ASCII text")]
    NotText,
    #[error("x-ctxproxy-project: empty; name the project or leave the header out")]
    Empty,
    #[error("x-ctxproxy-project: {0} bytes, at most {PROJECT_MAX}")]
    TooLong(usize),
}

/// A directory given as the proxy's project that cannot be one.
#[derive(Debug, thiserror::Error)]
pub enum BadDirectory {
    #[error("{0}: cannot make it absolute")]
    Absolute(String, #[source] std::io::Error),
    #[error("{0}: not a path a project can be (UTF-8, at most {PROJECT_MAX} bytes)")]
    Unusable(String),
}

/// `dir` as a project: the directory it names, as the system names its
/// current directory (symbolic links and `..` resolved, as the working
/// directory an assistant states is: its process's `getcwd`), or, for one
/// that does not exist, made absolute against the current directory; its
/// trailing separators removed (`ctxproxy proxy --project`, `ctxproxy
/// run`'s directory, `ctxproxy sessions --project`).
pub fn directory_project(dir: &Path) -> Result<String, BadDirectory> {
    let shown = || dir.display().to_string();
    let absolute = std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .map_err(|e| BadDirectory::Absolute(shown(), e))?;
    absolute
        .to_str()
        .and_then(normalise)
        .ok_or_else(|| BadDirectory::Unusable(shown()))
}

/// The project of a request with these headers, system prompt and
/// history; `proxy_project` is the proxy's own.
pub(crate) fn request_project(
    headers: &HeaderMap,
    proxy_project: Option<&str>,
    system: &str,
    messages: &[Message],
) -> Result<String, BadHeader> {
    if let Some(value) = headers.get(HEADER) {
        // Taken as given: a name the client chose, a path or not.
        let value = value.to_str().map_err(|_| BadHeader::NotText)?.trim();
        return match value.len() {
            0 => Err(BadHeader::Empty),
            n if n > PROJECT_MAX => Err(BadHeader::TooLong(n)),
            _ => Ok(value.to_string()),
        };
    }
    if let Some(project) = proxy_project {
        return Ok(project.to_string());
    }
    // Every user message before the first answer: Claude Code may send its
    // environment notes as a message of their own after the task.
    let opening = messages
        .iter()
        .take_while(|m| m.role != Role::Assistant)
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str());
    Ok(opening
        .chain([""])
        .find_map(|first_user| stated_working_directory(system, first_user))
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn user(text: &str) -> Message {
        Message::new(Role::User, text)
    }

    #[test]
    fn the_header_then_the_proxy_s_then_the_stated_then_none() {
        let env = "<env>\nWorking directory: /home/me/stated/\n</env>";
        let mut named = HeaderMap::new();
        named.insert(HEADER, HeaderValue::from_static("  billing service "));
        let none = HeaderMap::new();
        let history = [user("Fix it.")];
        let cases: &[(&HeaderMap, Option<&str>, &str, &str)] = &[
            (&named, Some("/srv/run"), env, "billing service"),
            (&none, Some("/srv/run"), env, "/srv/run"),
            (&none, None, env, "/home/me/stated"),
            (&none, None, "You are helpful.", ""),
        ];
        for (headers, proxy, system, expected) in cases {
            let got = request_project(headers, *proxy, system, &history).unwrap();
            assert_eq!(got, *expected, "{headers:?} {proxy:?} {system:?}");
        }
    }

    #[test]
    fn a_statement_in_any_message_before_the_first_answer_counts() {
        let notes = "# Environment\n - Primary working directory: /work/demo";
        let history = [
            user("Say hello."),
            user(notes),
            Message::new(Role::Assistant, "Hello."),
        ];
        let got = request_project(&HeaderMap::new(), None, "", &history).unwrap();
        assert_eq!(got, "/work/demo");
        let later = [
            user("Say hello."),
            Message::new(Role::Assistant, "Hello."),
            user(notes),
        ];
        let got = request_project(&HeaderMap::new(), None, "", &later).unwrap();
        assert_eq!(
            got, "",
            "a statement after an answer is the conversation's, not the opening"
        );
    }

    #[test]
    fn a_directory_is_named_as_the_system_names_it() {
        let root = std::env::temp_dir().join(format!("ctxproxy-project-{}", std::process::id()));
        let app = root.join("app");
        std::fs::create_dir_all(&app).unwrap();
        let canonical = std::fs::canonicalize(&app).unwrap();
        for given in [app.clone(), app.join(""), root.join("app/../app")] {
            let got = directory_project(&given).unwrap();
            assert_eq!(Path::new(&got), canonical, "{}", given.display());
        }
        let missing = directory_project(&root.join("missing/")).unwrap();
        assert_eq!(
            Path::new(&missing),
            root.join("missing"),
            "kept as given, absolute"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_header_that_cannot_be_a_project_is_refused() {
        let long = "p".repeat(PROJECT_MAX + 1);
        let cases: &[(HeaderValue, BadHeader)] = &[
            (HeaderValue::from_static("   "), BadHeader::Empty),
            (
                HeaderValue::from_str(&long).unwrap(),
                BadHeader::TooLong(long.len()),
            ),
            (
                HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
                BadHeader::NotText,
            ),
        ];
        for (value, expected) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(HEADER, value.clone());
            assert_eq!(
                request_project(&headers, None, "", &[]).unwrap_err(),
                *expected
            );
        }
    }
}
