//! Serving the proxy's connections: hyper with a deadline on each
//! request's headers (a client that sends them a byte at a time cannot
//! hold a connection, even before its token is checked), and a shutdown
//! that waits for the requests in flight only so long.
//!
//! `axum::serve` sets neither: it gives hyper no timer, so hyper's header
//! timeout never fires, and its graceful shutdown waits for every
//! connection however long an upstream takes.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long a connection may take over what it must send.
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    /// For a request's headers, from its first byte (or the connection's
    /// start) to its blank line.
    pub headers: Duration,
    /// For the requests in flight once a shutdown starts.
    pub shutdown: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, then lets the
/// requests in flight finish for `deadlines.shutdown` at most and cancels
/// the rest: their connections are dropped, so their turns record nothing
/// (a streamed reply's pump sees its client gone). Returns how many were
/// cancelled.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    deadlines: Deadlines,
    shutdown: impl Future<Output = ()>,
) -> usize {
    // Dropping the sender tells every connection to finish its request and close.
    let (stop, stopping) = watch::channel(());
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        // Reap the connections that ended, so the set holds live ones only.
        while connections.try_join_next().is_some() {}
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors and the like: wait, as axum::serve does.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(deadlines.headers);
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stopping.changed() => connection.as_mut().graceful_shutdown(),
            }
            let _ = connection.await;
        });
    }
    drop(listener);
    drop(stop);
    let drained = tokio::time::timeout(deadlines.shutdown, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_ok() {
        return 0;
    }
    let cancelled = connections.len();
    connections.shutdown().await;
    cancelled
}
