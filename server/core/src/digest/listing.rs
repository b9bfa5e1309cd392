//! Directory listings (ls, ls -la, ls -R, tree, find, list-files tools): how
//! many entries, every directory (or how many were left out), extensions,
//! then the entries themselves.
//!
//! A listing is read into paths first: `tree` lines are joined to their
//! ancestors, `ls -R` entries to their `dir:` header, `ls -l` rows give
//! their name and type. The directories are those the listing shows as
//! such (`d` rows, a trailing `/`, a `tree` line with children) and every
//! parent of a listed path below the listing's root.

use super::draft::Draft;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn digest(label: &str, text: &str, draft: &mut Draft) {
    let mut entries = read_entries(text);
    let dirs = directories(&entries);
    for e in &mut entries {
        e.dir |= dirs.contains(&e.path);
    }
    let mut extensions: BTreeMap<&str, usize> = BTreeMap::new();
    for e in entries.iter().filter(|e| !e.dir) {
        let name = e.path.rsplit('/').next().unwrap_or(&e.path);
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
    directory_lines(&entries, &dirs, draft);
    let mut by_count: Vec<(&str, usize)> = extensions.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let kinds: Vec<String> = by_count
        .iter()
        .take(8)
        .map(|(ext, n)| format!(".{ext} {n}"))
        .collect();
    if !kinds.is_empty() {
        draft.push(format!("by extension: {}", kinds.join(", ")));
    }
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    draft.push_while_room(lines, |n| format!("… {n} more lines"));
}

#[derive(Debug, PartialEq, Eq)]
struct Entry {
    /// The path as the listing gives it, joined to its `tree` ancestors or
    /// `ls -R` header; no trailing `/`.
    path: String,
    /// The listing says this is a directory.
    dir: bool,
}

fn read_entries(text: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    // `tree`: the path and entry of the last line at each depth, the root
    // (`src/sync`, or `.` as an empty path) first.
    let mut ancestors: Vec<(String, Option<usize>)> = Vec::new();
    // `ls -R`: the directory the next names are in.
    let mut section = String::new();
    let is_tree = text.contains("── ");
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with("total ") || is_tree_summary(line) {
            continue;
        }
        if let Some(pos) = line.find("── ") {
            if ancestors.is_empty() {
                ancestors.push((String::new(), None));
            }
            let depth = line[..pos].chars().count() / 4 + 1;
            let name = &line[pos + "── ".len()..];
            // `tree` names a link as `name -> target`.
            let name = name.split(" -> ").next().unwrap_or(name);
            ancestors.truncate(depth);
            let path = match ancestors.last() {
                Some((parent, index)) if ancestors.len() == depth && !parent.is_empty() => {
                    if let Some(index) = index {
                        entries[*index].dir = true;
                    }
                    format!("{parent}/{name}")
                }
                _ => name.to_string(),
            };
            push(&mut entries, &path);
            ancestors.push((path, Some(entries.len() - 1)));
            continue;
        }
        if is_tree && ancestors.is_empty() {
            // The root line of a `tree`.
            let root = line.trim().trim_end_matches('/');
            if root == "." {
                ancestors.push((String::new(), None));
            } else {
                push(&mut entries, root);
                ancestors.push((root.to_string(), Some(entries.len() - 1)));
            }
            continue;
        }
        if let Some(dir) = line.strip_suffix(':').filter(|d| !d.contains(' ')) {
            section = dir.trim_end_matches('/').to_string();
            continue;
        }
        let (name, is_dir) = match long_row(line) {
            Some((name, kind)) => (name, kind == 'd'),
            None => (line.trim(), false),
        };
        if name == "." || name == ".." {
            continue;
        }
        let path = if section.is_empty() || section == "." {
            name.to_string()
        } else {
            format!("{section}/{name}")
        };
        push(&mut entries, &path);
        if is_dir {
            entries.last_mut().unwrap().dir = true;
        }
    }
    entries
}

fn push(entries: &mut Vec<Entry>, path: &str) {
    let path = path.strip_prefix("./").unwrap_or(path);
    let dir = path.ends_with('/');
    entries.push(Entry {
        path: path.trim_end_matches('/').to_string(),
        dir,
    });
}

/// `63 directories, 380 files`.
fn is_tree_summary(line: &str) -> bool {
    let line = line.trim();
    (line.ends_with("files") || line.ends_with("file"))
        && line.split(", ").count() == 2
        && line.starts_with(|c: char| c.is_ascii_digit())
}

/// The name and type character of an `ls -l` row.
fn long_row(line: &str) -> Option<(&str, char)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let is_long = fields.len() >= 9
        && fields[0].len() >= 10
        && fields[0].starts_with(['-', 'd', 'l', 'c', 'b', 'p', 's']);
    if !is_long {
        return None;
    }
    // The name is what follows the eighth field, spaces included.
    let mut rest = line;
    for field in &fields[..8] {
        rest = rest.trim_start().strip_prefix(field)?;
    }
    let name = rest.trim();
    let name = name.split(" -> ").next().unwrap_or(name);
    Some((name, fields[0].chars().next()?))
}

