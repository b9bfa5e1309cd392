//! Opening a proxy (the store, the settings, the listener) and serving it
//! until a shutdown signal or its caller's future, then checkpointing the
//! store (`ctxproxy proxy` and `ctxproxy run`).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use ctxproxy_service::service::Service;

use crate::router::router;
use crate::{listen, tally, Access, Options, Proxy};

/// `ctxproxy proxy`: serves until SIGTERM or Ctrl-C, whom `access` admits;
/// open access serves loopback only.
pub async fn serve(options: Options, listen: SocketAddr, access: Access) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() && access.is_open() {
        anyhow::bail!(
            "--listen {listen}: not a loopback address; give --token T or --tokens FILE to accept requests from other hosts"
        );
    }
    let opened = open(options, listen, access, false).await?;
    eprintln!("ctxproxy proxy listening on http://{}", opened.addr);
    opened.serve_until(shutdown_signal()).await?;
    Ok(())
}

/// A proxy bound to its address, not yet serving.
pub struct Opened {
    pub addr: SocketAddr,
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    deadlines: listen::Deadlines,
}

/// Opens the store and binds `listen`; with `tally`, the proxy keeps what
/// each session was sent and forwarded (`Opened::serve_until` returns it).
pub async fn open(
    args: Options,
    listen: SocketAddr,
    access: Access,
    tally: bool,
) -> anyhow::Result<Opened> {
    let project = args
        .project
        .as_deref()
        .map(crate::project::directory_project)
        .transpose()
        .context("--project")?;
    let settings = ctxproxy_service::config::settings_text(args.config.as_deref())?;
    let (config, store_path) = ctxproxy_service::config::load(
        settings,
        ctxproxy_service::config::SettingsSource::ConfigFlag,
        args.store,
        ctxproxy_service::config::default_store_path,
    )?;
    if let Some(dir) = store_path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::thread::spawn(ctxproxy_core::tokens::warm_up);
    let service = Service::open(store_path, config, None)?;
    let mut proxy = Proxy::new(service, args.upstreams, args.timeouts, access)?;
    proxy.tally = tally.then(tally::Tally::default);
    proxy.project = project;
    let proxy = Arc::new(proxy);
    crate::trim::map_large_blocks();
    tokio::spawn(proxy.trimmer.clone().run(proxy.history_cache.clone()));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    Ok(Opened {
        addr: listener.local_addr()?,
        proxy,
        listener,
        deadlines: listen::Deadlines {
            headers: args.timeouts.header,
            shutdown: args.timeouts.shutdown,
        },
    })
}

impl Opened {
    /// Serves until `shutdown` completes and the requests in flight finish
    /// (or `--shutdown-timeout` passes), then checkpoints the store. Returns
    /// the tally, when kept.
    pub async fn serve_until(
        self,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<Vec<tally::SessionTally>> {
        let Opened {
            proxy,
            listener,
            deadlines,
            ..
        } = self;
        let cancelled = listen::serve(listener, router(proxy.clone()), deadlines, shutdown).await;
        if cancelled > 0 {
            eprintln!(
                "ctxproxy proxy: {cancelled} connection(s) still busy after {:?}: cancelled, nothing recorded for their turns",
                deadlines.shutdown
            );
        }
        let exporting = proxy.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(t) = &exporting.traces {
                t.shutdown();
            }
        })
        .await;
        proxy.service.checkpoint().await?;
        Ok(proxy
            .tally
            .as_ref()
            .map(tally::Tally::sessions)
            .unwrap_or_default())
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
