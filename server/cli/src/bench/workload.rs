//! What `ctxproxy bench` sends: synthetic exchanges, and the questions its
//! assembles ask of them.

use serde_json::{json, Value};

/// One synthetic exchange, the `i`th of its store: a question, a tool
/// call, a tool output of a few KB that varies per exchange, and a
/// conclusion. Every exchange uses the words of `COMMON` but `build`; the
/// names of its output's functions, `handler_{i}_{line}`, are its own.
pub fn exchange(i: u32) -> Vec<Value> {
    let file = format!("src/module_{}.rs", i % 97);
    let mut output = String::new();
    for line in 0..output_lines(i) {
        output.push_str(&format!(
            "pub fn handler_{i}_{line}(input: &str) -> Result<usize, Error> {{ parse(input).map(|v| v.len() + {line}) }}\n"
        ));
    }
    vec![
        json!({"role": "user", "content": format!("Why does handler_{i} fail on empty input in {file}? Check the parser.")}),
        json!({"role": "assistant", "content": format!("Reading {file}."), "toolCalls": [
            {"id": format!("c{i}"), "name": "read_file", "arguments": {"path": file}}]}),
        json!({"role": "tool", "toolCallId": format!("c{i}"), "name": "read_file", "content": output}),
        json!({"role": "assistant", "content": format!(
            "handler_{i} calls parse() without checking for an empty string; I added an early return in {file}.")}),
    ]
}

/// How many lines the tool output of exchange `i` has.
fn output_lines(i: u32) -> u32 {
    40 + i % 60
}

/// What the assembles of a run ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// The same question on every call (`FIXED`).
    Fixed,
    /// A new question on every call (`new_question`).
    New,
}

impl Question {
    /// As the bench's tables show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Question::Fixed => "fixed",
            Question::New => "new",
        }
    }

    /// The text of the `call`th assemble of a store of `exchanges`.
    pub fn text(self, call: u32, exchanges: u32) -> String {
        match self {
            Question::Fixed => FIXED.to_string(),
            Question::New => new_question(call, exchanges),
        }
    }
}

const FIXED: &str = "What did we change in the parser, and which handlers are still failing?";

/// Words that most of the generated exchanges use (`build`: none), as a
/// person's question is full of them.
const COMMON: [&str; 10] = [
    "build", "fail", "error", "module", "parser", "input", "empty", "result", "string", "handler",
];

/// The `call`th new question over a store of `exchanges`: four common
/// words around the name of a function that only one exchange's output
/// has, each picked by a hash of `call`, so every call asks something else
/// and every run asks the same things.
pub fn new_question(call: u32, exchanges: u32) -> String {
    let h = mix(call as u64);
    let i = (h % exchanges as u64) as u32;
    let line = ((h >> 32) % output_lines(i) as u64) as u32;
    let word = |n: u32| COMMON[((h >> (8 * n)) % COMMON.len() as u64) as usize];
    format!(
        "Why does the {} {} with handler_{i}_{line}? Is the {} {} to blame?",
        word(0),
        word(1),
        word(2),
        word(3)
    )
}

/// SplitMix64's finaliser: well-spread bits from a counter.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_question_names_a_function_of_one_exchange_of_the_store() {
        for call in 0..200 {
            let q = new_question(call, 50);
            let name = q
                .split_whitespace()
                .find(|w| w.starts_with("handler_"))
                .expect("a function's name")
                .trim_end_matches('?');
            let owners: Vec<u32> = (0..50)
                .filter(|&i| {
                    exchange(i)[2]["content"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("{name}("))
                })
                .collect();
            assert_eq!(owners.len(), 1, "{q}");
        }
        assert_ne!(new_question(0, 50), new_question(1, 50));
    }
}
