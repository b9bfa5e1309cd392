//! File reads: path, size, language and an outline of definitions; or the
//! whole text when it fits; "unchanged since xN" / "changed since xN: +a -b
//! lines" when the path was read before.

use super::draft::Draft;
use super::json;
use super::outline::{self, Language};
use super::PriorRead;
use regex::Regex;
use std::collections::HashMap;
use std::ops::Range;
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
/// can, then members, and shows them in file order. What is left out is
/// never silent: each run of omitted definitions is a marker line at its
/// place, naming them when room allows and counting them otherwise.
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
    let line_costs: Vec<u32> = rendered.iter().map(|l| draft.cost(l)).collect();
    // Names of the members left out are worth more than the signatures of
    // a few more members, not more than top-level signatures: omitted runs
    // are planned as named markers when that keeps every top-level item the
    // counted plan keeps, otherwise as counted ones (upgraded below while
    // room is left).
    let name_costs: Vec<u32> = definitions
        .iter()
        .map(|d| draft.cost(outline::name(&d.signature)))
        .collect();
    let named =
        |run: &Range<usize>| NAMED_MARKER_TOKENS + name_costs[run.clone()].iter().sum::<u32>();
    let counted = select(&order, &line_costs, budget, |_| COUNTED_MARKER_TOKENS);
    let by_name = select(&order, &line_costs, budget, named);
    let keeps_top_level =
        (0..definitions.len()).all(|i| definitions[i].depth > 0 || by_name[i] || !counted[i]);
    let keep = if keeps_top_level { by_name } else { counted };
    let used: u32 = line_costs
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c)
        .sum();
    let runs = omitted_runs(&keep);
    let mut markers: Vec<String> = runs
        .iter()
        .map(|run| counted_marker(&definitions[run.clone()]))
        .collect();
    // Room left after the counted markers buys names, run by run.
    let mut spare =
        budget.saturating_sub(used + markers.iter().map(|m| draft.cost(m)).sum::<u32>());
    for (marker, run) in markers.iter_mut().zip(&runs) {
        let named = named_marker(&definitions[run.clone()]);
        let extra = draft.cost(&named).saturating_sub(draft.cost(marker));
        if extra <= spare {
            spare -= extra;
            *marker = named;
        }
    }
    let kept = keep.iter().filter(|k| **k).count();
    draft.push(format!(
        "outline ({} of {} definitions):",
        kept,
        definitions.len()
    ));
    let mut markers = runs.iter().map(|r| r.start).zip(markers).peekable();
    for (i, line) in rendered.into_iter().enumerate() {
        if let Some((_, marker)) = markers.next_if(|(start, _)| *start == i) {
            draft.require(marker);
        }
        if keep[i] {
            // Budgeted with the markers: `finish` must not drop it unsaid.
            draft.require(line);
        }
    }
}

/// Tokens a counted marker line may take: `  … 12 more (L1170–L1375)`.
const COUNTED_MARKER_TOKENS: u32 = 16;
/// Tokens of a named marker line besides its names: `  … 12 more from L1170: `.
const NAMED_MARKER_TOKENS: u32 = 14;

/// Which definitions to show: in `order` while their lines and the markers
/// of what is left out (`marker` tokens per omitted run) fit `budget`.
fn select(
    order: &[usize],
    line_costs: &[u32],
    budget: u32,
    marker: impl Fn(&Range<usize>) -> u32,
) -> Vec<bool> {
    let mut keep = vec![false; line_costs.len()];
    let mut used = 0;
    for &i in order {
        keep[i] = true;
        let markers: u32 = omitted_runs(&keep).iter().map(&marker).sum();
        if used + line_costs[i] + markers > budget {
            keep[i] = false;
            break;
        }
        used += line_costs[i];
    }
    keep
}

/// The index ranges of definitions left out, each a run in file order.
fn omitted_runs(keep: &[bool]) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, k) in keep.iter().enumerate() {
        match (k, start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                runs.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push(s..keep.len());
    }
    runs
}

fn marker_indent(run: &[outline::Definition]) -> String {
    let depth = run.iter().map(|d| d.depth).min().unwrap_or(0);
    "  ".repeat(depth)
}

/// `… 7 more (L1170–L1375)`.
fn counted_marker(run: &[outline::Definition]) -> String {
    let first = run[0].line;
    let last = run[run.len() - 1].line;
    let lines = if first == last {
        format!("L{first}")
    } else {
        format!("L{first}–L{last}")
    };
    format!("{}… {} more ({lines})", marker_indent(run), run.len())
}

/// `… 7 more from L1170: loadFormatter, calculateConfigForFile, …`.
fn named_marker(run: &[outline::Definition]) -> String {
    let names: Vec<&str> = run.iter().map(|d| outline::name(&d.signature)).collect();
    format!(
        "{}… {} more from L{}: {}",
        marker_indent(run),
        run.len(),
        run[0].line,
        names.join(", ")
    )
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
