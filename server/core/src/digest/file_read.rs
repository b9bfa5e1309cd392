//! File reads: path, size, language and an outline of definitions; or the
//! whole text when it fits; "unchanged since xN" / "changed since xN: +a -b
//! lines" when the path was read before.

use super::draft::Draft;
use super::json;
use super::outline::{self, Language};
use super::PriorRead;
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Claude Code style reads number their lines: `     7\tfn main() {`.
static NUMBERED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\d+\t").unwrap());

pub(crate) fn digest(path: &str, text: &str, prior: Option<&PriorRead>, draft: &mut Draft) {
    let numbered = text.lines().take(3).all(|l| NUMBERED.is_match(l)) && !text.is_empty();
    let source = if numbered {
        strip_numbers(text)
    } else {
        text.to_string()
    };
    let language = Language::from_path(path);
    let lines = source.lines().count();
    let mut headline = format!("{path}: {lines} lines, {} bytes", source.len());
    if let Some(language) = language {
        headline.push_str(&format!(", {}", language.as_str()));
    }
    match prior {
        Some(PriorRead {
            exchange,
            changed_from: None,
        }) => {
            draft.headline(format!("{headline}, unchanged since {exchange}"));
            return;
        }
        Some(PriorRead {
            exchange,
            changed_from: Some(before),
        }) => {
            let change = line_change(before, text);
            headline.push_str(&format!(
                ", changed since {exchange}: +{} -{} lines",
                change.added, change.removed
            ));
            if let Some(first) = change.first_line {
                headline.push_str(&format!(" (first at L{first})"));
            }
        }
        None => {}
    }
    draft.headline(headline);
    if draft.cost(text) <= draft.room() {
        draft.push(text);
        return;
    }
    match language {
        Some(Language::Json) => json::shape(&source, draft),
        Some(language) => outline_lines(language, &source, draft),
        None => {}
    }
    head_lines(&source, draft);
}

fn strip_numbers(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| NUMBERED.find(l).map_or(l, |m| &l[m.end()..]))
        .collect();
    lines.join("\n")
}

/// Definitions, top level first: the outline keeps every top-level item it
/// can, then members, and shows them in file order.
fn outline_lines(language: Language, source: &str, draft: &mut Draft) {
    let definitions = outline::outline(language, source);
    if definitions.is_empty() {
        return;
    }
    let rendered: Vec<String> = definitions
        .iter()
        .map(|d| format!("{}L{} {}", "  ".repeat(d.depth), d.line, d.signature))
        .collect();
    let mut order: Vec<usize> = (0..definitions.len()).collect();
    order.sort_by_key(|&i| (definitions[i].depth, i));
    let budget = draft.room().saturating_sub(16);
    let mut used = 0;
    let mut keep = vec![false; definitions.len()];
    for i in order {
        let cost = draft.cost(&rendered[i]);
        if used + cost > budget {
            break;
        }
        used += cost;
        keep[i] = true;
    }
    let kept = keep.iter().filter(|k| **k).count();
    draft.push(format!(
        "outline ({} of {} definitions):",
        kept,
        definitions.len()
    ));
    for (line, _) in rendered.into_iter().zip(&keep).filter(|(_, k)| **k) {
        draft.push(line);
    }
}

/// The first lines, while room lasts (files without an outline).
fn head_lines(source: &str, draft: &mut Draft) {
    let lines: Vec<String> = source.lines().take(200).map(str::to_string).collect();
    draft.push_while_room(lines, |n| {
        format!("… more lines ({n}+ of the first 200 not shown)")
    });
}

struct LineChange {
    added: usize,
    removed: usize,
    first_line: Option<usize>,
}

/// Lines added and removed: the common head and tail are skipped, the middle
/// is compared as multisets of lines. Linear time, exact for edits in place.
fn line_change(before: &str, after: &str) -> LineChange {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_mid, new_mid) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut counts: HashMap<&str, isize> = HashMap::new();
    for l in old_mid {
        *counts.entry(l).or_default() += 1;
    }
    for l in new_mid {
        *counts.entry(l).or_default() -= 1;
    }
    let removed = counts
        .values()
        .filter(|c| **c > 0)
        .map(|c| *c as usize)
        .sum();
    let added = counts
        .values()
        .filter(|c| **c < 0)
        .map(|c| (-*c) as usize)
        .sum();
    let first_line = (old_mid.len() + new_mid.len() > 0).then_some(head + 1);
    LineChange {
        added,
        removed,
        first_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_change_counts_edits() {
        let cases = [
            ("a\nb\nc", "a\nB\nc", (1, 1, Some(2))),
            ("a\nb", "a\nb\nc\nd", (2, 0, Some(3))),
            ("a\nb\nc", "a\nc", (0, 1, Some(2))),
            ("a", "a", (0, 0, None)),
        ];
        for (before, after, want) in cases {
            let c = line_change(before, after);
            assert_eq!(
                (c.added, c.removed, c.first_line),
                want,
                "{before:?} -> {after:?}"
            );
        }
    }
}
