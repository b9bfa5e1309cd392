//! Configuration from initializationOptions, `workspace/didChangeConfiguration`
//! (section `ctx`) and the CLI, applied over the defaults in `core::config`.

use std::path::{Path, PathBuf};

use ctxproxy_core::config::{Config, LayerOrder};
use ctxproxy_core::tokens::Encoding;
use ctxproxy_store::IngestSettings;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ServiceError;
use crate::from_json;

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireLayers {
    current_context_max: Option<u32>,
    recent_full: Option<u32>,
    summaries: Option<u32>,
    summary_max: Option<u32>,
    header_max: Option<u32>,
    max_headers: Option<u32>,
    max_references: Option<u32>,
    tail_tokens: Option<u32>,
    dialogue_tokens: Option<u32>,
    asks_tokens: Option<u32>,
    recall_max: Option<u32>,
    memory_tokens: Option<u32>,
    project_recall_max: Option<u32>,
    project_recent_tokens: Option<u32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireDigest {
    inline_max_tokens: Option<u32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireConfig {
    store_path: Option<String>,
    encoding: Option<String>,
    budget: Option<u32>,
    order: Option<String>,
    whole_history: Option<bool>,
    memory: Option<bool>,
    #[serde(default)]
    layers: WireLayers,
    #[serde(default)]
    digest: WireDigest,
    redact_secrets: Option<bool>,
    max_payload_bytes: Option<u64>,
    max_depth: Option<u32>,
    one_shot_context_max: Option<u32>,
}

/// Applies a configuration object over `base`; returns the new config and the
/// store path if one was given. Errors name the field.
pub fn apply(base: &Config, value: Value) -> Result<(Config, Option<PathBuf>), ServiceError> {
    let value = match value {
        Value::Null => return Ok((base.clone(), None)),
        // didChangeConfiguration may wrap the section: {"ctx": {...}}, beside
        // other servers' sections, which are not ours to check.
        Value::Object(mut map) if map.contains_key("ctx") => map.remove("ctx").unwrap_or_default(),
        v => v,
    };
    let w: WireConfig = from_json::parse(value)?;
    let mut c = base.clone();
    if let Some(e) = w.encoding {
        c.encoding = parse_encoding(&e, "encoding")?;
    }
    if let Some(o) = w.order {
        c.order = parse_order(&o, "order")?;
    }
    let positive = |v: u32, field: &str| {
        if v == 0 {
            Err(ServiceError::InvalidParams(format!(
                "{field}: must be at least 1"
            )))
        } else {
            Ok(v)
        }
    };
    if let Some(b) = w.budget {
        c.budget = positive(b, "budget")?;
    }
    let l = &mut c.layers;
    if let Some(v) = w.layers.current_context_max {
        l.current_context_max = Some(positive(v, "layers.currentContextMax")?);
    }
    if let Some(v) = w.layers.recent_full {
        l.recent_full = Some(v);
    }
    if let Some(v) = w.layers.summaries {
        l.summaries = Some(v);
    }
    if let Some(v) = w.layers.summary_max {
        l.summary_max = Some(positive(v, "layers.summaryMax")?);
    }
    if let Some(v) = w.layers.header_max {
        l.header_max = Some(positive(v, "layers.headerMax")?);
    }
    if let Some(v) = w.layers.max_headers {
        l.max_headers = Some(v);
    }
    if let Some(v) = w.layers.max_references {
        l.max_references = Some(v);
    }
    if let Some(v) = w.layers.tail_tokens {
        l.tail_tokens = Some(v);
    }
    if let Some(v) = w.layers.dialogue_tokens {
        l.dialogue_tokens = Some(v);
    }
    if let Some(v) = w.layers.asks_tokens {
        l.asks_tokens = Some(v);
    }
    if let Some(v) = w.layers.recall_max {
        l.recall_max = Some(v);
    }
    if let Some(v) = w.layers.memory_tokens {
        l.memory_tokens = Some(v);
    }
    if let Some(v) = w.layers.project_recall_max {
        l.project_recall_max = Some(v);
    }
    if let Some(v) = w.layers.project_recent_tokens {
        l.project_recent_tokens = Some(v);
    }
    if let Some(v) = w.digest.inline_max_tokens {
        if v < 40 {
            return Err(ServiceError::InvalidParams(
                "digest.inlineMaxTokens: must be at least 40".into(),
            ));
        }
        c.digest.inline_max_tokens = v;
    }
    if let Some(v) = w.whole_history {
        c.whole_history = v;
    }
    if let Some(v) = w.memory {
        c.memory = v;
    }
    if let Some(v) = w.redact_secrets {
        c.redact_secrets = v;
    }
    if let Some(v) = w.max_payload_bytes {
        c.max_payload_bytes = v;
    }
    if let Some(v) = w.max_depth {
        c.calls.max_depth = positive(v, "maxDepth")?;
    }
    if let Some(v) = w.one_shot_context_max {
        c.calls.one_shot_context_max = v;
    }
    Ok((c, w.store_path.map(PathBuf::from)))
}

pub fn parse_encoding(s: &str, field: &str) -> Result<Encoding, ServiceError> {
    Encoding::parse(s).ok_or_else(|| {
        ServiceError::InvalidParams(format!(
            "{field}: expected o200k_base or cl100k_base, got {s:?}"
        ))
    })
}

pub fn parse_order(s: &str, field: &str) -> Result<LayerOrder, ServiceError> {
    LayerOrder::parse(s).ok_or_else(|| {
        ServiceError::InvalidParams(format!(
            "{field}: expected cache-stable or seed003, got {s:?}"
        ))
    })
}

pub fn ingest_settings(c: &Config) -> IngestSettings {
    IngestSettings {
        encoding: c.encoding,
        caps: c.layers.caps(c.budget),
        layers: c.layers.clone(),
        digest: c.digest.clone(),
        redact_secrets: c.redact_secrets,
        memory: c.memory,
    }
}

/// The settings and the store every entry point starts from (the LSP
/// server, the proxy, replay): `settings` (an editor's initializationOptions,
/// or `--config`'s JSON: `settings_text`) over the defaults; the store is
/// `store` (the command line's `--store`), else the settings' `storePath`,
/// else `fallback` (`default_store_path`, or replay's scratch store).
/// Errors name the field or the flag.
pub fn load(
    settings: Value,
    source: SettingsSource,
    store: Option<PathBuf>,
    fallback: impl FnOnce() -> PathBuf,
) -> Result<(Config, PathBuf), ServiceError> {
    let (config, from_settings) = apply(&Config::default(), settings).map_err(|e| {
        ServiceError::InvalidParams(match source {
            SettingsSource::InitializationOptions => format!("initializationOptions.{e}"),
            SettingsSource::ConfigFlag => format!("--config: {e}"),
        })
    })?;
    let path = store.or(from_settings).unwrap_or_else(fallback);
    check_store_location(&path)?;
    Ok((config, path))
}

/// Where settings came from, for their errors to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsSource {
    /// An editor's LSP `initializationOptions`.
    InitializationOptions,
    /// The command line's `--config`.
    ConfigFlag,
}

/// `--config`'s text as settings; the error names the flag.
pub fn settings_text(text: Option<&str>) -> Result<Value, ServiceError> {
    match text {
        None => Ok(Value::Null),
        Some(t) => serde_json::from_str(t)
            .map_err(|e| ServiceError::InvalidParams(format!("--config: not JSON: {e}"))),
    }
}

/// The command line's `--store`, else `$CTXPROXY_STORE`, else the data
/// dir's: for the commands that read a store without settings.
pub fn store_location(store: Option<PathBuf>) -> Result<PathBuf, ServiceError> {
    let path = store.unwrap_or_else(default_store_path);
    check_store_location(&path)?;
    Ok(path)
}

/// A store is a SQLite file: a location that names a database server
/// (`postgres://user@host/db`) would otherwise become a file of that
/// relative name, a silent misconfiguration.
pub fn check_store_location(path: &Path) -> Result<(), ServiceError> {
    let text = path.to_string_lossy();
    let scheme = text.split_once("://").map(|(s, _)| s);
    match scheme {
        Some(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) => {
            Err(ServiceError::InvalidParams(format!(
                "store {text:?}: names a {s} server, and the store is a SQLite file: give a file path (--store, storePath or CTXPROXY_STORE)"
            )))
        }
        _ => Ok(()),
    }
}

/// `$CTXPROXY_STORE`, else `<data dir>/ctxproxy/store.db`.
pub fn default_store_path() -> PathBuf {
    if let Some(p) = std::env::var_os("CTXPROXY_STORE") {
        return PathBuf::from(p);
    }
    data_dir().join("ctxproxy").join("store.db")
}

fn data_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if cfg!(windows) {
        if let Some(d) = env("APPDATA") {
            return d;
        }
    }
    if cfg!(target_os = "macos") {
        if let Some(h) = env("HOME") {
            return h.join("Library").join("Application Support");
        }
    }
    if let Some(d) = env("XDG_DATA_HOME") {
        return d;
    }
    match env("HOME") {
        Some(h) => h.join(".local").join("share"),
        None => std::env::temp_dir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_store_is_a_file_path_never_a_server_url() {
        for url in [
            "postgres://u@h:5432/ctx",
            "postgresql://localhost/ctx",
            "mysql://a/b",
        ] {
            let e = check_store_location(Path::new(url))
                .unwrap_err()
                .to_string();
            assert!(e.contains("the store is a SQLite file"), "{e}");
        }
        for path in [
            "store.db",
            "/var/lib/ctx/store.db",
            "a:b/store.db",
            "C:\\ctx\\store.db",
            "://x",
        ] {
            assert!(check_store_location(Path::new(path)).is_ok(), "{path}");
        }
        let settings = json!({"storePath": "postgres://u@h/ctx"});
        let e = load(
            settings,
            SettingsSource::InitializationOptions,
            None,
            PathBuf::new,
        )
        .unwrap_err();
        assert!(e.to_string().contains("names a postgres server"), "{e}");
        let e = load(
            json!({"budget": 0}),
            SettingsSource::ConfigFlag,
            None,
            PathBuf::new,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--config: budget"), "{e}");
    }

    fn check(value: Value, expect: &str) {
        let got = match apply(&Config::default(), value) {
            Ok((c, path)) => format!(
                "budget={} enc={} recent={} headerMax={} inline={} redact={} path={:?}",
                c.budget,
                c.encoding.as_str(),
                c.layers.caps(c.budget).recent_full,
                c.layers.caps(c.budget).header_max,
                c.digest.inline_max_tokens,
                c.redact_secrets,
                path
            ),
            Err(e) => format!("error: {e}"),
        };
        assert_eq!(got, expect);
    }

    #[test]
    fn applies_and_names_bad_fields() {
        check(
            json!(null),
            "budget=16000 enc=o200k_base recent=5 headerMax=12 inline=400 redact=true path=None",
        );
        check(
            json!({"budget": 8000, "encoding": "cl100k_base", "layers": {"recentFull": 3}, "storePath": "/tmp/s.db"}),
            "budget=8000 enc=cl100k_base recent=3 headerMax=12 inline=400 redact=true path=Some(\"/tmp/s.db\")",
        );
        check(
            json!({"ctx": {"redactSecrets": false}}),
            "budget=16000 enc=o200k_base recent=5 headerMax=12 inline=400 redact=false path=None",
        );
        check(
            json!({"encoding": "gpt2"}),
            "error: encoding: expected o200k_base or cl100k_base, got \"gpt2\"",
        );
        check(
            json!({"layers": {"headerMax": "x"}}),
            "error: layers.headerMax: invalid type: string \"x\", expected u32",
        );
        check(json!({"budget": 0}), "error: budget: must be at least 1");
        check(
            json!({"layers": {"recentfull": 1}}),
            "error: layers: unknown field `recentfull`, did you mean `recentFull`?",
        );
        check(
            json!({"Budget": 50}),
            "error: unknown field `Budget`, did you mean `budget`?",
        );
        // The layers that hold history are sized by the budget unless pinned.
        check(
            json!({"ctx": {"budget": 900}, "python": {"x": 1}}),
            "budget=900 enc=o200k_base recent=3 headerMax=12 inline=400 redact=true path=None",
        );
        check(
            json!({"budget": 64000}),
            "budget=64000 enc=o200k_base recent=20 headerMax=12 inline=400 redact=true path=None",
        );
        check(
            json!({"budget": 64000, "layers": {"recentFull": 5, "recallMax": 0}}),
            "budget=64000 enc=o200k_base recent=5 headerMax=12 inline=400 redact=true path=None",
        );
    }
}
