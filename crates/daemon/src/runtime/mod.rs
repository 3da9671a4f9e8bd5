//! The daemon while it runs: everything between the platform's WebSocket and the jail, the
//! executor, the desktop and the audit log.
//!
//! Layers, each file using only those listed before it:
//!
//! * `alloc`, [`harden`]: process set-up before anything else runs.
//! * [`handshake`], [`grant`]: pure protocol pieces (HELLO / HELLO_ACK, root grants).
//! * `auditor`, `blocking`, `session_locks`: the audit writer handle, blocking work that
//!   is audited even when its request is cancelled, per-session locks.
//! * `board`: what the runtimes report for `status` and the console (connections,
//!   operations, errors).
//! * [`approvals`]: commands the policy holds for the local user's answer.
//! * `notify`: desktop notifications with Approve / Deny buttons for them.
//! * `llm`: the local-model route (Ollama discovery and completions).
//! * `hw`: hardware advertisement and the PROPOSED operations.
//! * `desktop` (Linux): the isolated desktop's X server and window manager.
//! * `cu`: computer-use state and dispatch.
//! * `netwatch`: wake-up and address-change detection.
//! * `machine`: the process-wide state (settings, identity, audit, limits, tokens).
//! * `status`: the `status` snapshot built from the machine and the board.
//! * `data`: dispatch of data requests to the jail and the executor.
//! * `conn`: one runtime's connection loop; it reaches the control plane only through the
//!   `conn::ControlPlane` trait.
//! * `control`: the machine control plane (browsing, root grants, child runtimes).
//! * `steer`: the local user's actions (pause, resume, kill, approve), audited.
//! * `console`: the local web console (login, live state, buttons).
//! * `pipe` (Windows): the control socket's named pipe, admitting only this user.
//! * `ipc_server`: the local control socket (`approve`, `deny`, `pause`, ...).
//! * [`start`]: the daemon's one way in, legacy direct mode or machine control mode.

pub(crate) mod alloc;
pub mod approvals;
pub(crate) mod auditor;
pub(crate) mod blocking;
pub(crate) mod board;
pub(crate) mod conn;
pub(crate) mod console;
pub(crate) mod control;
pub(crate) mod cu;
pub(crate) mod data;
pub(crate) mod desk;
#[cfg(target_os = "linux")]
pub(crate) mod desktop;
#[cfg(windows)]
pub(crate) mod file_id;
pub mod grant;
pub mod handshake;
pub mod harden;
pub(crate) mod hw;
#[cfg(any(unix, windows))]
pub(crate) mod ipc_server;
pub(crate) mod llm;
pub(crate) mod machine;
pub(crate) mod netwatch;
pub(crate) mod notify;
#[cfg(windows)]
pub(crate) mod pipe;
pub(crate) mod session_locks;
pub mod start;
pub(crate) mod status;
pub(crate) mod steer;
