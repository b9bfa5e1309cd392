//! Where `ctxproxy bench` sends its requests: the service in this process,
//! or a spawned `ctxproxy serve` over stdio (`stdio`). The timed loops are
//! written once, over `Target`.

use serde_json::{json, Value};

use ctxproxy_service::api::OpenSessionResult;
use ctxproxy_service::from_json;
use ctxproxy_service::service::Service;

use super::stdio::{RpcResult, StdioServer};

/// A fresh store behind the bench's client.
pub trait Target: Sized {
    /// What the last column of the table shows of an assemble's reply.
    const REPLY_COLUMN: &'static str;
    /// This process's CPU time is the service's: ingest per CPU-second
    /// is shown.
    const CPU_IS_THE_SERVICE: bool;

    async fn open() -> anyhow::Result<Self>;
    /// Opens a session, in `workspace` when it is given; returns its id.
    async fn open_session(
        &mut self,
        title: &str,
        workspace: Option<&str>,
    ) -> anyhow::Result<String>;
    async fn append(&mut self, session: &str, messages: Vec<Value>) -> anyhow::Result<()>;
    /// Assembles a prompt for `input`; returns its `REPLY_COLUMN` figure.
    async fn assemble(&mut self, session: &str, input: &Value) -> anyhow::Result<u64>;
    /// Closes the store as a server closes it, so that nothing is still
    /// writing in the background while the next figures are taken.
    async fn close(self) -> anyhow::Result<()>;
}

fn open_params(title: &str, workspace: Option<&str>) -> Value {
    json!({"title": title, "workspace": workspace})
}

/// The service in this process, on a store in a temporary directory.
pub struct InProcess {
    service: Service,
    _dir: tempfile::TempDir,
}

impl Target for InProcess {
    const REPLY_COLUMN: &'static str = "prompt tok";
    const CPU_IS_THE_SERVICE: bool = true;

    async fn open() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let service = Service::open(dir.path().join("store.db"), Default::default(), None)?;
        Ok(InProcess { service, _dir: dir })
    }

    async fn open_session(
        &mut self,
        title: &str,
        workspace: Option<&str>,
    ) -> anyhow::Result<String> {
        let opened = self
            .service
            .open_session(from_json::parse(open_params(title, workspace))?)
            .await?;
        Ok(opened.session_id)
    }

    async fn append(&mut self, session: &str, messages: Vec<Value>) -> anyhow::Result<()> {
        self.service
            .append(from_json::parse(
                json!({"sessionId": session, "messages": messages}),
            )?)
            .await?;
        Ok(())
    }

    async fn assemble(&mut self, session: &str, input: &Value) -> anyhow::Result<u64> {
        let r = self
            .service
            .assemble(from_json::parse(
                json!({"sessionId": session, "input": input}),
            )?)
            .await?;
        Ok(r.tokens.total as u64)
    }

    async fn close(self) -> anyhow::Result<()> {
        // The log moved into the database file, as a server's close does.
        Ok(self.service.checkpoint().await?)
    }
}

/// A spawned `ctxproxy serve`, spoken to as an editor speaks to it.
impl Target for StdioServer {
    const REPLY_COLUMN: &'static str = "reply bytes";
    const CPU_IS_THE_SERVICE: bool = false;

    async fn open() -> anyhow::Result<Self> {
        let mut server = StdioServer::spawn()?;
        server.call("initialize", json!({"capabilities": {}}))?;
        server.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))?;
        Ok(server)
    }

    async fn open_session(
        &mut self,
        title: &str,
        workspace: Option<&str>,
    ) -> anyhow::Result<String> {
        let opened: RpcResult<OpenSessionResult> =
            serde_json::from_slice(&self.call("ctx/openSession", open_params(title, workspace))?)?;
        Ok(opened.result.session_id)
    }

    async fn append(&mut self, session: &str, messages: Vec<Value>) -> anyhow::Result<()> {
        self.call(
            "ctx/append",
            json!({"sessionId": session, "messages": messages}),
        )?;
        Ok(())
    }

    async fn assemble(&mut self, session: &str, input: &Value) -> anyhow::Result<u64> {
        let reply = self.call(
            "ctx/assemble",
            json!({"sessionId": session, "input": input}),
        )?;
        Ok(reply.len() as u64)
    }

    async fn close(self) -> anyhow::Result<()> {
        // Dropping it ends the server.
        Ok(())
    }
}
