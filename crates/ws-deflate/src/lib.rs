//! `permessage-deflate` (RFC 7692) as a byte-stream layer under tungstenite.
//!
//! tungstenite 0.30 implements no WebSocket extension and fails the connection on any
//! frame with RSV1 set, so compression cannot be added on top of it. [`DeflateStream`] goes
//! underneath instead: it wraps the socket (after TLS), passes the HTTP upgrade through,
//! reads the agreed parameters from the `Sec-WebSocket-Extensions` header of the upgrade
//! response, and from then on rewrites frames: compressed messages from the peer become
//! plain frames for tungstenite, and large plain messages from tungstenite leave compressed.
//! [`negotiate`] has the header logic for both sides.

pub mod negotiate;
mod pack;
mod stream;

pub use negotiate::NegotiationError;
pub use negotiate::Params;
pub use negotiate::ServerLimits;
pub use stream::DeflateStream;
pub use stream::Options;
pub use stream::Role;
