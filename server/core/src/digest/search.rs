//! grep and ripgrep results: matches per file, in order, and the first hits.
//! Understands `path:line:text`, `path:text`, `path:count` (`rg -c`) and the
//! `--heading` layout (a path line, then `line:text` lines).

use super::draft::Draft;
use regex::Regex;
use std::sync::LazyLock;

static WITH_PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([^:\n]+?)[:-](\d+)[:-](.*)$").unwrap());
static COUNT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^([^:\n]+):(\d+)$").unwrap());
static LINE_ONLY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d+)[:-](.*)$").unwrap());

struct FileHits<'a> {
    path: &'a str,
    lines: Vec<u32>,
    /// Hits counted by `rg -c`, which prints no lines.
    counted: usize,
    first: Vec<(u32, &'a str)>,
}

/// First hits shown per file, and overall, while room lasts.
const FIRST_PER_FILE: usize = 2;

pub(crate) fn digest(label: &str, text: &str, draft: &mut Draft) {
    let files = parse(text);
    let total: usize = files.iter().map(|f| f.lines.len() + f.counted).sum();
    let headline = if total == 0 {
        format!("{label}: no matches")
    } else {
        format!(
            "{label}: {} in {}",
            plural(total, "match", "matches"),
            plural(files.len(), "file", "files")
        )
    };
    draft.headline(headline);
    // Per file counts first: they tell where to look.
    let per_file: Vec<String> = files.iter().map(summary).collect();
    let room_for_files = draft.room() * 2 / 3;
    let mut shown = Vec::new();
    let mut used = 0;
    for line in per_file.iter() {
        used += draft.cost(line);
        if used > room_for_files {
            break;
        }
        shown.push(line.clone());
    }
    let hidden = per_file.len() - shown.len();
    for line in shown {
        draft.push(line);
    }
    if hidden > 0 {
        let rest: usize = files[files.len() - hidden..]
            .iter()
            .map(|f| f.lines.len() + f.counted)
            .sum();
        draft.push(format!("… {hidden} more files, {rest} matches"));
    }
    let firsts = files.iter().flat_map(|f| {
        f.first
            .iter()
            .map(move |(n, t)| format!("{}:{n}: {}", f.path, t.trim()))
    });
    let firsts: Vec<String> = firsts.collect();
    draft.push_while_room(firsts, |n| {
        format!("… {n} more first lines; grep the blob for the rest")
    });
}

fn summary(f: &FileHits) -> String {
    if f.lines.is_empty() {
        return format!("{} ({})", f.path, f.counted);
    }
    const LISTED: usize = 8;
    let mut numbers: Vec<String> = f.lines.iter().take(LISTED).map(u32::to_string).collect();
    if f.lines.len() > LISTED {
        numbers.push("…".to_string());
    }
    format!("{} ({}): {}", f.path, f.lines.len(), numbers.join(","))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn parse(text: &str) -> Vec<FileHits<'_>> {
    let mut files: Vec<FileHits> = Vec::new();
    let mut heading: Option<&str> = None;
    for line in text.lines() {
        if line.is_empty() || line == "--" {
            continue;
        }
        let (path, number, hit) =
            if let Some(c) = COUNT.captures(line).filter(|_| heading.is_none()) {
                let f = file(&mut files, c.get(1).unwrap().as_str());
                f.counted += c[2].parse::<usize>().unwrap_or(0);
                continue;
            } else if let (Some(h), Some(c)) = (heading, LINE_ONLY.captures(line)) {
                (h, c[1].parse().unwrap_or(0), c.get(2).unwrap().as_str())
            } else if let Some(c) = WITH_PATH.captures(line) {
                (
                    c.get(1).unwrap().as_str(),
                    c[2].parse().unwrap_or(0),
                    c.get(3).unwrap().as_str(),
                )
            } else if let Some(c) = LINE_ONLY.captures(line) {
                (
                    "(input)",
                    c[1].parse().unwrap_or(0),
                    c.get(2).unwrap().as_str(),
                )
            } else {
                heading = Some(line);
                continue;
            };
        let f = file(&mut files, path);
        f.lines.push(number);
        if f.first.len() < FIRST_PER_FILE {
            f.first.push((number, hit));
        }
    }
    files
}

fn file<'a, 'b>(files: &'b mut Vec<FileHits<'a>>, path: &'a str) -> &'b mut FileHits<'a> {
    match files.iter().position(|f| f.path == path) {
        Some(i) => &mut files[i],
        None => {
            files.push(FileHits {
                path,
                lines: Vec::new(),
                counted: 0,
                first: Vec::new(),
            });
            files.last_mut().unwrap()
        }
    }
}
