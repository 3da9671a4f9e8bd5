//! Wire types of the AutoGPT local executor protocol, version 1.1.
//!
//! This crate is types only: serde derives, a decoder that never panics and an encoder
//! whose output the platform accepts. It performs no I/O. The normative reference is
//! `PROTOCOL.md` of the specification; section numbers in doc comments refer to it.
//!
//! ```
//! use shim_protocol::frame;
//! use shim_protocol::messages::Message;
//!
//! let f = frame::decode(r#"{"type":"PING","id":"p1","ts":1.5,"payload":{}}"#).unwrap();
//! assert!(matches!(f.message, Message::Ping(_)));
//! let pong = frame::encode_shim(&f.id, 2.0, None, &Message::Pong(Default::default())).unwrap();
//! assert!(pong.contains(r#""pending_capacity":null"#));
//! ```

#[cfg(any(test, feature = "arbitrary"))]
pub mod arb;
pub mod close;
pub mod error;
pub mod frame;
pub mod hello_rules;
pub mod limits;
pub mod messages;
#[cfg(feature = "schema")]
pub mod schema;
pub mod values;
pub mod version;
mod wire_enum;

#[cfg(test)]
mod roundtrip_tests;

pub use error::ErrorCode;
pub use error::ErrorPayload;
pub use frame::DecodeError;
pub use frame::EncodeError;
pub use frame::Frame;
pub use messages::Message;
pub use messages::MessageType;
pub use values::Capability;
pub use values::SessionId;
