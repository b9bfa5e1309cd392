//! The sidecar convention of `fixtures/tool-outputs/KIND/NAME.out`: a
//! `NAME.cmd` next to it holds `key: value` lines; `tool:` is the tool's name
//! and `args:` its arguments as one line of JSON. Other lines (`prior:`,
//! notes) are for the readers and tests that know them.

/// The tool name and the arguments JSON of a fixture's `.cmd` text.
pub fn fixture_call(cmd_file_text: &str) -> (Option<String>, Option<String>) {
    let value = |key: &str| {
        cmd_file_text
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    (value("tool:"), value("args:"))
}
