//! git diff / show, git status and git log.

use super::draft::Draft;

struct FileDiff<'a> {
    path: &'a str,
    added: usize,
    removed: usize,
    hunks: Vec<&'a str>,
}

/// Files with their `+a -b` counts first, then hunk headers while room lasts.
pub(crate) fn diff(label: &str, text: &str, draft: &mut Draft) {
    let mut files: Vec<FileDiff> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest.rsplit_once(" b/").map_or(rest, |(_, b)| b);
            files.push(FileDiff {
                path,
                added: 0,
                removed: 0,
                hunks: Vec::new(),
            });
        } else if let Some(f) = files.last_mut() {
            if line.starts_with("@@") {
                f.hunks.push(line);
            } else if line.starts_with('+') && !line.starts_with("+++") {
                f.added += 1;
            } else if line.starts_with('-') && !line.starts_with("---") {
                f.removed += 1;
            }
        }
    }
    if files.is_empty() {
        // `git diff --stat` and other summaries are short text.
        return super::log::digest(label, text, draft);
    }
    let (added, removed) = files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    draft.headline(format!(
        "{label}: {} files changed, +{added} -{removed}",
        files.len()
    ));
    let per_file: Vec<String> = files
        .iter()
        .map(|f| {
            format!(
                "{} +{} -{} ({} hunks)",
                f.path,
                f.added,
                f.removed,
                f.hunks.len()
            )
        })
        .collect();
    draft.push_while_room(per_file, |n| format!("… {n} more files"));
    let hunks: Vec<String> = files
        .iter()
        .flat_map(|f| f.hunks.iter().map(move |h| format!("{} {h}", f.path)))
        .collect();
    draft.push_while_room(hunks, |n| format!("… {n} more hunks"));
}

pub(crate) fn status(label: &str, text: &str, draft: &mut Draft) {
    let branch = text
        .lines()
        .find_map(|l| l.strip_prefix("On branch "))
        .map(str::to_string);
    let entries: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('\t') || is_short_status(l))
        .map(|l| l.trim().to_string())
        .collect();
    let branch = branch.map(|b| format!(" on {b}")).unwrap_or_default();
    let clean = text.contains("nothing to commit");
    let outcome = if clean && entries.is_empty() {
        "clean".to_string()
    } else {
        format!("{} paths changed", entries.len())
    };
    draft.headline(format!("{label}{branch}: {outcome}"));
    draft.push_while_room(entries, |n| format!("… {n} more paths"));
}

/// `git status --short`: two status letters, a space, a path.
fn is_short_status(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 3 && b[2] == b' ' && b[..2].iter().all(|c| b"MADRCU?! ".contains(c))
}

/// One line per commit: short hash and subject, newest first.
pub(crate) fn log(label: &str, text: &str, draft: &mut Draft) {
    let mut commits: Vec<String> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(hash) = line.strip_prefix("commit ") {
            let short: String = hash.chars().take(10).collect();
            // The subject is the first indented line after the header.
            let subject = lines
                .by_ref()
                .find(|l| l.starts_with("    "))
                .map(str::trim)
                .unwrap_or("");
            commits.push(format!("{short} {subject}"));
        }
    }
    if commits.is_empty() {
        // `--oneline` is already one line per commit.
        commits = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
    }
    draft.headline(format!("{label}: {} commits", commits.len()));
    draft.push_while_room(commits, |n| format!("… {n} older commits"));
}
