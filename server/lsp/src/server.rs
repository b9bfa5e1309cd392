//! tower-lsp-server wiring: the standard lifecycle plus every `ctx/` method,
//! each a thin call into `Service`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use ctxproxy_core::config::Config;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use crate::frames::{frame_limit, FrameLimit};
use ctxproxy_service::api::{to_wire, CtxEvent, OpenSessionParams};
use ctxproxy_service::config;
use ctxproxy_service::from_json;
use ctxproxy_service::service::{Reply, Service, ServiceError};

/// `ctx/event`: a state change, pushed to the client.
enum EventNotification {}

impl Notification for EventNotification {
    type Params = CtxEvent;
    const METHOD: &'static str = "ctx/event";
}

pub struct Backend {
    client: Client,
    /// `--store` from the command line; wins over initializationOptions.
    store_override: Option<PathBuf>,
    /// Set by `shutdown`: the exit code is 0 only after it (LSP).
    shut_down: Arc<AtomicBool>,
    service: OnceLock<Arc<Service>>,
    /// The client's root folder (`initialize`): the project of a session
    /// opened without a `workspace`.
    root_folder: OnceLock<String>,
    /// The stdio guard's frame limit, following `maxPayloadBytes`.
    frame_limit: FrameLimit,
}

fn rpc_error(e: ServiceError) -> Error {
    coded_error(e.code(), &e)
}

/// An error with the JSON-RPC code PROTOCOL.md assigns, its text the message.
fn coded_error(code: i64, e: &dyn std::fmt::Display) -> Error {
    Error {
        code: ErrorCode::from(code),
        message: e.to_string().into(),
        data: None,
    }
}

fn reply<T: Serialize>(r: Reply<T>) -> Result<Value> {
    r.map(|v| to_wire(&v)).map_err(rpc_error)
}

/// A method's params from their JSON, an error naming the field. Parsed
/// before the call's first `.await`, so its store job keeps its place in
/// the order requests arrived.
fn params<P: DeserializeOwned>(p: Value) -> Result<P> {
    from_json::parse(p).map_err(rpc_error)
}

/// The first workspace folder the client names, else its root URI, as a
/// path when it is a file URI.
#[allow(deprecated)] // `root_uri`: what clients without folders still send.
fn root_folder(params: &InitializeParams) -> Option<String> {
    let uri = params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| &f.uri)
        .or(params.root_uri.as_ref())?;
    let path = uri.to_file_path()?;
    Some(path.display().to_string())
}

impl Backend {
    fn service(&self) -> Result<&Arc<Service>> {
        self.service.get().ok_or_else(|| {
            rpc_error(ServiceError::StoreUnavailable {
                why: "the store is not open".into(),
                source: None,
            })
        })
    }

    async fn open_session(&self, p: Value) -> Result<Value> {
        let mut p: OpenSessionParams = params(p)?;
        // A fork or a call keeps its parent's project.
        if p.workspace.is_none() && p.parent.is_none() {
            p.workspace = self.root_folder.get().cloned();
        }
        reply(self.service()?.open_session(p).await)
    }
    async fn append(&self, p: Value) -> Result<Value> {
        reply(self.service()?.append(params(p)?).await)
    }
    async fn assemble(&self, p: Value) -> Result<Value> {
        reply(self.service()?.assemble(params(p)?).await)
    }
    async fn retrieve(&self, p: Value) -> Result<Value> {
        reply(self.service()?.retrieve(params(p)?).await)
    }
    async fn search(&self, p: Value) -> Result<Value> {
        reply(self.service()?.search(params(p)?).await)
    }
    /// The error's message is the text the proxy gives a model for the
    /// same call, so a chat loop can hand either to its model.
    async fn call_context_tool(&self, p: Value) -> Result<Value> {
        let answer = self.service()?.call_context_tool(params(p)?).await;
        answer
            .map(|v| to_wire(&v))
            .map_err(|e| coded_error(e.code(), &e))
    }
    async fn explain(&self, p: Value) -> Result<Value> {
        reply(self.service()?.explain(params(p)?).await)
    }
    async fn housekeeping(&self, p: Value) -> Result<Value> {
        reply(self.service()?.housekeeping(params(p)?).await)
    }
    async fn list_sessions(&self, p: Value) -> Result<Value> {
        reply(self.service()?.list_sessions(params(p)?).await)
    }
    async fn list_exchanges(&self, p: Value) -> Result<Value> {
        reply(self.service()?.list_exchanges(params(p)?).await)
    }
    async fn stats(&self, p: Value) -> Result<Value> {
        reply(self.service()?.stats(params(p)?).await)
    }
    async fn path(&self, p: Value) -> Result<Value> {
        reply(self.service()?.path(params(p)?).await)
    }
}

