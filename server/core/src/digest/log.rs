//! Any other output: repeats collapsed with counts, progress lines dropped,
//! error lines first (every one shown or counted), then head and tail kept,
//! the last lines first in importance (how it ended).

use super::clean;
use super::draft::Draft;
use crate::tokens;
use regex::Regex;
use std::sync::LazyLock;

/// A line that reports an error or failure in free-form output: a leading
/// `error`, `fatal`, `failed`, `panic`, `npm error`, an exception's
/// `NameError:`, an upper-case `ERROR`/`FAILED`/`FATAL`/`ERR!` word (log
/// levels), or `***` (make, compileall).
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i:^\W*(?:error|fatal|failed|failure|panic|traceback)(?-u:\b))|(?-u:\b)\w*(?:Error|Exception):(?:\s|$)|(?-u:\b)(?:ERROR|FATAL|FAILED|ERR!)(?-u:\b)|^npm error(?-u:\b)|\*\*\* ",
    )
    .unwrap()
});

pub(crate) fn digest(label: &str, text: &str, draft: &mut Draft) {
    let collapsed = clean::collapse_repeats(
        text.lines()
            .filter(|l| !l.trim().is_empty() && !is_progress(l)),
    );
    let lines: Vec<String> = collapsed
        .iter()
        .map(|(l, n)| clean::with_count(l, *n))
        .collect();
    let last = lines
        .last()
        .map(|l| tokens::truncate(draft.encoding(), l.trim(), 24).to_string());
    let errors: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| ERROR_LINE.is_match(l))
        .map(|(i, l)| (i + 1, l.trim()))
        .collect();
    let errors_said = if errors.is_empty() {
        String::new()
    } else {
        format!(
            ", {}",
            super::diagnostics::plural(errors.len(), "error line")
        )
    };
    let headline = match last {
        Some(last) => format!(
            "{label}: {} lines{errors_said}, ends: {last}",
            text.lines().count()
        ),
        None => format!("{label}: empty"),
    };
    draft.headline(headline);
    error_lines(&errors, draft);
    head_and_tail(&lines, draft);
}

/// Error lines with their line numbers, up to half the room; the rest
/// counted, so the model knows to grep the blob for them.
fn error_lines(errors: &[(usize, &str)], draft: &mut Draft) {
    let encoding = draft.encoding();
    let room = draft.room() / 2;
    let mut used = 0;
    let mut shown = 0;
    for (line, text) in errors {
        let entry = format!("L{line}: {}", tokens::truncate(encoding, text, 40));
        let last = shown + 1 == errors.len();
        let reserve = if last { 0 } else { 16 };
        let cost = draft.cost(&entry);
        if used + cost + reserve > room {
            break;
        }
        used += cost;
        draft.require(entry);
        shown += 1;
    }
    if shown < errors.len() {
        draft.require(format!(
            "… {} more error lines (grep the blob for them)",
            errors.len() - shown
        ));
    }
}

/// Bars and spinners: lines mostly made of bar characters.
fn is_progress(line: &str) -> bool {
    let bar = line
        .chars()
        .filter(|c| matches!(c, '━' | '─' | '█' | '▉'..='▏' | '░' | '▒' | '#' | '='))
        .count();
    bar >= 10 && bar * 2 >= line.chars().count()
}

/// Head and tail lines alternately, each cut to 60 tokens, until room ends.
fn head_and_tail(lines: &[String], draft: &mut Draft) {
    let encoding = draft.encoding();
    let cut: Vec<&str> = lines
        .iter()
        .map(|l| tokens::truncate(encoding, l, 60))
        .collect();
    let (mut i, mut j) = (0usize, cut.len());
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    let mut room = draft.room().saturating_sub(12);
    while i < j {
        let take_head = head.len() <= tail.len();
        let line = if take_head { cut[i] } else { cut[j - 1] };
        let cost = draft.cost(line);
        if cost > room {
            break;
        }
        room -= cost;
        if take_head {
            head.push(line);
            i += 1;
        } else {
            tail.push(line);
            j -= 1;
        }
    }
    for line in head {
        draft.push(line);
    }
    if i < j {
        draft.push(format!("… {} lines omitted …", j - i));
    }
    for line in tail.into_iter().rev() {
        draft.push(line);
    }
}