/// Every directory of the listing with the number of files below it: the
/// listing's root first, then one line per directory that has
/// subdirectories, breadth first. Lines that do not fit are counted.
fn directory_lines(entries: &[Entry], dirs: &BTreeSet<String>, draft: &mut Draft) {
    if dirs.is_empty() {
        return;
    }
    let mut files_below: BTreeMap<&str, usize> = BTreeMap::new();
    for e in entries.iter().filter(|e| !e.dir) {
        let mut path = e.path.as_str();
        while let Some((parent, _)) = path.rsplit_once('/') {
            if let Some(d) = dirs.get(parent) {
                *files_below.entry(d.as_str()).or_default() += 1;
            }
            path = parent;
        }
    }
    let below = |d: &str| files_below.get(d).copied().unwrap_or(0);
    let parent_of = |d| parent_in(d, dirs);
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for d in dirs {
        if let Some(parent) = parent_of(d) {
            children.entry(parent).or_default().push(d);
        }
    }
    // Top directories without subdirectories on one line; each directory
    // with subdirectories heads a line of its own, breadth first.
    let leaves: Vec<&str> = dirs
        .iter()
        .map(String::as_str)
        .filter(|d| parent_of(d).is_none() && !children.contains_key(d))
        .collect();
    let mut parents: Vec<&str> = children.keys().copied().collect();
    parents.sort_by_key(|p| (p.matches('/').count(), *p));
    let named = |d: &str, parent: Option<&str>| {
        let name = parent.map_or(d, |p| &d[p.len() + 1..]);
        match below(d) {
            0 => format!("{name}/"),
            n => format!("{name}/ {n}"),
        }
    };
    let mut lines: Vec<(String, usize)> = Vec::new();
    if !leaves.is_empty() {
        let names: Vec<String> = leaves.iter().map(|d| named(d, None)).collect();
        lines.push((names.join(", "), leaves.len()));
    }
    for parent in parents {
        let kids: Vec<String> = children[parent]
            .iter()
            .map(|k| named(k, Some(parent)))
            .collect();
        let top = usize::from(parent_of(parent).is_none());
        lines.push((
            format!("{}: {}", named(parent, None), kids.join(", ")),
            kids.len() + top,
        ));
    }
    draft.push(format!("{} directories (files below each):", dirs.len()));
    const MARKER_TOKENS: u32 = 14;
    let mut left = dirs.len();
    for (i, (line, count)) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        let reserve = if last { 0 } else { MARKER_TOKENS };
        if draft.cost(line) + reserve > draft.room() {
            break;
        }
        // Budgeted here: `finish` must not drop it as optional.
        draft.require(line.clone());
        left -= count;
    }
    if left > 0 {
        draft.require(format!("… {left} more directories below those shown"));
    }
}

/// The directory `dir` is in, when the listing has it.
fn parent_in<'a>(dir: &'a str, dirs: &BTreeSet<String>) -> Option<&'a str> {
    dir.rsplit_once('/')
        .map(|(p, _)| p)
        .filter(|p| dirs.contains(*p))
}

/// The directories the listing shows or implies, without the root above
/// them all (`find src/runtime` lists `src/runtime`; `src` is not in it).
fn directories(entries: &[Entry]) -> BTreeSet<String> {
    let mut dirs: BTreeSet<String> = entries
        .iter()
        .filter(|e| e.dir)
        .map(|e| e.path.clone())
        .collect();
    let root = common_root(entries);
    for e in entries {
        let mut path = e.path.as_str();
        while let Some((parent, _)) = path.rsplit_once('/') {
            if parent.len() < root.len() || parent.is_empty() {
                break;
            }
            dirs.insert(parent.to_string());
            path = parent;
        }
    }
    dirs
}

/// The deepest directory that every entry is in or is (`src/runtime` for
/// `find src/runtime`); empty when the entries share none.
fn common_root(entries: &[Entry]) -> String {
    let mut root: Option<&str> = None;
    for e in entries {
        let path = e.path.as_str();
        root = Some(match root {
            None => path,
            Some(r) => {
                let mut common = "";
                for (i, _) in r.match_indices('/').chain([(r.len(), "")]) {
                    let prefix = &r[..i];
                    if path == prefix || path.starts_with(&format!("{prefix}/")) {
                        common = prefix;
                    } else {
                        break;
                    }
                }
                common
            }
        });
    }
    root.unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs_of(listing: &str) -> Vec<String> {
        directories(&read_entries(listing)).into_iter().collect()
    }

    #[test]
    fn directories_of_each_layout() {
        let cases: [(&str, &[&str]); 6] = [
            // find with -name: directories only as parents, below the root.
            (
                "src/rt/a.rs\nsrc/rt/sched/b.rs\nsrc/rt/sched/mt/c.rs\n",
                &["src/rt", "src/rt/sched", "src/rt/sched/mt"],
            ),
            // tree from `.`: a line with children is a directory.
            (
                ".\n├── a.rs\n├── io\n│   ├── b.rs\n│   └── util\n│       └── c.rs\n└── empty\n\n3 directories, 3 files\n",
                &["io", "io/util"],
            ),
            // ls -la: `d` rows, names with spaces kept.
            (
                "total 8\ndrwxr-xr-x 2 u u 4096 Nov 21 06:01 .\ndrwxr-xr-x 2 u u 4096 Nov 21 06:01 my dir\n-rw-r--r-- 1 u u 10 Nov 21 06:01 a.rs\n",
                &["my dir"],
            ),
            // ls -R: names joined to their `dir:` header.
            (".:\na.rs\nsub\n\n./sub:\nb.rs\n", &["sub"]),
            // list-files tools mark directories with a trailing slash.
            ("src/\nsrc/lib.rs\ndocs/\nREADME.md\n", &["docs", "src"]),
            // plain ls: nothing says which names are directories.
            ("aho-corasick-1.1.5\nanyhow-1.0.104\n", &[]),
        ];
        for (listing, want) in cases {
            assert_eq!(dirs_of(listing), want.to_vec(), "{listing}");
        }
    }
}
