//! A model request's body, read into what the proxy works with: the body
//! less its history (the envelope), the system prompt, and the history as
//! ctxproxy messages.
//!
//! A full-history client resends every earlier message on every request,
//! byte for byte: at 1,000 exchanges, 7 MB to parse for a few new
//! messages. So the reading of a request is kept (`History`: the body,
//! where each of its messages ends, what each became) and the next body of
//! the same conversation is read from the last message it repeats byte for
//! byte (`read_resumed`): the repeated bytes equal a body that was read
//! whole and valid, so they need no second look. The envelope is read
//! again (it may stand before or after `messages`). Whatever cannot be
//! vouched for this way is read whole (`read_whole`): one message at a
//! time too, or, what that cannot vouch for either, as one `Value`
//! (`read_checked`), which is also what words every error.

pub mod cache;
pub mod receive;

use ctxproxy_core::baseline;
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::tokens::Encoding;
use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::api::{expected, push_read, stream_flag, Api, BadRequest, ClientBody};
use crate::session::{exact, Fingerprint, Sent};

/// How deeply a message read on its own may nest: far below the parser's
/// limit on the whole body (128), so a message accepted here would be
/// accepted inside the body too.
const MAX_MESSAGE_DEPTH: usize = 100;

/// One request's history, kept for the conversation's next request.
#[derive(Debug)]
pub struct History {
    /// The body as received.
    body: Vec<u8>,
    /// Where the `messages` array opens in `body`; `None` when that is
    /// unknown (the body read whole without a place for its messages, e.g.
    /// two `messages` keys): the next request is read whole.
    open: Option<usize>,
    /// Per client message: where it ends in `body`, and how many ctxproxy
    /// messages it and the messages before it became.
    ends: Vec<(usize, usize)>,
    /// The client's messages as ctxproxy messages, leading system messages
    /// included.
    messages: Vec<Message>,
    /// Of each of `messages`: what the session finder matches it by.
    exacts: Vec<Fingerprint>,
    /// How many of `messages` lead the history and state the system prompt
    /// (an API without a `system` field).
    leading: usize,
    /// The client messages `upstream_body` reads back, by index.
    kept: Vec<(usize, Value)>,
    /// The tokens of the first of `messages` as counted so far (in
    /// `counted_in`): a conversation's next request counts only its new
    /// messages (`message_tokens`).
    counted: Vec<u32>,
    counted_in: Option<Encoding>,
    /// Its new messages were moved out to be stored (`new_messages`): it
    /// is not kept for the next request.
    moved: bool,
}

/// New messages up to this many are copied for the store and the history
/// is kept; more are moved out of it (a copy of 100,000 short messages is
/// 21 MB more at the request's peak) and the conversation's next body is
/// read whole (0.1-0.4 s more for those 4 MB on the release build).
const COPIED_MAX: usize = 10_000;

/// A request body read.
#[derive(Debug)]
pub struct Read {
    /// The body less `messages`.
    pub envelope: Value,
    /// The system prompt's text: counted in the budget, and part of the
    /// session a request without a session id is given.
    pub system: String,
    pub stream: bool,
    pub history: History,
}

