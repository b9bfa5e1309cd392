//! What the keys of a tool call's arguments mean, in one place for the
//! digesters (which call read a file, which ran a command) and the
//! summaries (what a call acted on): the path a read reads, every path an
//! action names, the shell command, and search patterns (which look like
//! file names and name none).

use serde_json::Value;

/// The argument holding the one file a read tool reads.
pub const READ_PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "filepath",
    "target_file",
    "absolute_path",
    "file",
];

/// Arguments naming a path an action touches (a move names two).
pub const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "target_file",
    "absolute_path",
    "file",
    "filename",
    "file_name",
    "dir",
    "directory",
    "source",
    "old_path",
    "destination",
    "new_path",
];

/// Arguments that hold a shell command.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "commandLine", "input"];

/// Arguments that hold what a search looks for: a regex or a query, which
/// may look like a file name (`\.len\(`, `*.rs`) and name none.
pub const PATTERN_KEYS: &[&str] = &[
    "pattern",
    "regex",
    "query",
    "search",
    "search_term",
    "searchTerm",
    "q",
    "glob",
    "include",
    "exclude",
];

/// The shell command of a command-running call's parsed arguments.
pub fn command(args: &Value) -> Option<String> {
    COMMAND_KEYS.iter().find_map(|k| match args.get(*k)? {
        Value::String(s) => Some(s.clone()),
        // OpenAI-style `["bash", "-lc", "cargo test"]`: the script is last.
        Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(|p| p.as_str()).collect();
            match parts.as_slice() {
                [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
                    Some(script.to_string())
                }
                _ => Some(parts.join(" ")),
            }
        }
        _ => None,
    })
}
