//! The TypeScript client's wire types follow the Rust ones: every params,
//! result and event type of `server/service/src/api.rs` has an interface
//! (or type) of the same name in `vscode-client/src/protocol.ts` with the
//! same JSON field names, each optional on both sides or on neither (that
//! the client knows every method is a tidy check).
//! rust-analyzer hashes `lsp_ext.rs` into its docs for the same reason;
//! comparing field by field says which field drifted.
//!
//! Both files are read as text: the Rust types keep to plain serde
//! attributes (`rename_all = "camelCase"`, `skip_serializing_if`,
//! `default`, `flatten`, `untagged`, `tag`), which this reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The Rust types whose TypeScript name differs.
const TS_NAMES: [(&str, &str); 3] = [
    ("WireMessage", "Message"),
    ("WireToolCall", "ToolCall"),
    ("ExchangeInfo", "ExchangeHeader"),
];

fn ts_name(rust: &str) -> String {
    TS_NAMES
        .iter()
        .find(|(r, _)| *r == rust)
        .map_or(rust, |(_, t)| t)
        .to_string()
}

/// A JSON field: its name and whether it may be absent.
type Fields = BTreeSet<(String, bool)>;

#[derive(Debug)]
struct RustField {
    json: String,
    optional: bool,
    /// The flattened type, for `#[serde(flatten)]`.
    flatten: Option<String>,
}

