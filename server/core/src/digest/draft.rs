//! A digest being written: headline, body lines and footer under a token cap.
//!
//! Lines are either required (an error, a failing test: never dropped) or
//! optional (context that is shown while room is left). Digesters ask for
//! room and shorten required lines themselves; `finish` only drops optional
//! lines, so a digest exceeds the cap only when its required lines do.

use crate::tokens::{self, Encoding};

pub(crate) struct Draft<'f> {
    encoding: Encoding,
    cap: u32,
    footer: &'f str,
    headline: String,
    lines: Vec<(String, bool)>,
    used: u32,
}

/// Room kept for a "+N more" marker line when a list is cut.
const MARKER_TOKENS: u32 = 14;

impl<'f> Draft<'f> {
    pub(crate) fn new(encoding: Encoding, cap: u32, footer: &'f str) -> Draft<'f> {
        let used = tokens::count(encoding, footer) + 1;
        Draft {
            encoding,
            cap,
            footer,
            headline: String::new(),
            lines: Vec::new(),
            used,
        }
    }

    pub(crate) fn headline(&mut self, headline: String) {
        self.used -= self.cost(&self.headline).min(self.used);
        self.used += self.cost(&headline);
        self.headline = headline;
    }

    pub(crate) fn cost(&self, line: &str) -> u32 {
        if line.is_empty() {
            0
        } else {
            tokens::count(self.encoding, line) + 1
        }
    }

    pub(crate) fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens still free under the cap.
    pub(crate) fn room(&self) -> u32 {
        self.cap.saturating_sub(self.used)
    }

    /// Adds an optional line when it fits; says whether it did.
    pub(crate) fn push(&mut self, line: impl Into<String>) -> bool {
        let line = line.into();
        let cost = self.cost(&line);
        if cost > self.room() {
            return false;
        }
        self.used += cost;
        self.lines.push((line, false));
        true
    }

    /// Adds a line that must be shown, whatever the room.
    pub(crate) fn require(&mut self, line: impl Into<String>) {
        let line = line.into();
        self.used += self.cost(&line);
        self.lines.push((line, true));
    }

    /// Adds optional lines in order until one does not fit, then one marker
    /// line made by `more` from the number left out. Returns how many fit.
    pub(crate) fn push_while_room<I>(&mut self, lines: I, more: impl Fn(usize) -> String) -> usize
    where
        I: IntoIterator<Item = String>,
        I::IntoIter: ExactSizeIterator,
    {
        let lines = lines.into_iter();
        let total = lines.len();
        let mut shown = 0;
        for line in lines {
            let last = shown + 1 == total;
            let reserve = if last { 0 } else { MARKER_TOKENS };
            if self.cost(&line) + reserve > self.room() {
                break;
            }
            self.push(line);
            shown += 1;
        }
        if shown < total {
            self.push(more(total - shown));
        }
        shown
    }

    /// Shows `text` whole instead of the lines written so far when it fits
    /// and is no longer: a small output is its own best digest.
    pub(crate) fn prefer_whole(&mut self, text: &str) {
        let written: u32 = self.lines.iter().map(|(l, _)| self.cost(l)).sum();
        let cost = self.cost(text.trim_end());
        if cost <= written {
            self.used = self.used - written + cost;
            self.lines = vec![(text.trim_end().to_string(), true)];
        }
    }

    /// The headline, the whole text and its tokens; optional lines are
    /// dropped from the end while the exact count of the joined text is
    /// over the cap.
    pub(crate) fn finish(mut self) -> (String, String, u32) {
        loop {
            let text = self.join();
            let tokens = tokens::count(self.encoding, &text);
            if tokens <= self.cap {
                return (self.headline, text, tokens);
            }
            match self.lines.iter().rposition(|(_, required)| !required) {
                Some(i) => {
                    self.lines.remove(i);
                }
                None => return (self.headline, text, tokens),
            }
        }
    }

    fn join(&self) -> String {
        let mut text = self.headline.clone();
        for (line, _) in &self.lines {
            text.push('\n');
            text.push_str(line);
        }
        text.push('\n');
        text.push_str(self.footer);
        text
    }
}