impl History {
    /// The body as the client sent it.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Hands the body's buffer over to receive the next body in; what
    /// else the history holds stays valid for the bytes the next body
    /// repeats.
    pub fn take_body(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    /// The history, as ctxproxy messages (the system prompt's left out).
    pub fn messages(&self) -> &[Message] {
        &self.messages[self.leading..]
    }

    /// The client's history messages as it sent them, the system prompt's
    /// left out: parsed again from the body, for a prompt of the whole
    /// shape, which forwards them so.
    pub fn sent_messages<A: Api>(&self) -> Result<Vec<Value>, serde_json::Error> {
        // A message is history when the ones before it state the whole system prompt.
        let before = |i: usize| i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        let history = (0..self.ends.len()).filter(|&i| before(i) >= self.leading);
        if self.open.is_none() {
            let mut body: Value = serde_json::from_slice(&self.body)?;
            let Value::Array(mut messages) = A::history_items(body[A::HISTORY].take()) else {
                return Ok(Vec::new());
            };
            let first = history.min().unwrap_or(messages.len());
            return Ok(messages.split_off(first.min(messages.len())));
        }
        history
            .map(|i| {
                let bytes = &self.body[self.start_of(i)..self.ends[i].0];
                // A message after the first starts at the comma before it.
                let at = bytes
                    .iter()
                    .position(|b| !(b.is_ascii_whitespace() || *b == b','))
                    .unwrap_or(bytes.len());
                serde_json::from_slice(&bytes[at..])
            })
            .collect()
    }

    /// The tokens of the history's messages, as the replay report counts
    /// full history (`baseline::message_tokens`); the messages a kept
    /// history already counted are not counted again.
    pub fn message_tokens(&mut self, encoding: Encoding) -> u64 {
        if self.counted_in != Some(encoding) {
            self.counted.clear();
            self.counted_in = Some(encoding);
        }
        let from = self.counted.len();
        self.counted.extend(
            self.messages[from..]
                .iter()
                .map(|m| baseline::message_tokens(m, encoding)),
        );
        let leading = self.leading.min(self.counted.len());
        self.counted[leading..].iter().map(|&t| u64::from(t)).sum()
    }

    /// The messages after the first `repeated` of the history, to be
    /// stored: copied, or moved out when there are more than `COPIED_MAX`
    /// (the history is then not kept, and is read no more but for
    /// `sent_messages`, which reads the body).
    pub fn new_messages(&mut self, repeated: usize) -> Vec<Message> {
        let from = self.leading + repeated;
        if self.messages.len() - from <= COPIED_MAX {
            return self.messages[from..].to_vec();
        }
        self.moved = true;
        // The repeated ones (few, next to so many new) are copied out
        // instead: the new ones stay where they are.
        let repeated: Vec<Message> = self.messages.drain(..from).collect();
        std::mem::replace(&mut self.messages, repeated)
    }

    /// The history with its fingerprints, for the session finder.
    pub fn sent(&self) -> Sent<'_> {
        Sent {
            messages: self.messages(),
            exacts: &self.exacts[self.leading..],
        }
    }

    /// Gives back the room its lists grew beyond their length (read a
    /// message at a time: up to a third of 100,000 messages' structs) for
    /// the rest of the request and the time it is kept.
    fn shrink_to_fit(&mut self) {
        self.messages.shrink_to_fit();
        self.exacts.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.counted.shrink_to_fit();
    }

    /// The memory the history holds, roughly: what the cache counts.
    pub fn size(&self) -> usize {
        let texts: usize = self
            .messages
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                        .sum::<usize>()
            })
            .sum();
        // The kept messages are counted as their bytes in the body.
        let kept: usize = self
            .kept
            .iter()
            .map(|&(i, _)| self.ends[i].0 - self.start_of(i))
            .sum();
        self.body.capacity()
            + texts
            + kept
            + self.messages.len()
                * (std::mem::size_of::<Message>() + std::mem::size_of::<Fingerprint>())
            + self.ends.len() * std::mem::size_of::<(usize, usize)>()
    }

    /// Where the `messages` array opens, when the next body can be read
    /// from this one: a body must repeat past it for any message to count.
    pub fn resumable_past(&self) -> Option<usize> {
        self.open.filter(|_| !self.moved)
    }

    /// Where the last client message ends.
    pub fn last_end(&self) -> usize {
        self.ends.last().map_or(0, |e| e.0)
    }

    /// Where client message `i` starts, or just after the array opens.
    fn start_of(&self, i: usize) -> usize {
        match i {
            0 => self.open.map_or(0, |o| o + 1),
            _ => self.ends[i - 1].0,
        }
    }

    /// Reads one more client message (index `self.ends.len()`) ending at
    /// `end`.
    fn push<A: Api>(&mut self, m: Value, end: usize) -> Result<(), BadRequest> {
        let i = self.ends.len();
        let read = A::read(&m, &format!("{}[{i}]", A::HISTORY))?;
        let before = self.messages.len();
        if push_read::<A>(&mut self.messages, read) {
            self.exacts[before - 1] = exact(&self.messages[before - 1]);
            self.counted.truncate(before - 1);
        }
        self.exacts
            .extend(self.messages[before..].iter().map(exact));
        self.ends.push((end, self.messages.len()));
        if A::keeps(&m) {
            self.kept.push((i, m));
        }
        Ok(())
    }
}

