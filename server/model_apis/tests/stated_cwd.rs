//! `project::stated_working_directory` over fixtures/stated-cwd: one
//! recorded request's system prompt and first user message per assistant
//! (and texts that state none), each with the directory expected.

use std::path::Path;

use ctxproxy_model_apis::project::stated_working_directory;

/// A fixture's sections: `=== NAME` lines, each followed by its text.
fn sections(text: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in text.lines() {
        match (line.strip_prefix("=== "), out.last_mut()) {
            (Some(name), _) => out.push((name, String::new())),
            (None, Some((_, body))) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => panic!("text before the first section: {line:?}"),
        }
    }
    out
}

#[test]
fn each_assistant_s_statement_is_read_and_no_other_text_is() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/stated-cwd");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 7,
        "a fixture per assistant in {}",
        dir.display()
    );
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let sections = sections(&text);
        let section = |name: &str| {
            sections
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, body)| body.as_str())
                .unwrap_or_else(|| panic!("{}: no `=== {name}`", file.display()))
        };
        let expected = match section("expected").trim() {
            "none" => None,
            path => Some(path.to_string()),
        };
        let found = stated_working_directory(section("system"), section("first user"));
        if found != expected {
            wrong.push(format!(
                "{}: {found:?}, expected {expected:?}",
                file.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
