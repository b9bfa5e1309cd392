//! Any other output: repeats collapsed with counts, progress lines dropped,
//! head and tail kept, the last lines first in importance (how it ended).

use super::clean;
use super::draft::Draft;
use crate::tokens;

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
    let headline = match last {
        Some(last) => format!("{label}: {} lines, ends: {last}", text.lines().count()),
        None => format!("{label}: empty"),
    };
    draft.headline(headline);
    head_and_tail(&lines, draft);
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
