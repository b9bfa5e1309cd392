//! L0, the current context: where the conversation is, built exchange by
//! exchange from extracted facts, optionally overlaid with what the model
//! wrote about itself through housekeeping.
//!
//! Every function returns a new value: the store keeps the context of all
//! closed exchanges and re-advances it over the open one as it grows.

use serde_json::{json, Value};

use crate::call::CallSummary;
use crate::config::LayerCaps;
use crate::exchange::{Counted, KeptMessage, Outcome};
use crate::fit::{fit_points, Point};
use crate::ids::{ExchangeId, ItemId};
use crate::summary::{looks_like_path, ExchangeFacts, ToolClass, Trio};
use crate::text::{clip_chars, one_line};
use crate::tokens::Encoding;

/// Where in its work the conversation is (a tutoring agent's phases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Phase {
    #[default]
    Exploring,
    Understanding,
    Applying,
    Debugging,
    Reviewing,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Exploring => "exploring",
            Phase::Understanding => "understanding",
            Phase::Applying => "applying",
            Phase::Debugging => "debugging",
            Phase::Reviewing => "reviewing",
        }
    }
}

crate::wire_name!(Phase: Exploring, Understanding, Applying, Debugging, Reviewing);

/// How many entries each list keeps; newest first, so the oldest fall off.
const NARRATIVE_MAX: usize = 6;
const LIST_MAX: usize = 8;
/// Story lines L0 shows: the prompt shows the newest exchanges themselves,
/// so a long story repeats them.
const STORY_SHOWN: usize = 3;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentContext {
    /// Exchanges seen so far; the open one included.
    pub turn: u32,
    pub last: Option<ExchangeId>,
    pub phase: Phase,
    pub objective: String,
    /// The exchange whose ask the objective is.
    pub objective_from: Option<ExchangeId>,
    /// One line per recent exchange, newest first.
    pub narrative: Vec<String>,
    pub achievements: Vec<String>,
    pub files: Vec<String>,
    pub functions: Vec<String>,
    pub concepts: Vec<String>,
    pub next_steps: Vec<String>,
    /// Topics the assistant already explained: not to be introduced again.
    pub explained: Vec<String>,
    /// What the model wrote as the current context in housekeeping.
    pub model_note: Option<String>,
}

/// Housekeeping the model wrote about an exchange (`ctx/housekeeping`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Housekeeping {
    pub exchange: ExchangeId,
    pub header: Option<String>,
    pub summary: Option<String>,
    pub key_decisions: Vec<String>,
    pub code_changes: Vec<String>,
    pub open_questions: Vec<String>,
    pub current_context: Option<String>,
}

