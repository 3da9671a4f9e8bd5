//! Wire types of the AutoGPT local executor protocol, version 1.1.
//!
//! # What it is for
//!
//! Anything that speaks to the AutoGPT platform as an executor, or stands in for the
//! platform in tests, needs the same frames: a versioned envelope (`type`, `id`, `ts`,
//! `payload`) around one of the typed messages of the specification. This crate is those
//! types only: serde derives, a decoder that never panics on any input, and an encoder
//! whose output the platform accepts. It performs no I/O and has no async runtime, so it
//! fits any transport (WebSocket, pipes, a file of recorded frames). The normative
//! reference is `PROTOCOL.md` of the specification; section numbers in doc comments refer
//! to it.
//!
//! # The one way in
//!
//! * Incoming text goes through [`frame::decode`] (or [`frame::decode_bytes`]) into a
//!   [`Frame`]: the envelope plus a [`Message`], an enum with one variant per message type.
//!   A frame that cannot be decoded is a [`DecodeError`], which tells whether an `ERROR`
//!   reply is owed (section 3.6).
//! * Outgoing messages go through [`frame::encode_shim`] (executor side) or
//!   [`frame::encode_platform`] (platform side).
//! * Failures are answered with [`Message::Error`] carrying an [`ErrorPayload`]; the
//!   [`ErrorCode`] enum is the stable list of wire codes every other crate maps to.
//!
//! # Example
//!
//! Decode a request from the platform, act on it and encode the answer:
//!
//! ```
//! use shim_protocol::ErrorCode;
//! use shim_protocol::ErrorPayload;
//! use shim_protocol::Message;
//! use shim_protocol::frame;
//!
//! let incoming = r#"{"type":"EXECUTE_COMMAND","id":"req-1","ts":1.5,
//!                    "payload":{"argv":["echo","hi"],"timeout_seconds":5}}"#;
//! let f = frame::decode(incoming)?;
//! let reply = match &f.message {
//!     Message::ExecuteCommand(cmd) => {
//!         assert_eq!(cmd.argv.as_deref(), Some(&["echo".to_owned(), "hi".to_owned()][..]));
//!         // This executor refuses commands.
//!         Message::Error(ErrorPayload::new(ErrorCode::CapabilityNotGranted, "commands are off"))
//!     }
//!     other => Message::Error(ErrorPayload::new(
//!         ErrorCode::FeatureNotSupported,
//!         format!("{:?} is not supported", other.message_type()),
//!     )),
//! };
//! // Same id as the request; 2.0 is our clock; no pending-capacity signal.
//! let text = frame::encode_shim(&f.id, 2.0, None, &reply)?;
//! assert!(text.contains(r#""type":"ERROR""#));
//! assert!(text.contains(r#""code":"CAPABILITY_NOT_GRANTED""#));
//!
//! // Garbage never panics; it is a typed error.
//! assert!(frame::decode("{not json").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Feature flags
//!
//! Both are off by default; a normal embedder needs neither.
//!
//! * `arbitrary`: [`proptest`](https://docs.rs/proptest) `Arbitrary` impls of the wire
//!   types (module `arb`), for property tests of this and downstream crates.
//! * `schema`: [`schemars`](https://docs.rs/schemars) `JsonSchema` impls and the module
//!   `schema` that generates the protocol's JSON Schema (used by `cargo xtask codegen`).
//!
//! # Stability
//!
//! Enums that the protocol may extend ([`ErrorCode`], [`DecodeError`], ...) are
//! `#[non_exhaustive]`. The public API is checked against a baseline in CI (see the
//! repository README): a breaking change needs a version bump.

#![deny(missing_docs)]

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
