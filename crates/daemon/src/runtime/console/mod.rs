//! The local web console (docs/console.md): served by the daemon on 127.0.0.1 at a random
//! port, started with the daemon when `console = true`, or on the first
//! `autogpt-shim console`, which asks over the control socket for a one-time login URL.
//!
//! * `state`: login tokens and session cookies.
//! * `guard`: the checks every request passes (Host, cookie, Origin, body size, headers).
//! * `words`: the audit log in plain words.
//! * `routes`: the pages, the event stream and the buttons.
//! * `live`: the live view of the desktop (a WebSocket) and the user's input during a
//!   take-over.

use std::net::Ipv4Addr;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::runtime::machine::Machine;

pub(crate) mod guard;
pub(crate) mod live;
pub(crate) mod routes;
pub(crate) mod state;
pub(crate) mod words;

use state::ConsoleState;

/// The console of one daemon: started at most once, on demand or at start.
pub(crate) struct ConsoleSlot {
    machine: Arc<Machine>,
    stop: CancellationToken,
    cell: tokio::sync::OnceCell<Arc<ConsoleState>>,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for ConsoleSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSlot").finish_non_exhaustive()
    }
}

impl ConsoleSlot {
    /// A slot whose server (once started) stops when `stop` is cancelled.
    pub(crate) fn new(machine: Arc<Machine>, stop: CancellationToken) -> Arc<ConsoleSlot> {
        Arc::new(ConsoleSlot {
            machine,
            stop,
            cell: tokio::sync::OnceCell::new(),
            task: std::sync::Mutex::new(None),
        })
    }

    /// The running console, started now if needed.
    pub(crate) async fn get_or_start(&self) -> Result<Arc<ConsoleState>, String> {
        self.cell
            .get_or_try_init(|| async {
                let listener =
                    tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
                        .await
                        .map_err(|e| format!("cannot bind 127.0.0.1 for the console: {e}"))?;
                let addr = listener
                    .local_addr()
                    .map_err(|e| format!("cannot read the console's address: {e}"))?;
                let st = Arc::new(ConsoleState::new(self.machine.clone(), addr));
                let app = routes::router(st.clone(), self.stop.clone());
                let stop = self.stop.clone();
                let task = tokio::spawn(async move {
                    let served = axum::serve(listener, app)
                        .with_graceful_shutdown(stop.cancelled_owned())
                        .await;
                    if let Err(e) = served {
                        tracing::error!(error = %e, "the web console stopped");
                    }
                });
                if let Ok(mut t) = self.task.lock() {
                    *t = Some(task);
                }
                tracing::info!(address = %addr, "web console listening (open it with `autogpt-shim console`)");
                Ok(st)
            })
            .await
            .cloned()
    }

    /// Waits (briefly) for the server to stop after `stop` was cancelled.
    pub(crate) async fn stopped(&self) {
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = task {
            let abort = t.abort_handle();
            if tokio::time::timeout(std::time::Duration::from_secs(2), t)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}