impl Housekeeping {
    /// The exchange summary the model wrote: its summary, then its decisions,
    /// changes and open questions; `None` when it wrote none of them.
    pub fn summary_text(&self) -> Option<String> {
        let mut parts: Vec<String> = self.summary.iter().cloned().collect();
        for (label, items) in [
            ("Decisions", &self.key_decisions),
            ("Changes", &self.code_changes),
            ("Open", &self.open_questions),
        ] {
            if !items.is_empty() {
                parts.push(format!("{label}: {}.", items.join("; ")));
            }
        }
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("current context is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("current context field `{0}` is missing or has the wrong type")]
    Field(&'static str),
}

/// `items` pushed in front of `list`, each once, at most `max` kept.
fn merged(items: impl IntoIterator<Item = String>, list: &[String], max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items.into_iter().chain(list.iter().cloned()) {
        if !item.is_empty() && !out.iter().any(|o| o.eq_ignore_ascii_case(&item)) && out.len() < max
        {
            out.push(item);
        }
    }
    out
}

fn phase_of(facts: &ExchangeFacts, prev: Phase) -> Phase {
    if facts.outcome == Outcome::Error || facts.actions.iter().any(|a| a.failed == Some(true)) {
        return Phase::Debugging;
    }
    if facts
        .actions
        .iter()
        .any(|a| matches!(a.class, ToolClass::Edit | ToolClass::Act))
    {
        return Phase::Applying;
    }
    let ask = format!(" {} ", facts.ask.to_lowercase());
    let said = |words: &[&str]| words.iter().any(|w| ask.contains(w));
    if said(&[
        " fix", " bug", " error", " fails", " failing", " broken", " crash", " wrong",
    ]) {
        return Phase::Debugging;
    }
    if said(&[
        " review",
        " looks good",
        " lgtm",
        " double-check",
        " verify",
        " is this right",
    ]) {
        return Phase::Reviewing;
    }
    if said(&[
        " why",
        " explain",
        " how does",
        " how do",
        " what is",
        " what are",
        " what does",
        " understand",
    ]) {
        return Phase::Understanding;
    }
    if said(&[
        " add ",
        " implement",
        " create",
        " write",
        " change",
        " update",
        " refactor",
        " rename",
    ]) {
        return Phase::Applying;
    }
    if facts
        .actions
        .iter()
        .any(|a| matches!(a.class, ToolClass::Read | ToolClass::Run))
    {
        return Phase::Exploring;
    }
    prev
}

/// The context after exchange `id` (what it says: `facts`, as recorded:
/// `trio`), from the context before it.
pub fn advance(
    prev: &CurrentContext,
    id: ExchangeId,
    facts: &ExchangeFacts,
    trio: &Trio,
) -> CurrentContext {
    let mut next = prev.clone();
    next.turn = prev.turn + 1;
    next.last = Some(id);
    next.phase = phase_of(facts, prev.phase);
    if !facts.feedback && !facts.ask.is_empty() || prev.objective.is_empty() {
        next.objective = clip_chars(&facts.ask, 200);
        next.objective_from = Some(id);
    }
    next.narrative = merged(
        [format!("{id} {}", trio.header.text)],
        &prev.narrative,
        NARRATIVE_MAX,
    );
    if trio.outcome == Outcome::Completed
        && !facts.actions.iter().all(|a| a.class == ToolClass::Read)
    {
        next.achievements = merged(
            [format!("{id} {}", trio.header.text)],
            &prev.achievements,
            LIST_MAX,
        );
    }
    let edited: Vec<String> = facts
        .edited_files()
        .into_iter()
        .map(str::to_string)
        .collect();
    let (mut files, mut functions, mut concepts) = (edited, Vec::new(), Vec::new());
    for e in &trio.entities {
        // A path, or a directory; not a date such as 12/2028, a formula
        // (`a / max(b)`) or a pattern (`src/**`).
        let directory = e.contains('/')
            && e.chars().any(char::is_alphabetic)
            && e.chars()
                .all(|c| c.is_alphanumeric() || "/._-~".contains(c));
        let bucket = if looks_like_path(e) || directory {
            &mut files
        } else if e.ends_with("()")
            || e.contains("::")
            || e.chars().next().is_some_and(char::is_uppercase) && e.chars().any(char::is_lowercase)
        {
            &mut functions
        } else {
            &mut concepts
        };
        bucket.push(e.clone());
    }
    next.files = merged(files, &prev.files, LIST_MAX);
    next.functions = merged(functions, &prev.functions, LIST_MAX);
    next.concepts = merged(concepts, &prev.concepts, LIST_MAX);
    if !facts.conclusions.is_empty() || !facts.open.is_empty() {
        next.next_steps = facts.open.iter().take(LIST_MAX).cloned().collect();
    }
    next.explained = merged(
        facts.explained.iter().cloned(),
        &prev.explained,
        2 * LIST_MAX,
    );
    next
}

/// The context with the model's own notes on an exchange laid over it.
pub fn apply_housekeeping(prev: &CurrentContext, hk: &Housekeeping) -> CurrentContext {
    let mut next = prev.clone();
    if let Some(note) = hk
        .current_context
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        next.model_note = Some(note.to_string());
    }
    if let Some(header) = &hk.header {
        let tag = format!("{} ", hk.exchange);
        let line = format!("{tag}{}", one_line(header));
        for list in [&mut next.narrative, &mut next.achievements] {
            list.iter_mut()
                .filter(|l| l.starts_with(&tag))
                .for_each(|l| *l = line.clone());
        }
    }
    let done = hk
        .key_decisions
        .iter()
        .chain(&hk.code_changes)
        .map(|d| one_line(d));
    next.achievements = merged(done, &next.achievements, LIST_MAX);
    if !hk.open_questions.is_empty() {
        next.next_steps = hk
            .open_questions
            .iter()
            .map(|q| one_line(q))
            .take(LIST_MAX)
            .collect();
    }
    next
}

/// The exchange a story or achievement line tells of: its leading id.
fn told_of(line: &str) -> Option<ExchangeId> {
    match ItemId::parse(line.split(' ').next()?) {
        Ok(ItemId::Exchange(id)) => Some(id),
        _ => None,
    }
}

/// What the prompt shows in full besides L0: the recent exchanges.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shown<'a> {
    /// The oldest exchange shown in full; every newer one is shown too.
    pub from: Option<ExchangeId>,
    /// Their messages.
    pub messages: &'a [&'a KeptMessage],
}

impl Shown<'_> {
    fn exchange(&self, id: Option<ExchangeId>) -> bool {
        self.from.is_some_and(|from| id.is_some_and(|i| i >= from))
    }

    /// Whether a shown message names `text`: in its content (a tool
    /// result's digest) or a tool call's name or arguments. Looked up in
    /// the stored text, not rendered again, on every assemble.
    fn names(&self, text: &str) -> bool {
        self.messages.iter().any(|m| {
            m.message.content.contains(text)
                || m.message
                    .tool_calls
                    .iter()
                    .any(|c| c.name.contains(text) || c.arguments.contains(text))
        })
    }
}

