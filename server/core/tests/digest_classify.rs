//! Classification: tool name + arguments + content → kind, table-driven.

use ctxproxy_core::digest::{classify, read_path, ToolOutput};

#[test]
fn classifies_by_tool_arguments_and_content() {
    let cases: &[(Option<&str>, Option<&str>, &str, &str)] = &[
        // File reads of Cline, Continue, OpenHands, Claude Code.
        (
            Some("read_file"),
            Some(r#"{"path":"src/a.rs"}"#),
            "fn a() {}",
            "file",
        ),
        (
            Some("read_file"),
            Some(r#"{"filepath":"a.py"}"#),
            "x = 1",
            "file",
        ),
        (
            Some("Read"),
            Some(r#"{"file_path":"/x/a.ts"}"#),
            "     1\tlet a",
            "file",
        ),
        (
            Some("str_replace_editor"),
            Some(r#"{"command":"view","path":"/x/a.go"}"#),
            "package a",
            "file",
        ),
        (
            Some("str_replace_editor"),
            Some(r#"{"command":"create","path":"/x/a.go"}"#),
            "File created",
            "output",
        ),
        (
            Some("bash"),
            Some(r#"{"command":"cat src/lib.rs"}"#),
            "//! lib",
            "file",
        ),
        // Searches and listings by tool name.
        (
            Some("search_files"),
            Some(r#"{"regex":"fn"}"#),
            "a.rs:1:fn a",
            "search",
        ),
        (Some("Grep"), Some(r#"{"pattern":"fn"}"#), "a.rs", "search"),
        (
            Some("list_files"),
            Some(r#"{"path":"."}"#),
            "a.rs\nb.rs",
            "listing",
        ),
        (Some("LS"), None, "- a/\n  - b.rs", "listing"),
        // Commands, in each assistant's naming.
        (
            Some("execute_command"),
            Some(r#"{"command":"cargo build"}"#),
            "",
            "rust-build",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"cd x && cargo clippy --all-targets"}"#),
            "",
            "rust-build",
        ),
        (
            Some("execute_bash"),
            Some(r#"{"command":"RUST_BACKTRACE=1 cargo test -p a"}"#),
            "running 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed",
            "cargo-test",
        ),
        (
            Some("shell"),
            Some(r#"{"command":["bash","-lc","cargo nextest run"]}"#),
            "     Summary [   0.010s] 1 test run: 1 passed, 0 skipped",
            "cargo-test",
        ),
        (
            Some("run_terminal_command"),
            Some(r#"{"command":"python -m pytest -x"}"#),
            "..\n2 passed in 0.01s",
            "pytest",
        ),
        (
            Some("builtin_run_terminal_command"),
            Some(r#"{"command":"npx vitest run"}"#),
            " Test Files  1 passed (1)\n      Tests  3 passed (3)",
            "js-test",
        ),
        (
            Some("run_command"),
            Some(r#"{"command":"npm test"}"#),
            "Tests:       1 failed, 4 passed, 5 total",
            "js-test",
        ),
        (
            Some("execute_command"),
            Some(r#"{"command":"npx tsc --noEmit"}"#),
            "",
            "tsc",
        ),
        (
            Some("execute_command"),
            Some(r#"{"command":"npx eslint src"}"#),
            "",
            "eslint",
        ),
        (
            Some("execute_command"),
            Some(r#"{"command":"go test ./..."}"#),
            "ok  \texample.com/a\t0.01s",
            "go-test",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"git diff HEAD~1"}"#),
            "",
            "git-diff",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"git status"}"#),
            "",
            "git-status",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"git log -5"}"#),
            "",
            "git-log",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"rg -n foo src"}"#),
            "",
            "search",
        ),
        (Some("Bash"), Some(r#"{"command":"ls -la"}"#), "", "listing"),
        (
            Some("Bash"),
            Some(r#"{"command":"find . -name '*.rs'"}"#),
            "",
            "listing",
        ),
        // A test-running command whose output has no runner's summary ran no
        // tests: it is digested as what it is, and claims no results.
        (
            Some("Bash"),
            Some(r#"{"command":"pip show pytest"}"#),
            "Name: pytest\nVersion: 9.2.0\nSummary: pytest: simple powerful testing with Python\n",
            "output",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"npm view vitest --json"}"#),
            "{\"name\": \"vitest\", \"dist-tags\": {\"latest\": \"3.2.4\"}}",
            "json",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"rg -n 'cargo test' docs  # cargo test"}"#),
            "docs/a.md:3:run cargo test\ndocs/b.md:9:cargo test -p x\n",
            "search",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"cargo test"}"#),
            "error[E0425]: cannot find value `x`\n  --> src/lib.rs:1:1\nerror: could not compile `a`",
            "cargo-test",
        ),
        // Sniffed from the content when the name says nothing.
        (
            None,
            None,
            "error[E0308]: mismatched types\n  --> src/a.rs:1:2\n",
            "rust-build",
        ),
        (
            Some("Bash"),
            Some(r#"{"command":"make"}"#),
            "src/a.rs:3:4: error[E0425]: x\n",
            "rust-build",
        ),
        (
            None,
            None,
            "running 2 tests\ntest a ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored",
            "cargo-test",
        ),
        (
            None,
            None,
            "===== 1 failed, 2 passed in 0.10s =====",
            "pytest",
        ),
        (None, None, "a.ts(1,2): error TS2322: x", "tsc"),
        (None, None, "--- FAIL: TestA (0.00s)\nFAIL\n", "go-test"),
        (None, None, "diff --git a/x b/x\n", "git-diff"),
        (None, None, "{\"a\": [1, 2]}", "json"),
        (None, None, "src/a.rs:1:fn a\nsrc/b.rs:2:fn b\n", "search"),
        (None, None, "hello\nworld", "output"),
    ];
    for (tool, arguments, content, want) in cases {
        let output = ToolOutput {
            tool: *tool,
            arguments: *arguments,
            content,
        };
        assert_eq!(
            classify(&output).as_str(),
            *want,
            "{tool:?} {arguments:?} {content:?}"
        );
    }
}

#[test]
fn read_paths_come_from_each_naming() {
    let cases = [
        ("read_file", r#"{"path":"src/a.rs"}"#, Some("src/a.rs")),
        ("Read", r#"{"file_path":"/x/a.ts"}"#, Some("/x/a.ts")),
        (
            "Bash",
            r#"{"command":"cat Cargo.toml"}"#,
            Some("Cargo.toml"),
        ),
        ("Bash", r#"{"command":"cat a | wc -l"}"#, None),
    ];
    for (tool, arguments, want) in cases {
        let output = ToolOutput {
            tool: Some(tool),
            arguments: Some(arguments),
            content: "",
        };
        assert_eq!(read_path(&output).as_deref(), want, "{tool} {arguments}");
    }
}
