//! Directory listings (ls, ls -la, tree, find, list-files tools): how many
//! entries, which directories and extensions, then the entries themselves.

use super::draft::Draft;
use std::collections::BTreeMap;

pub(crate) fn digest(label: &str, text: &str, draft: &mut Draft) {
    let entries: Vec<&str> = text
        .lines()
        .map(entry_name)
        .filter(|e| !e.is_empty() && *e != "." && *e != ".." && !e.starts_with("total "))
        .collect();
    let mut extensions: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &entries {
        let name = e.rsplit('/').next().unwrap_or(e);
        let ext = name.rsplit_once('.').map_or("(none)", |(_, x)| x);
        *extensions.entry(ext).or_default() += 1;
    }
    let summary = text
        .lines()
        .rev()
        .find(|l| l.contains("director") && l.contains("file"));
    draft.headline(format!("{label}: {} entries", entries.len()));
    if let Some(summary) = summary {
        draft.push(summary.trim());
    }
    let mut by_count: Vec<(&str, usize)> = extensions.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let kinds: Vec<String> = by_count
        .iter()
        .take(8)
        .map(|(ext, n)| format!(".{ext} {n}"))
        .collect();
    draft.push(format!("by extension: {}", kinds.join(", ")));
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    draft.push_while_room(lines, |n| format!("… {n} more lines"));
}

/// The name in an `ls -l` row or a `tree` line; the line itself otherwise.
fn entry_name(line: &str) -> &str {
    let line = line.trim_end();
    if let Some(pos) = line.rfind("── ") {
        return &line[pos + "── ".len()..];
    }
    let fields: Vec<&str> = line.split_whitespace().collect();
    let is_long = fields.len() >= 9
        && fields[0].len() == 10
        && fields[0].starts_with(['-', 'd', 'l', 'c', 'b', 'p', 's']);
    if is_long {
        return fields[8];
    }
    if line.ends_with("files") || line.ends_with("file") || line.contains(" directories") {
        return "";
    }
    line.trim()
}