/// L0 as placed in the prompt: a titled block within `current_context_max`,
/// ending in `"\n"`. It leaves out what the prompt already shows: the
/// objective, story and achievements of the exchanges shown in full, and the
/// files, symbols, topics and next steps their text names. L0 is sent
/// uncached on every turn, so a repeat costs its tokens every time.
///
/// A child session's L0 starts with its lineage (`call`): where it stands
/// in the call tree, its query, its parent's objective and the context it
/// was passed, weighted above everything else.
pub fn render(
    ctx: &CurrentContext,
    caps: &LayerCaps,
    encoding: Encoding,
    shown: Shown,
    call: Option<&CallSummary>,
) -> Counted {
    const LABELS: [&str; 13] = [
        "Call",
        "Query",
        "Parent objective",
        "Call context",
        "Objective",
        "Model notes",
        "Story so far",
        "Done",
        "Active files",
        "Active symbols",
        "Concepts",
        "Already explained (do not re-introduce)",
        "Next",
    ];
    let title = format!(
        "## Current context (turn {}, phase: {})\n",
        ctx.turn,
        ctx.phase.as_str()
    );
    let mut points = Vec::new();
    let mut add = |section: usize, items: &[String], top: u32, step: u32| {
        let unseen = items.iter().filter(|t| !shown.names(t));
        for (i, text) in unseen.enumerate() {
            let weight = top.saturating_sub(step * i as u32);
            points.push(Point {
                section,
                text: text.clone(),
                weight,
            });
        }
    };
    if let Some(c) = call {
        add(0, std::slice::from_ref(&c.call), 110, 0);
        add(1, std::slice::from_ref(&c.query), 105, 0);
        add(2, std::slice::from_ref(&c.parent_objective), 95, 0);
        add(3, std::slice::from_ref(&c.context), 60, 0);
    }
    if !shown.exchange(ctx.objective_from) {
        add(4, std::slice::from_ref(&ctx.objective), 100, 0);
    }
    add(5, ctx.model_note.as_slice(), 99, 0);
    // The story's newest exchanges not shown; "Done" adds older
    // achievements, not the ones the story already tells.
    let story: Vec<String> = ctx
        .narrative
        .iter()
        .filter(|l| !shown.exchange(told_of(l)))
        .take(STORY_SHOWN)
        .cloned()
        .collect();
    // "Done" says they completed.
    let done: Vec<String> = ctx
        .achievements
        .iter()
        .filter(|a| !story.contains(a) && !shown.exchange(told_of(a)))
        .map(|a| a.strip_suffix(" — completed").unwrap_or(a).to_string())
        .collect();
    add(6, &story, 90, 8);
    add(7, &done, 70, 8);
    add(8, &ctx.files, 85, 6);
    add(9, &ctx.functions, 75, 6);
    add(10, &ctx.concepts, 50, 6);
    add(11, &ctx.explained, 80, 5);
    add(12, &ctx.next_steps, 88, 8);
    points.retain(|p| !p.text.is_empty());
    let title_tokens = crate::tokens::count(encoding, &title);
    let body = fit_points(
        &LABELS,
        points,
        caps.current_context_max.saturating_sub(title_tokens + 1),
        encoding,
    );
    if body.text.is_empty() {
        return Counted {
            tokens: title_tokens,
            text: title,
        };
    }
    let text = format!("{title}{}\n", body.text);
    Counted {
        tokens: crate::tokens::count(encoding, &text),
        text,
    }
}

impl CurrentContext {
    /// Compact JSON, for the store to persist.
    pub fn encode(&self) -> String {
        json!({
            "turn": self.turn,
            "last": self.last.map(|x| x.0),
            "phase": self.phase.as_str(),
            "objective": self.objective,
            "objectiveFrom": self.objective_from.map(|x| x.0),
            "narrative": self.narrative,
            "achievements": self.achievements,
            "files": self.files,
            "functions": self.functions,
            "concepts": self.concepts,
            "nextSteps": self.next_steps,
            "explained": self.explained,
            "modelNote": self.model_note,
        })
        .to_string()
    }

    pub fn decode(s: &str) -> Result<CurrentContext, ContextError> {
        let v: Value = serde_json::from_str(s)?;
        let text = |k: &'static str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(ContextError::Field(k))
        };
        let list = |k: &'static str| -> Result<Vec<String>, ContextError> {
            let items = v
                .get(k)
                .and_then(Value::as_array)
                .ok_or(ContextError::Field(k))?;
            items
                .iter()
                .map(|i| i.as_str().map(str::to_string).ok_or(ContextError::Field(k)))
                .collect()
        };
        let number = |k: &'static str| {
            v.get(k)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        Ok(CurrentContext {
            turn: number("turn").ok_or(ContextError::Field("turn"))?,
            last: number("last").map(ExchangeId),
            phase: Phase::parse(&text("phase")?).ok_or(ContextError::Field("phase"))?,
            objective: text("objective")?,
            // Absent in contexts stored before it was kept.
            objective_from: number("objectiveFrom").map(ExchangeId),
            narrative: list("narrative")?,
            achievements: list("achievements")?,
            files: list("files")?,
            functions: list("functions")?,
            concepts: list("concepts")?,
            next_steps: list("nextSteps")?,
            explained: list("explained")?,
            model_note: v
                .get("modelNote")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}
