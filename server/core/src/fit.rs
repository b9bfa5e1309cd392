//! Fitting text under a token cap: labelled key points dropped lightest
//! first, then a cut on a token boundary as a last resort.

use crate::exchange::Counted;
use crate::tokens::{self, Encoding};

/// A key point of a text being fitted: dropped lowest weight first.
pub struct Point {
    pub section: usize,
    pub text: String,
    pub weight: u32,
}

/// Joins points into labelled lines (`Label: a; b`) and drops the lightest
/// points until the text fits `cap`; then puts back, heaviest first, each
/// dropped point that fits in what is left (a long point dropped late
/// leaves room for short ones dropped before it); then cuts as a last resort.
pub fn fit_points(labels: &[&str], points: Vec<Point>, cap: u32, encoding: Encoding) -> Counted {
    let render = |kept: &[bool]| {
        let mut lines = Vec::new();
        for (s, label) in labels.iter().enumerate() {
            let mut body = String::new();
            let in_section = points
                .iter()
                .zip(kept)
                .filter(|(p, &k)| k && p.section == s)
                .map(|(p, _)| p);
            for p in in_section {
                if !body.is_empty() {
                    body.push_str(if body.ends_with(['.', '!', '?']) {
                        " "
                    } else {
                        "; "
                    });
                }
                body.push_str(&p.text);
            }
            if !body.is_empty() {
                lines.push(if label.is_empty() {
                    body
                } else {
                    format!("{label}: {body}")
                });
            }
        }
        lines.join("\n")
    };
    let mut kept = vec![true; points.len()];
    let mut text = render(&kept);
    let mut n = tokens::count(encoding, &text);
    let mut dropped = Vec::new();
    while dropped.len() + 1 < points.len() && n > cap {
        let lightest = (0..points.len())
            .rev()
            .filter(|&i| kept[i])
            .min_by_key(|&i| points[i].weight)
            .unwrap();
        kept[lightest] = false;
        dropped.push(lightest);
        text = render(&kept);
        n = tokens::count(encoding, &text);
    }
    if n <= cap {
        // Dropped lightest first: the heaviest were dropped last.
        for &i in dropped.iter().rev().skip(1) {
            kept[i] = true;
            let longer = render(&kept);
            let m = tokens::count(encoding, &longer);
            if m <= cap {
                (text, n) = (longer, m);
            } else {
                kept[i] = false;
            }
        }
    }
    // Counted once: only a text still over the cap, or one `fit_text` would
    // trim, goes through it (and is counted again).
    if n <= cap && text.trim().len() == text.len() {
        return Counted { text, tokens: n };
    }
    fit_text(&text, cap, encoding)
}

/// `text` within `cap` tokens: whole when it fits, else cut on a token
/// boundary with trailing whitespace removed.
pub fn fit_text(text: &str, cap: u32, encoding: Encoding) -> Counted {
    let text = text.trim();
    let n = tokens::count(encoding, text);
    if n <= cap {
        return Counted {
            text: text.to_string(),
            tokens: n,
        };
    }
    let cut = tokens::truncate(encoding, text, cap).trim_end();
    Counted {
        text: cut.to_string(),
        tokens: tokens::count(encoding, cut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(section: usize, text: &str, weight: u32) -> Point {
        Point {
            section,
            text: text.to_string(),
            weight,
        }
    }

    #[test]
    fn a_short_point_dropped_before_a_long_one_comes_back() {
        let enc = Encoding::O200kBase;
        let long = "word ".repeat(40);
        let points = vec![
            point(0, "the ask", 100),
            point(1, "edited src/flatten-map.ts", 85),
            point(2, long.trim(), 88),
        ];
        let cap = tokens::count(enc, "Ask: the ask\nDid: edited src/flatten-map.ts") + 2;
        let fitted = fit_points(&["Ask", "Did", "Errors"], points, cap, enc);
        assert_eq!(fitted.text, "Ask: the ask\nDid: edited src/flatten-map.ts");
        assert_eq!(fitted.tokens, tokens::count(enc, &fitted.text));
    }

    #[test]
    fn points_that_fit_are_all_kept_in_their_sections() {
        let enc = Encoding::O200kBase;
        let points = vec![point(1, "b", 1), point(0, "a", 2), point(1, "c", 3)];
        let fitted = fit_points(&["A", "B"], points, 100, enc);
        assert_eq!(fitted.text, "A: a\nB: b; c");
    }
}
