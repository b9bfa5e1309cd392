//! The command line of `ctxproxy proxy` and `ctxproxy run`'s proxy: clap's
//! arguments, turned into the proxy library's plain `Options` (the library
//! knows no command line).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::TypedValueParser;

use ctxproxy_proxy::{Access, ModelApi, Options, Timeouts, Upstreams};

/// `ctxproxy proxy`'s arguments.
#[derive(clap::Args)]
pub struct ProxyArgs {
    /// Address to listen on; port 0 lets the OS choose (the ready line says which).
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Require `x-ctxproxy-token: T` on every request; needed to listen beyond loopback.
    #[arg(long, value_name = "T", conflicts_with = "tokens")]
    pub token: Option<String>,
    /// Each person a token of their own: FILE holds one `name token` per line, and a person's
    /// sessions are kept apart under their name (instead of their API key's tenant).
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    #[command(flatten)]
    pub options: OptionsArgs,
}

impl ProxyArgs {
    /// Whom the proxy serves: `--tokens`' people, `--token`'s holders, else anyone.
    pub fn access(&self) -> Result<Access, ctxproxy_proxy::TokensError> {
        match (&self.tokens, &self.token) {
            (Some(file), _) => Access::read_tokens(file),
            (None, Some(token)) => Ok(Access::Token(token.clone())),
            (None, None) => Ok(Access::Open),
        }
    }
}

/// What a proxy is run with besides where it listens (`proxy` and `run`).
#[derive(clap::Args)]
pub struct OptionsArgs {
    /// The store database (default: $CTXPROXY_STORE, else <data dir>/ctxproxy/store.db).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Settings as the JSON editors send in initializationOptions, e.g. '{"budget": 24000}'.
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
    /// The project of every request that names none in `x-ctxproxy-project` (for a proxy serving
    /// one project; `run`: the current directory) [default: the directory the assistant states].
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Base URL of the OpenAI-compatible API.
    #[arg(long, default_value = Upstreams::OPENAI)]
    openai_upstream: String,
    /// Base URL of the Anthropic API.
    #[arg(long, default_value = Upstreams::ANTHROPIC)]
    anthropic_upstream: String,
    /// Base URL of the Gemini API.
    #[arg(long, default_value = Upstreams::GEMINI)]
    gemini_upstream: String,
    /// Seconds a client has to send a request's headers (the connection is closed after) [default: 10].
    #[arg(long = "header-timeout", value_name = "SECS", value_parser = seconds)]
    header: Option<Duration>,
    /// Seconds a client has to send a request's body, once its headers are read (a 408 after) [default: 60].
    #[arg(long = "body-timeout", value_name = "SECS", value_parser = seconds)]
    body: Option<Duration>,
    /// Seconds the upstream may go without sending a byte before the request fails [default: 300].
    #[arg(long = "upstream-idle-timeout", value_name = "SECS", value_parser = seconds)]
    upstream_idle: Option<Duration>,
    /// Seconds a shutdown (SIGTERM, Ctrl-C) lets the requests in flight finish before it cancels them [default: 10].
    #[arg(long = "shutdown-timeout", value_name = "SECS", value_parser = seconds)]
    shutdown: Option<Duration>,
}

impl From<OptionsArgs> for Options {
    fn from(a: OptionsArgs) -> Options {
        let defaults = Timeouts::default();
        Options {
            store: a.store,
            config: a.config,
            upstreams: Upstreams {
                openai: a.openai_upstream,
                anthropic: a.anthropic_upstream,
                gemini: a.gemini_upstream,
            },
            timeouts: Timeouts {
                header: a.header.unwrap_or(defaults.header),
                body: a.body.unwrap_or(defaults.body),
                upstream_idle: a.upstream_idle.unwrap_or(defaults.upstream_idle),
                shutdown: a.shutdown.unwrap_or(defaults.shutdown),
            },
            project: a.project,
        }
    }
}

/// Fractions allowed; a number of seconds above zero.
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("expected a positive number of seconds, got {text:?}"))
}

/// `--api`'s values: the APIs by the names `ModelApi::name` gives, listed
/// in the help and in the error for any other.
pub fn model_api() -> impl TypedValueParser<Value = ModelApi> {
    clap::builder::PossibleValuesParser::new(ModelApi::ALL.map(ModelApi::name)).map(|name| {
        ModelApi::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .expect("a possible value names an API")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_proxys() {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            options: OptionsArgs,
        }
        let options: Options = <Only as clap::Parser>::parse_from(["ctxproxy"])
            .options
            .into();
        assert_eq!(options.timeouts, Timeouts::default());
        let parsed = <Only as clap::Parser>::try_parse_from(["ctxproxy", "--body-timeout", "0"]);
        assert!(parsed.is_err(), "zero seconds is refused");
        #[derive(clap::Parser)]
        struct Api {
            #[arg(long, value_parser = model_api())]
            api: ModelApi,
        }
        for api in ModelApi::ALL {
            let parsed = <Api as clap::Parser>::parse_from(["ctxproxy", "--api", api.name()]);
            assert_eq!(parsed.api, api);
        }
        let refused = <Api as clap::Parser>::try_parse_from(["ctxproxy", "--api", "chat"]);
        assert!(refused
            .err()
            .unwrap()
            .to_string()
            .contains("chat-completions"));
    }
}
