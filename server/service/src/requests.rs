//! The proxy's request log through the service: each model request logged
//! when it ends, read back by `show-prompt` and the proxy's dashboard.

pub use ctxproxy_store::{LoggedRequest, RequestLog, SessionRequests};

use crate::service::{prompt_id_of, Service, ServiceError};

type Reply<T> = Result<T, ServiceError>;

impl Service {
    /// Logs a model request once it has ended (the reply recorded, or the
    /// failure known). The write is queued at this call, in order with the
    /// writes and reads after it (a dashboard read sees it); the returned
    /// future only reports how it went, so the request need not wait on it.
    pub fn log_request(
        &self,
        request: RequestLog,
    ) -> impl std::future::Future<Output = Reply<()>> + Send + 'static {
        let pending = self.store.write(move |w| w.log_request(&request));
        async move { Ok(ctxproxy_store::settle(pending).await?) }
    }

    /// A session's logged requests, oldest first.
    pub async fn requests(&self, session: &str) -> Reply<Vec<LoggedRequest>> {
        let session = session.to_string();
        Ok(self.store.read(move |r| r.requests(&session)).await?)
    }

    /// The newest `limit` requests of every session (of `tenant`'s, when
    /// given), oldest first.
    pub async fn recent_requests(
        &self,
        limit: u32,
        tenant: Option<&str>,
    ) -> Reply<Vec<LoggedRequest>> {
        let tenant = tenant.map(str::to_string);
        Ok(self
            .store
            .read(move |r| r.recent_requests(limit, tenant.as_deref()))
            .await?)
    }

    /// The logged request prompt `prompt_id` (`p<N>`) was assembled for.
    pub async fn request_of_prompt(
        &self,
        session: &str,
        prompt_id: &str,
    ) -> Reply<Option<LoggedRequest>> {
        let id = prompt_id_of(prompt_id)?;
        let session = session.to_string();
        Ok(self
            .store
            .read(move |r| r.request_of_prompt(&session, id))
            .await?)
    }

    /// Every session (of `tenant`, when given) with logged requests,
    /// summed, the most recently active first.
    pub async fn sessions_with_requests(
        &self,
        tenant: Option<&str>,
    ) -> Reply<Vec<SessionRequests>> {
        let tenant = tenant.map(str::to_string);
        Ok(self
            .store
            .read(move |r| r.sessions_with_requests(tenant.as_deref()))
            .await?)
    }

    /// Whose a session is (`''`: the local user's).
    pub async fn tenant_of_session(&self, session: &str) -> Reply<String> {
        let session = session.to_string();
        Ok(self
            .store
            .read(move |r| Ok(r.session(&session)?.tenant))
            .await?)
    }
}