impl Read {
    /// What the forwarded body is built from.
    pub fn client_body(&self) -> ClientBody<'_> {
        ClientBody {
            envelope: &self.envelope,
            kept: &self.history.kept,
        }
    }
}

/// The envelope checked, and the system prompt: the envelope's, or the
/// messages that lead the history (then left out of it).
fn system_and_stream<A: Api>(
    envelope: &Value,
    history: &mut History,
) -> Result<(String, bool), BadRequest> {
    let stream = stream_flag(envelope)?;
    let system = match A::envelope_system(envelope)? {
        Some(system) => system,
        None => {
            history.leading = history
                .messages
                .iter()
                .take_while(|m| m.role == Role::System)
                .count();
            let texts: Vec<&str> = history.messages[..history.leading]
                .iter()
                .map(|m| m.content.as_str())
                .collect();
            texts.join("\n\n")
        }
    };
    Ok((system, stream))
}

/// Reads a body whole; errors name the field.
///
/// A body is read one message at a time (`read_items`): parsed into one
/// `Value`, a body of 100,000 short messages takes about 18 times its
/// size at once, and the messages read from it end up scattered over
/// pages the allocator cannot give back. Whatever that reading cannot
/// vouch for, an error above all, is read as one `Value` (`read_checked`),
/// which words every error.
pub fn read_whole<A: Api>(body: Vec<u8>) -> Result<Read, BadRequest> {
    match read_items::<A>(body) {
        Ok(read) => Ok(read),
        Err(body) => read_checked::<A>(body),
    }
}

/// Reads a body whose history is one array, its messages one at a time
/// (as `read_resumed` reads the messages a kept history lacks); the body
/// comes back when that cannot be vouched for.
fn read_items<A: Api>(body: Vec<u8>) -> Result<Read, Vec<u8>> {
    let Some(open) = history_opens(&body, A::HISTORY) else {
        return Err(body);
    };
    let history = History {
        body,
        open: Some(open),
        ends: Vec::new(),
        messages: Vec::new(),
        exacts: Vec::new(),
        leading: 0,
        kept: Vec::new(),
        counted: Vec::new(),
        counted_in: None,
        moved: false,
    };
    read_after_kept::<A>(history)
}

/// Where a body's history field (`field`), an array, opens: `None` unless
/// the body is an object holding it exactly once.
fn history_opens(body: &[u8], field: &str) -> Option<usize> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let top = DeserializeSeed::deserialize(Field { name: field }, &mut de).ok()??;
    let open = top.get().as_ptr() as usize - body.as_ptr() as usize;
    (body[open] == b'[').then_some(open)
}

/// Reads a body as one `Value`; errors name the field.
pub fn read_checked<A: Api>(body: Vec<u8>) -> Result<Read, BadRequest> {
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| BadRequest::new("body", format!("body: not JSON: {e}")))?;
    let (envelope, messages) = split::<A>(value)?;
    let layout = layout(&body, A::HISTORY).filter(|(_, ends)| ends.len() == messages.len());
    let (open, ends) = match layout {
        Some((open, ends)) => (Some(open), ends),
        None => (None, vec![0; messages.len()]),
    };
    let mut history = History {
        body,
        open,
        ends: Vec::with_capacity(messages.len()),
        messages: Vec::with_capacity(messages.len()),
        exacts: Vec::with_capacity(messages.len()),
        leading: 0,
        kept: Vec::new(),
        counted: Vec::new(),
        counted_in: None,
        moved: false,
    };
    for (m, end) in messages.into_iter().zip(ends) {
        history.push::<A>(m, end)?;
    }
    let (system, stream) = system_and_stream::<A>(&envelope, &mut history)?;
    Ok(Read {
        envelope,
        system,
        stream,
        history,
    })
}

