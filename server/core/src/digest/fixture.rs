//! The sidecar convention of `fixtures/tool-outputs/KIND/NAME.out`: a
//! `NAME.cmd` next to it holds `key: value` lines; `tool:` is the tool's name
//! and `args:` its arguments as one line of JSON. Other lines (`prior:`,
//! notes) are for the readers and tests that know them.

use crate::config::DigestLimits;
use crate::digest::{digest, digest_binary, BlobFacts, Digest, PriorRead, ToolOutput};
use crate::ids::{BlobHash, ExchangeId};
use crate::secrets;
use crate::tokens::{self, Encoding};

/// The tool name and the arguments JSON of a fixture's `.cmd` text.
pub fn fixture_call(cmd_file_text: &str) -> (Option<String>, Option<String>) {
    let value = |key: &str| {
        cmd_file_text
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    (value("tool:"), value("args:"))
}

/// The file name a fixture's `prior:` line gives: an earlier read of the
/// same path, digested as the read before this one.
pub fn fixture_prior(cmd_file_text: &str) -> Option<&str> {
    cmd_file_text
        .lines()
        .find_map(|l| l.strip_prefix("prior:"))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Digests `content` with no store behind it: the blob facts are computed
/// here (the store passes the ones it counted at ingest instead). Bytes
/// that are not UTF-8 are digested as binary, unmasked, as the store keeps them.
pub fn digest_standalone(
    content: &[u8],
    tool: Option<&str>,
    arguments: Option<&str>,
    prior: Option<&PriorRead>,
    limits: &DigestLimits,
    encoding: Encoding,
) -> Digest {
    let arguments = arguments.map(|a| secrets::mask(a, secrets::Source::Conversation).text);
    let Ok(content) = std::str::from_utf8(content) else {
        let output = ToolOutput {
            tool,
            arguments: arguments.as_deref(),
            content: "",
        };
        let facts = BlobFacts {
            id: BlobHash::of(content).short_id(),
            bytes: content.len() as u64,
            // Not shown: a binary digest's footer has no token count.
            tokens: 0,
        };
        return digest_binary(&output, content, &facts, limits, encoding);
    };
    // As the store does: masked before it is hashed, digested or shown.
    let content = &*secrets::mask(content, secrets::Source::ToolOutput).text;
    let output = ToolOutput {
        tool,
        arguments: arguments.as_deref(),
        content,
    };
    let facts = BlobFacts {
        id: BlobHash::of(content.as_bytes()).short_id(),
        bytes: content.len() as u64,
        tokens: tokens::count(encoding, content),
    };
    digest(&output, &facts, prior, limits, encoding)
}

/// A fixture's digest as the store would make it: masked first, and
/// `prior_text` (the file `fixture_prior` names) is the read before this one,
/// in exchange x3. Returns the text digested.
pub fn digest_fixture(
    raw: &str,
    cmd_file_text: &str,
    prior_text: Option<&str>,
    limits: &DigestLimits,
    encoding: Encoding,
) -> (String, Digest) {
    let text = secrets::mask(raw, secrets::Source::ToolOutput)
        .text
        .into_owned();
    let (tool, arguments) = fixture_call(cmd_file_text);
    let prior = prior_text.map(|before| PriorRead {
        exchange: ExchangeId(3),
        changed_from: (before != text).then(|| before.to_string()),
    });
    let d = digest_standalone(
        text.as_bytes(),
        tool.as_deref(),
        arguments.as_deref(),
        prior.as_ref(),
        limits,
        encoding,
    );
    (text, d)
}