#[derive(Debug)]
enum RustType {
    Struct(Vec<RustField>),
    /// `#[serde(untagged)]`: the member types.
    Untagged(Vec<String>),
    /// `#[serde(tag = "…")]`: the tag's field and each variant's fields.
    Tagged(String, Vec<(String, Vec<RustField>)>),
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// `Box<T>` and `Option<T>` as `T`.
fn inner_type(ty: &str) -> String {
    let ty = ty.trim().trim_end_matches(',');
    for wrapper in ["Box<", "Option<"] {
        if let Some(rest) = ty.strip_prefix(wrapper) {
            return inner_type(rest.strip_suffix('>').unwrap_or(rest));
        }
    }
    ty.to_string()
}

/// One field line (`pub name: Type,`) with the attributes above it.
fn rust_field(line: &str, attrs: &str, camel_case: bool, serialized: bool) -> Option<RustField> {
    let line = line.trim().trim_start_matches("pub ");
    let (name, ty) = line.split_once(':')?;
    let ty = ty.trim().trim_end_matches(',');
    let is_option = ty.starts_with("Option<");
    Some(RustField {
        json: if camel_case {
            camel(name.trim())
        } else {
            name.trim().to_string()
        },
        optional: attrs.contains("skip_serializing_if")
            || (!serialized && (is_option || attrs.contains("default"))),
        flatten: attrs.contains("flatten").then(|| inner_type(ty)),
    })
}

/// Every type declared in api.rs that derives serde's traits.
fn rust_types(source: &str) -> BTreeMap<String, RustType> {
    let mut types = BTreeMap::new();
    let mut attrs = String::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.starts_with("#[") || (!attrs.is_empty() && !attrs_closed(&attrs)) {
            attrs.push_str(t);
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        let serde = attrs.contains("Serialize") || attrs.contains("Deserialize");
        let serialized = attrs.contains("Serialize");
        let camel_case = attrs.contains("rename_all = \"camelCase\"");
        let item_attrs = std::mem::take(&mut attrs);
        let Some(rest) = t
            .strip_prefix("pub struct ")
            .or(t.strip_prefix("pub enum "))
        else {
            continue;
        };
        let name = rest
            .split([' ', '{'])
            .next()
            .unwrap_or_default()
            .to_string();
        if !serde || rest.ends_with("{}") {
            if serde {
                types.insert(name, RustType::Struct(Vec::new()));
            }
            continue;
        }
        let mut body = Vec::new();
        for l in lines.by_ref() {
            if l.starts_with('}') {
                break;
            }
            body.push(l);
        }
        let parsed = if t.starts_with("pub struct") {
            RustType::Struct(struct_fields(&body, camel_case, serialized))
        } else if item_attrs.contains("untagged") {
            RustType::Untagged(
                body.iter()
                    .filter_map(|l| {
                        let (_, ty) = l.trim().split_once('(')?;
                        Some(inner_type(ty.trim_end_matches(',').trim_end_matches(')')))
                    })
                    .collect(),
            )
        } else {
            let tag = item_attrs
                .split("tag = \"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .expect("an enum on the wire is untagged or tagged")
                .to_string();
            let camel_fields = item_attrs.contains("rename_all_fields = \"camelCase\"");
            let mut variants = Vec::new();
            let mut i = 0;
            while i < body.len() {
                let v = body[i].trim();
                if let Some(name) = v.strip_suffix(" {") {
                    let end = (i..body.len())
                        .find(|&j| body[j].trim() == "},")
                        .expect("variant ends");
                    variants.push((
                        name.to_string(),
                        struct_fields(&body[i + 1..end], camel_fields, serialized),
                    ));
                    i = end;
                }
                i += 1;
            }
            RustType::Tagged(tag, variants)
        };
        types.insert(name, parsed);
    }
    types
}

fn attrs_closed(attrs: &str) -> bool {
    attrs.matches('[').count() == attrs.matches(']').count()
}

fn struct_fields(body: &[&str], camel_case: bool, serialized: bool) -> Vec<RustField> {
    let mut fields = Vec::new();
    let mut attrs = String::new();
    for l in body {
        let t = l.trim();
        if t.starts_with("#[") || (!attrs.is_empty() && !attrs_closed(&attrs)) {
            attrs.push_str(t);
        } else if t.starts_with("//") || t.is_empty() {
            continue;
        } else if let Some(f) = rust_field(t, &attrs, camel_case, serialized) {
            fields.push(f);
            attrs.clear();
        }
    }
    fields
}

/// A declaration of protocol.ts: an object's fields and the names it is
/// built from (`extends`, `&`), or a union's member names.
#[derive(Debug, Default)]
struct TsType {
    fields: Fields,
    bases: Vec<String>,
    union: Vec<String>,
    text: String,
}

fn ts_types(source: &str) -> BTreeMap<String, TsType> {
    let mut types = BTreeMap::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let (name, mut decl) = if let Some(rest) = line.strip_prefix("export interface ") {
            let (head, _) = rest.split_once('{').unwrap_or((rest, ""));
            let mut parts = head.split(" extends ");
            let name = parts.next().unwrap_or_default().trim().to_string();
            let bases = parts
                .next()
                .map(|b| b.split(',').map(|s| s.trim().to_string()).collect())
                .unwrap_or_default();
            let mut decl = TsType {
                bases,
                ..TsType::default()
            };
            if !rest.trim_end().ends_with("{}") {
                for l in lines.by_ref() {
                    if l.starts_with('}') {
                        break;
                    }
                    decl.text.push_str(l);
                    decl.text.push('\n');
                }
            }
            (name, decl)
        } else if let Some(rest) = line.strip_prefix("export type ") {
            let (name, value) = rest.split_once(" =").unwrap_or((rest, ""));
            let mut text = value.to_string();
            // To the `;` that ends the declaration, outside any `{ … }`.
            while text.matches('{').count() != text.matches('}').count()
                || !text.trim_end().ends_with(';')
            {
                let Some(l) = lines.next() else { break };
                text.push('\n');
                text.push_str(l);
            }
            let mut decl = TsType::default();
            let (outside, object) = match text.split_once('{') {
                Some((before, inside)) => (before.to_string(), inside.to_string()),
                None => (text.clone(), String::new()),
            };
            let names: Vec<String> = outside
                .split(['|', '&', '(', ')', ';', '\n', ' '])
                .map(str::trim)
                .filter(|n| n.chars().next().is_some_and(char::is_uppercase))
                .filter(|n| n.chars().all(|c| c.is_alphanumeric()))
                .map(str::to_string)
                .collect();
            if outside.contains('|') {
                decl.union = names;
            } else {
                decl.bases = names;
            }
            decl.text = object;
            (name.trim().to_string(), decl)
        } else {
            continue;
        };
        decl.fields = decl
            .text
            .lines()
            .filter_map(|l| {
                let l = l.strip_prefix("  ")?;
                if l.starts_with(' ') || l.starts_with('/') || l.starts_with('*') {
                    return None;
                }
                let (name, _) = l.split_once(':')?;
                let optional = name.ends_with('?');
                let name = name.trim_end_matches('?');
                name.chars()
                    .all(|c| c.is_alphanumeric() || c == '_')
                    .then(|| (name.to_string(), optional))
            })
            .collect();
        types.insert(name, decl);
    }
    types
}

/// A TypeScript object's fields, its bases' included.
fn ts_fields(ts: &BTreeMap<String, TsType>, name: &str) -> Option<Fields> {
    let t = ts.get(name)?;
    let mut fields = t.fields.clone();
    for base in &t.bases {
        fields.extend(ts_fields(ts, base)?);
    }
    Some(fields)
}

/// A Rust struct's JSON fields, flattened structs' included; flattened
/// enums are named in `enums`.
fn rust_fields(
    rust: &BTreeMap<String, RustType>,
    fields: &[RustField],
    enums: &mut Vec<String>,
) -> Fields {
    let mut out = Fields::new();
    for f in fields {
        match (&f.flatten, f.flatten.as_ref().and_then(|t| rust.get(t))) {
            (Some(_), Some(RustType::Struct(inner))) => out.extend(rust_fields(rust, inner, enums)),
            (Some(t), _) => enums.push(t.clone()),
            (None, _) => {
                out.insert((f.json.clone(), f.optional));
            }
        }
    }
    out
}

/// Why `got` (TypeScript) differs from `want` (Rust), if it does.
fn compare(what: String, want: Fields, got: Option<Fields>) -> Option<String> {
    let got = match got {
        None => return Some(format!("{what}: no such interface or type in protocol.ts")),
        Some(got) if got == want => return None,
        Some(got) => got,
    };
    let show = |s: BTreeSet<&(String, bool)>| {
        s.iter()
            .map(|(n, o)| format!("{n}{}", if *o { "?" } else { "" }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(format!(
        "{what}: Rust has only [{}], TypeScript has only [{}]",
        show(want.difference(&got).collect()),
        show(got.difference(&want).collect()),
    ))
}

fn drift(rust: &BTreeMap<String, RustType>, ts: &BTreeMap<String, TsType>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut union_checks = Vec::new();
    for (name, t) in rust {
        let ts_of = ts_name(name);
        match t {
            RustType::Struct(fields) => {
                let want = rust_fields(rust, fields, &mut Vec::new());
                problems.extend(compare(
                    format!("{name} (ts {ts_of})"),
                    want,
                    ts_fields(ts, &ts_of),
                ));
            }
            RustType::Untagged(members) => {
                let mut want: BTreeSet<String> = members.iter().map(|m| ts_name(m)).collect();
                for m in members {
                    if let Some(RustType::Struct(fields)) = rust.get(m) {
                        let mut enums = Vec::new();
                        rust_fields(rust, fields, &mut enums);
                        want.extend(enums);
                    }
                }
                union_checks.push((name.clone(), ts_of, want));
            }
            RustType::Tagged(tag, variants) => {
                let want = variants.iter().map(|(v, _)| format!("{v}Event")).collect();
                union_checks.push((name.clone(), ts_of, want));
                for (v, fields) in variants {
                    let mut want = rust_fields(rust, fields, &mut Vec::new());
                    want.insert((tag.clone(), false));
                    let ts_variant = format!("{v}Event");
                    problems.extend(compare(
                        format!("{name}::{v}"),
                        want,
                        ts_fields(ts, &ts_variant),
                    ));
                    let literal = format!("{tag}: \"{}\"", lower_first(v));
                    if !ts
                        .get(&ts_variant)
                        .is_some_and(|t| t.text.contains(&literal))
                    {
                        problems.push(format!("{ts_variant}: expected `{literal}`"));
                    }
                }
            }
        }
    }
    for (name, ts_name, want) in union_checks {
        let got: Option<BTreeSet<String>> =
            ts.get(&ts_name).map(|t| t.union.iter().cloned().collect());
        if got.as_ref() != Some(&want) {
            problems.push(format!(
                "{name}: Rust's members {want:?}, protocol.ts's union {got:?}"
            ));
        }
    }
    for ts_name in ts.keys() {
        let is_wire = ts_name.ends_with("Params") || ts_name.ends_with("Result");
        if is_wire && !rust.contains_key(ts_name.as_str()) {
            problems.push(format!("{ts_name}: in protocol.ts, not in api.rs"));
        }
    }
    problems
}

#[test]
fn protocol_ts_follows_the_rust_wire_types() {
    let rust = rust_types(&read("server/service/src/api.rs"));
    let ts = ts_types(&read("vscode-client/src/protocol.ts"));
    assert!(
        rust.len() > 30 && rust.contains_key("CtxEvent") && rust.contains_key("AssembleResult"),
        "api.rs read as {} types: the reader no longer understands it",
        rust.len()
    );
    let problems = drift(&rust, &ts);
    assert!(
        problems.is_empty(),
        "protocol.ts has drifted from api.rs:\n{}",
        problems.join("\n")
    );
}

/// The check itself: a field dropped, renamed or made optional on one side,
/// and a type missing, are each reported.
#[test]
fn drift_is_reported_field_by_field() {
    let rust_source = read("server/service/src/api.rs");
    let rust = rust_types(&rust_source);
    let ts_source = read("vscode-client/src/protocol.ts");
    let cases = [
        (
            "  prefixReused: number;\n  trimmed",
            "  trimmed",
            "AssembleResult",
        ),
        (
            "  fullTokens: number;",
            "  fullTokens?: number;",
            "ExchangeInfo",
        ),
        (
            "  digestTokens: number;",
            "  digestToken: number;",
            "BlobRef",
        ),
        (
            "  kind: \"layerTrimmed\";",
            "  kind: \"layersTrimmed\";",
            "LayerTrimmedEvent",
        ),
        (
            "export interface StatsParams {",
            "export interface StatParams {",
            "StatsParams",
        ),
        ("  | StateChangedEvent;", ";", "CtxEvent"),
    ];
    for (from, to, named) in cases {
        assert!(
            ts_source.contains(from),
            "protocol.ts no longer has {from:?}"
        );
        let changed = ts_types(&ts_source.replacen(from, to, 1));
        let problems = drift(&rust, &changed);
        assert!(
            problems.iter().any(|p| p.contains(named)),
            "{from:?} -> {to:?} is not reported for {named}: {problems:?}"
        );
    }
}