/// A body's envelope and its history, checked in the order the fields
/// are reported: the body, `stream`, the system prompt, the history.
fn split<A: Api>(mut body: Value) -> Result<(Value, Vec<Value>), BadRequest> {
    let field = A::HISTORY;
    let Some(map) = body.as_object_mut() else {
        return Err(expected("body", "a JSON object", &body));
    };
    let messages = A::history_items(map.remove(field).unwrap_or(Value::Null));
    stream_flag(&body)?;
    A::envelope_system(&body)?;
    let Value::Array(messages) = messages else {
        return Err(expected(field, "an array", &messages));
    };
    if messages.is_empty() {
        return Err(BadRequest::new(
            field,
            format!("{field}: expected at least one item"),
        ));
    }
    Ok((body, messages))
}

/// Where a body's history array (`field`) opens and where each of its
/// items ends; `None` if the body has no single such array.
fn layout(body: &[u8], field: &str) -> Option<(usize, Vec<usize>)> {
    let offset = |raw: &str| raw.as_ptr() as usize - body.as_ptr() as usize;
    let mut de = serde_json::Deserializer::from_slice(body);
    let top = DeserializeSeed::deserialize(Field { name: field }, &mut de).ok()??;
    let items: Vec<&RawValue> = serde_json::from_str(top.get()).ok()?;
    let ends = items
        .iter()
        .map(|m| offset(m.get()) + m.get().len())
        .collect();
    Some((offset(top.get()), ends))
}

/// Reads a body for one field's value, unparsed: `None` when the body has
/// it not exactly once.
struct Field<'f> {
    name: &'f str,
}

impl<'de> DeserializeSeed<'de> for Field<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Field<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut found = None;
        let mut count = 0;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.name {
                count += 1;
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found.filter(|_| count == 1))
    }
}

/// Reads `body`, whose first `same` bytes repeat the body `previous` was
/// read from (its buffer handed over): the messages that end within them
/// are kept as they were read, the rest and the envelope are read. The
/// body comes back when that cannot be vouched for (read it whole).
pub fn read_resumed<A: Api>(
    mut previous: History,
    body: Vec<u8>,
    same: usize,
) -> Result<Read, Vec<u8>> {
    if previous.open.is_none_or(|open| open >= same) {
        return Err(body);
    }
    let mut keep = previous.ends.partition_point(|&(end, _)| end <= same);
    // A message read from several items (`Shape::joins`) is kept whole or
    // read again whole: back off over the items that started no message.
    while keep > 0
        && keep < previous.ends.len()
        && previous.ends[keep].1 == previous.ends[keep - 1].1
    {
        keep -= 1;
    }
    let read = keep.checked_sub(1).map_or(0, |last| previous.ends[last].1);
    previous.ends.truncate(keep);
    previous.messages.truncate(read);
    previous.exacts.truncate(read);
    previous.counted.truncate(read);
    previous.kept.retain(|&(i, _)| i < keep);
    previous.leading = 0;
    read_after_kept::<A>(History { body, ..previous })
}

