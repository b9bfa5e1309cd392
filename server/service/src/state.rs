//! The state envelope (the "bounded, typed state surface" recursive calls need):
//! the call a prompt serves (session, depth, iteration, parent, tools,
//! budget) and the current context (L0) as fields, capped as L0 is; and
//! when one differs from the previous prompt's enough to tell observers.

use ctxproxy_core::context::CurrentContext;
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::SessionView;

use crate::api::{CallBudget, CallState, ContextFields, StateEnvelope};

/// What a prompt's envelope is made of besides the view.
pub struct Prompt<'a> {
    pub iteration: u32,
    pub max_depth: u32,
    pub tools: &'a [&'a str],
    pub budget: u32,
    pub used: u32,
    /// `layers.currentContextMax`: the cap of `context`'s JSON, in tokens.
    pub cap: u32,
    pub encoding: Encoding,
}

pub fn envelope(view: &SessionView, prompt: &Prompt) -> StateEnvelope {
    let (context, dropped) = capped(fields(&view.current_context), prompt.cap, prompt.encoding);
    StateEnvelope {
        call: CallState {
            session_id: view.session_id.clone(),
            depth: view.depth,
            max_depth: prompt.max_depth,
            iteration: prompt.iteration,
            parent_session_id: view.call.as_ref().map(|c| c.parent_session.clone()),
            tools: prompt.tools.iter().map(|t| t.to_string()).collect(),
            budget: CallBudget {
                total: prompt.budget,
                used: prompt.used,
            },
        },
        context,
        dropped,
    }
}

fn fields(ctx: &CurrentContext) -> ContextFields {
    ContextFields {
        turn: ctx.turn,
        phase: ctx.phase,
        objective: ctx.objective.clone(),
        model_note: ctx.model_note.clone(),
        story: ctx.narrative.clone(),
        done: ctx.achievements.clone(),
        files: ctx.files.clone(),
        symbols: ctx.functions.clone(),
        concepts: ctx.concepts.clone(),
        explained: ctx.explained.clone(),
        next: ctx.next_steps.clone(),
    }
}

/// `context` within `cap` tokens of compact JSON, and how many items were
/// left out: list items go from the end (the oldest), the least useful
/// list first (story, which L0 and the exchanges themselves tell; concepts;
/// done; explained; symbols; files; next steps); then the model's note;
/// then the objective is cut. The turn and phase always stay.
///
/// The JSON is counted again only after enough items are left out to
/// cover the excess (each item's tokens and one for its quotes and comma),
/// so a long context costs a few counts, not one per item.
fn capped(mut c: ContextFields, cap: u32, encoding: Encoding) -> (ContextFields, u32) {
    let cost = |c: &ContextFields| {
        tokens::count(
            encoding,
            &serde_json::to_string(c).expect("context fields serialise"),
        )
    };
    let mut dropped = 0;
    loop {
        let over = cost(&c).saturating_sub(cap);
        if over == 0 {
            break;
        }
        let mut freed = 0;
        while freed < over {
            let Some(item) = least_useful(&mut c) else {
                break;
            };
            freed += tokens::count(encoding, &item) + 1;
            dropped += 1;
        }
        if freed > 0 {
            continue;
        }
        if c.model_note.take().is_some() {
            dropped += 1;
            continue;
        }
        if c.objective.is_empty() {
            break;
        }
        let keep = tokens::count(encoding, &c.objective).saturating_sub(over);
        c.objective = tokens::truncate(encoding, &c.objective, keep).to_string();
    }
    (c, dropped)
}

/// Takes the last item of the least useful list that has one.
fn least_useful(c: &mut ContextFields) -> Option<String> {
    [
        &mut c.story,
        &mut c.concepts,
        &mut c.done,
        &mut c.explained,
        &mut c.symbols,
        &mut c.files,
        &mut c.next,
    ]
    .into_iter()
    .find(|l| !l.is_empty())?
    .pop()
}

/// Whether `next` tells an observer something `previous` did not. The
/// iteration and the budget used change with every prompt, the turn and
/// the story with every exchange: they are left out, so that
/// `stateChanged` marks a change of what the call is or knows (its
/// objective, phase, files, symbols, decisions, next steps, tools, budget,
/// depth), not every turn.
pub fn differs(previous: &StateEnvelope, next: &StateEnvelope) -> bool {
    fn steady(s: &StateEnvelope) -> StateEnvelope {
        let mut s = s.clone();
        s.call.iteration = 0;
        s.call.budget.used = 0;
        s.context.turn = 0;
        s.context.story.clear();
        s.dropped = 0;
        s
    }
    steady(previous) != steady(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxproxy_core::context::Phase;

    fn context() -> ContextFields {
        ContextFields {
            turn: 4,
            phase: Phase::Debugging,
            objective: "find which functions of textwrap.py raise ValueError".into(),
            model_note: Some("width must be positive".into()),
            story: (1..=6)
                .map(|i| format!("x{i} step {i} of the search"))
                .collect(),
            done: vec!["x2 listed the raise statements".into()],
            files: vec!["textwrap.py".into(), "shlex.py".into()],
            symbols: vec!["TextWrapper._wrap_chunks()".into()],
            concepts: vec!["ValueError".into(), "placeholder".into()],
            explained: vec![],
            next: vec!["ask c1 about the textwrap part".into()],
        }
    }

    #[test]
    fn the_cap_drops_story_first_and_keeps_the_json_within_it() {
        let enc = Encoding::O200kBase;
        let (whole, none) = capped(context(), 10_000, enc);
        assert_eq!((whole, none), (context(), 0));
        let (c, dropped) = capped(context(), 100, enc);
        let json = serde_json::to_string(&c).unwrap();
        assert!(tokens::count(enc, &json) <= 100, "{json}");
        assert!(dropped > 0);
        assert!(c.story.len() < 6);
        assert_eq!(c.next, context().next, "next steps go last");
        // Every list emptied, the note gone, the objective cut: the fields'
        // names, the turn and the phase (35 tokens here) are the floor.
        let (tiny, _) = capped(context(), 40, enc);
        assert!(tiny.story.is_empty() && tiny.next.is_empty() && tiny.model_note.is_none());
        assert!(!tiny.objective.is_empty() && tiny.objective.len() < context().objective.len());
        assert!(tokens::count(enc, &serde_json::to_string(&tiny).unwrap()) <= 40);
    }

    #[test]
    fn iteration_budget_used_turn_and_story_are_no_change() {
        let state = |iteration, used, turn, story: &[&str], phase: Phase| StateEnvelope {
            call: CallState {
                session_id: "s-1".into(),
                depth: 1,
                max_depth: 2,
                iteration,
                parent_session_id: Some("s-0".into()),
                tools: vec!["context_retrieve".into()],
                budget: CallBudget {
                    total: 16_000,
                    used,
                },
            },
            context: ContextFields {
                turn,
                phase,
                story: story.iter().map(|s| s.to_string()).collect(),
                ..ContextFields::default()
            },
            dropped: 0,
        };
        let a = state(1, 900, 1, &["x1 a"], Phase::Exploring);
        assert!(!differs(
            &a,
            &state(2, 1400, 2, &["x2 b", "x1 a"], Phase::Exploring)
        ));
        assert!(differs(
            &a,
            &state(2, 1400, 2, &["x2 b", "x1 a"], Phase::Debugging)
        ));
    }
}
