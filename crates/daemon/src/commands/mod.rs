//! The user's commands besides `start` (AUDIT_AUTH_CLI.md 5): each uses the configuration and
//! the [`crate::runtime`]; the runtime never uses them.
//!
//! * [`demo`]: the self-contained demo against the embedded loopback platform peer.
//! * [`doctor`]: the environment checks of 5.5.
//! * [`autostart`]: the entries `install` writes and `uninstall` removes (5.4).
//! * `auth`: `auth` (OAuth login) and `revoke`.
//! * [`local`]: `approve`, `deny`, `approvals`, `pause`, `resume`, live `status` (through the
//!   local control socket) and `policy check`.
//! * [`update`]: `update`, the signed self-update.

pub(crate) mod auth;
pub mod autostart;
pub mod demo;
pub mod doctor;
pub mod local;
pub mod update;