/// Reads the rest of `history.body` after the messages `history` holds
/// (kept from an earlier body, or none): the messages after them and the
/// envelope. The body comes back when that cannot be vouched for.
fn read_after_kept<A: Api>(mut history: History) -> Result<Read, Vec<u8>> {
    let Some(open) = history.open else {
        return Err(history.body);
    };
    let close = match read_rest::<A>(&mut history) {
        Some(close) if !history.ends.is_empty() => close,
        _ => return Err(history.body),
    };
    // The envelope: the body with an empty history, read whole (it is
    // small, and may stand on both sides of the history).
    let rest = &history.body[close + 1..];
    let mut envelope_text = Vec::with_capacity(open + 2 + rest.len());
    envelope_text.extend_from_slice(&history.body[..open]);
    envelope_text.extend_from_slice(b"[]");
    envelope_text.extend_from_slice(rest);
    // The `[]` stands for the history; another history field would be
    // the one a whole read keeps. Nothing but whitespace may follow.
    let mut de = serde_json::Deserializer::from_slice(&envelope_text);
    let envelope = DeserializeSeed::deserialize(Others { name: A::HISTORY }, &mut de)
        .ok()
        .filter(|f| f.count == 1 && de.end().is_ok())
        .map(|f| Value::Object(f.others));
    let Some(envelope) = envelope else {
        return Err(history.body);
    };
    // An error is worded by the whole read the body falls back to.
    match system_and_stream::<A>(&envelope, &mut history) {
        Ok((system, stream)) => {
            history.shrink_to_fit();
            Ok(Read {
                envelope,
                system,
                stream,
                history,
            })
        }
        Err(_) => Err(history.body),
    }
}

/// Reads a body for its fields but one (`name`): the rest, and how many
/// times that one stands.
struct Others<'f> {
    name: &'f str,
}

/// A body's fields but one, and how many times that one stands.
struct Fields {
    others: Map<String, Value>,
    count: usize,
}

impl<'de> DeserializeSeed<'de> for Others<'_> {
    type Value = Fields;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Fields, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Others<'_> {
    type Value = Fields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Fields, M::Error> {
        let mut fields = Fields {
            others: Map::new(),
            count: 0,
        };
        while let Some(key) = map.next_key::<String>()? {
            let value: Value = map.next_value()?;
            if key == self.name {
                fields.count += 1;
            } else {
                fields.others.insert(key, value);
            }
        }
        Ok(fields)
    }
}

/// Reads the messages after the kept ones, up to the array's `]`; returns
/// where that stands.
fn read_rest<A: Api>(history: &mut History) -> Option<usize> {
    let mut at = history.start_of(history.ends.len());
    let mut first = history.ends.is_empty();
    loop {
        at = skip_whitespace(&history.body, at);
        match history.body.get(at)? {
            b']' => return Some(at),
            b',' if !first => at += 1,
            _ if first => {}
            _ => return None,
        }
        first = false;
        let mut values =
            serde_json::Deserializer::from_slice(&history.body[at..]).into_iter::<Value>();
        let m = values.next()?.ok()?;
        if depth(&m) > MAX_MESSAGE_DEPTH {
            return None;
        }
        let end = at + values.byte_offset();
        history.push::<A>(m, end).ok()?;
        at = end;
    }
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
    {
        at += 1;
    }
    at
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// What both API mappings' snapshot tests print and read with: JSON, a
/// body read whole, and its reading as ctxproxy's wire messages.
#[cfg(test)]
pub(crate) mod test_support {
    use serde_json::{json, Value};

    use super::{read_whole, Read};
    use crate::api::{Api, BadRequest};
    use ctxproxy_service::api::FormattedPrompt;

    pub fn pretty(v: &Value) -> String {
        serde_json::to_string_pretty(v).unwrap()
    }

    pub fn parse<A: Api>(body: &Value) -> Result<Read, BadRequest> {
        read_whole::<A>(body.to_string().into_bytes())
    }

    /// The body forwarded for `client` with `prompt` assembled.
    pub fn forwarded<A: Api>(client: &Value, prompt: FormattedPrompt, session: &str) -> Value {
        let read = parse::<A>(client).expect("a valid body");
        A::upstream_body(read.client_body(), prompt, session)
    }

    pub fn request_as_text(r: &Read) -> String {
        let messages: Vec<Value> = r
            .history
            .messages()
            .iter()
            .map(|m| {
                serde_json::to_value(ctxproxy_service::api::WireMessage::from_core(m)).unwrap()
            })
            .collect();
        pretty(&json!({"system": r.system, "stream": r.stream, "messages": messages}))
    }
}