impl Backend {
    fn follow_payload_limit(&self, service: &Service) {
        let limit = frame_limit(service.config().max_payload_bytes);
        self.frame_limit.store(limit, Ordering::Relaxed);
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        if let Some(root) = root_folder(&params) {
            let _ = self.root_folder.set(root);
        }
        let options = params.initialization_options.unwrap_or(Value::Null);
        let (config, store_path) = config::load(
            options,
            config::SettingsSource::InitializationOptions,
            self.store_override.clone(),
            config::default_store_path,
        )
        .map_err(rpc_error)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<CtxEvent>();
        let service = Service::open(store_path.clone(), config, Some(tx)).map_err(rpc_error)?;
        self.follow_payload_limit(&service);
        let _ = self.service.set(Arc::new(service));
        let client = self.client.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                client.send_notification::<EventNotification>(event).await;
            }
        });
        Ok(InitializeResult {
            capabilities: ServerCapabilities::default(),
            server_info: Some(ServerInfo {
                name: "ctxproxy".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        if let Ok(s) = self.service() {
            let path = s.store_path().display().to_string();
            self.client
                .log_message(MessageType::INFO, format!("ctxproxy: store at {path}"))
                .await;
        }
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let Ok(service) = self.service() else { return };
        let applied = match config::apply(&service.config(), params.settings) {
            Ok((next, _)) => service.configure(next).await,
            Err(e) => Err(e),
        };
        self.follow_payload_limit(service);
        if let Err(e) = applied {
            self.client
                .show_message(
                    MessageType::ERROR,
                    format!("ctxproxy: configuration not applied: {e}"),
                )
                .await;
        }
    }

    async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        // A clean exit leaves the whole store in store.db, none in the WAL.
        if let Ok(service) = self.service() {
            let _ = service.checkpoint().await;
        }
        Ok(())
    }
}

/// Serves LSP on stdio until `exit` or the end of input; returns the exit
/// code LSP asks for: 0 after `shutdown`, 1 otherwise.
pub async fn serve(store_override: Option<PathBuf>) -> i32 {
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = shut_down.clone();
    let limit: FrameLimit = Arc::new(frame_limit(Config::default().max_payload_bytes).into());
    let backend_limit = limit.clone();
    let (service, socket) = LspService::build(move |client| Backend {
        client,
        store_override,
        shut_down: flag,
        service: OnceLock::new(),
        root_folder: OnceLock::new(),
        frame_limit: backend_limit,
    })
    .custom_method("ctx/openSession", Backend::open_session)
    .custom_method("ctx/append", Backend::append)
    .custom_method("ctx/assemble", Backend::assemble)
    .custom_method("ctx/retrieve", Backend::retrieve)
    .custom_method("ctx/search", Backend::search)
    .custom_method("ctx/callContextTool", Backend::call_context_tool)
    .custom_method("ctx/explain", Backend::explain)
    .custom_method("ctx/housekeeping", Backend::housekeeping)
    .custom_method("ctx/listSessions", Backend::list_sessions)
    .custom_method("ctx/listExchanges", Backend::list_exchanges)
    .custom_method("ctx/stats", Backend::stats)
    .custom_method("ctx/path", Backend::path)
    .finish();
    let (input, output, flushed) = crate::frames::guard_stdio(limit);
    Server::new(input, output, socket).serve(service).await;
    // Let the last replies reach stdout before the process ends.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), flushed).await;
    if shut_down.load(Ordering::SeqCst) {
        0
    } else {
        1
    }
}
