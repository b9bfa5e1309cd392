//! The model APIs behind the proxy: which upstream a path goes to, the
//! headers that cross (a denylist: an allowlist drops headers clients need,
//! such as `openai-project`), and the reqwest client that calls them.

use axum::http::header::{CONNECTION, CONTENT_TYPE};
use std::time::Duration;

use axum::http::{HeaderMap, Method};
use bytes::Bytes;

/// Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the transport sets
/// again; never forwarded in either direction, nor any header a message's
/// own `Connection` names.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// The model APIs' base URLs: OpenAI's serves Chat Completions and
/// Responses.
#[derive(Clone, Debug)]
pub struct Upstreams {
    pub openai: String,
    pub anthropic: String,
    pub gemini: String,
}

impl Upstreams {
    /// The real APIs' base URLs, the command line's defaults.
    pub const OPENAI: &'static str = "https://api.openai.com";
    pub const ANTHROPIC: &'static str = "https://api.anthropic.com";
    pub const GEMINI: &'static str = "https://generativelanguage.googleapis.com";

    /// `/v1/messages*` (and `/messages*`) go to Anthropic, `/v1beta/*`
    /// (and `/v1/models/*:…`, Gemini's methods) to Gemini, every other path
    /// to OpenAI; the path is appended to the base URL.
    pub fn url_for(&self, path_and_query: &str) -> String {
        let path = path_and_query.split('?').next().unwrap_or("");
        let base = if path.starts_with("/v1/messages") || path.starts_with("/messages") {
            &self.anthropic
        } else if path.starts_with("/v1beta/")
            || (path.starts_with("/v1/models/") && path.contains(':'))
        {
            &self.gemini
        } else {
            &self.openai
        };
        format!("{}{}", base.trim_end_matches('/'), path_and_query)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("upstream {url} is unreachable: {reason}")]
pub struct Unreachable {
    pub url: String,
    /// The transport's reason, without the URL (already named) and so
    /// without anything a query string could carry.
    pub reason: String,
    #[source]
    pub source: reqwest::Error,
}

/// The hop-by-hop headers of a message: the standard set and every header
/// its `Connection` names (RFC 9110 §7.6.1), lowercased.
fn hop_by_hop(headers: &HeaderMap) -> Vec<String> {
    let named = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty());
    HOP_BY_HOP
        .iter()
        .map(|n| n.to_string())
        .chain(named)
        .collect()
}

/// Whether the proxy reads the upstream's answer itself (a model call) or
/// relays its bytes as they come (`passthrough`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    Yes,
    No,
}

/// What the proxy forwards of a client's request headers: all but the
/// hop-by-hop ones, `host`, and ctxproxy's own `x-ctxproxy-*`. When the
/// proxy reads the answer itself (`Decoded::Yes`), `accept-encoding` goes
/// too, so that the upstream answers in plain bytes.
pub fn request_headers(incoming: &HeaderMap, decoded: Decoded) -> HeaderMap {
    let hop_by_hop = hop_by_hop(incoming);
    let mut out = HeaderMap::new();
    for (name, value) in incoming {
        let n = name.as_str();
        if hop_by_hop.iter().any(|h| h == n)
            || n == "host"
            || n.starts_with("x-ctxproxy-")
            || (decoded == Decoded::Yes && n == "accept-encoding")
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Whether the proxy rewrote a response's body (spliced rounds, our own
/// events) or relays the upstream's bytes as they came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rewritten {
    Yes,
    No,
}

/// The upstream's response headers the client gets: all but the hop-by-hop
/// ones; when the proxy rewrote the body, its encoding headers go too.
pub fn response_headers(upstream: &HeaderMap, rewritten: Rewritten) -> HeaderMap {
    let hop_by_hop = hop_by_hop(upstream);
    let mut out = HeaderMap::new();
    for (name, value) in upstream {
        let n = name.as_str();
        if hop_by_hop.iter().any(|h| h == n)
            || (rewritten == Rewritten::Yes && n == "content-encoding")
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Whether a response's body is JSON (`application/json`, any parameters).
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// The HTTP client; one per proxy, its connections pooled.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
}

impl Client {
    /// `idle`: how long the upstream may go without sending a byte (for
    /// its status, or within its body) before the request fails.
    pub fn new(idle: Duration) -> Result<Client, reqwest::Error> {
        // reqwest is built without a crypto provider (aws-lc-rs needs cmake
        // and nasm); ring is installed here, once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Ok(Client {
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(30))
                .read_timeout(idle)
                .build()?,
        })
    }

    /// Sends a request and returns once the upstream's status and headers
    /// are known; the body streams after.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, Unreachable> {
        self.http
            .request(method, url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|source| Unreachable {
                url: url.split('?').next().unwrap_or(url).to_string(),
                reason: reason_of(&source),
                source,
            })
    }
}

/// The innermost cause of a transport error (`Connection refused`), which
/// reqwest's own message hides behind "error sending request".
fn reason_of(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let text = cause.to_string();
    if e.is_timeout() {
        format!("timed out ({text})")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderName;

    #[test]
    fn paths_choose_their_api() {
        let u = Upstreams {
            openai: "http://o.test/".into(),
            anthropic: "http://a.test".into(),
            gemini: "http://g.test".into(),
        };
        assert_eq!(
            u.url_for("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
            "http://g.test/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            u.url_for("/v1/models/gemini-2.5-pro:generateContent"),
            "http://g.test/v1/models/gemini-2.5-pro:generateContent"
        );
        assert_eq!(u.url_for("/v1/responses"), "http://o.test/v1/responses");
        assert_eq!(u.url_for("/v1/messages"), "http://a.test/v1/messages");
        assert_eq!(
            u.url_for("/v1/messages/count_tokens?beta=true"),
            "http://a.test/v1/messages/count_tokens?beta=true"
        );
        assert_eq!(u.url_for("/messages"), "http://a.test/messages");
        assert_eq!(u.url_for("/v1/models"), "http://o.test/v1/models");
        assert_eq!(
            u.url_for("/chat/completions"),
            "http://o.test/chat/completions"
        );
    }

    #[test]
    fn headers_cross_by_denylist() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("authorization", "Bearer k"),
            ("openai-project", "proj"),
            ("anthropic-beta", "b"),
            ("host", "localhost"),
            ("connection", "keep-alive"),
            ("content-length", "12"),
            ("accept-encoding", "gzip"),
            ("x-ctxproxy-token", "t"),
        ] {
            h.append(HeaderName::from_static(k), v.parse().unwrap());
        }
        let kept = |decoded| {
            let mut names: Vec<String> = request_headers(&h, decoded)
                .keys()
                .map(|k| k.to_string())
                .collect();
            names.sort();
            names
        };
        assert_eq!(
            kept(Decoded::No),
            [
                "accept-encoding",
                "anthropic-beta",
                "authorization",
                "openai-project"
            ]
        );
        assert_eq!(
            kept(Decoded::Yes),
            ["anthropic-beta", "authorization", "openai-project"]
        );
    }
}
