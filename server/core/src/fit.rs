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
/// points until the text fits `cap`, then cuts as a last resort.
pub fn fit_points(
    labels: &[&str],
    mut points: Vec<Point>,
    cap: u32,
    encoding: Encoding,
) -> Counted {
    let render = |points: &[Point]| {
        let mut lines = Vec::new();
        for (s, label) in labels.iter().enumerate() {
            let mut body = String::new();
            for p in points.iter().filter(|p| p.section == s) {
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
    let mut text = render(&points);
    let mut n = tokens::count(encoding, &text);
    while points.len() > 1 && n > cap {
        let lightest = (0..points.len())
            .rev()
            .min_by_key(|&i| points[i].weight)
            .unwrap();
        points.remove(lightest);
        text = render(&points);
        n = tokens::count(encoding, &text);
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
