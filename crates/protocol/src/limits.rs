//! Size limits and defaults fixed by the protocol (sections 2.3, 5.3, 10.2).

/// Maximum WebSocket message size in both directions: 16 MiB.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// The platform's cap on the `HELLO` frame: 64 KiB.
pub const MAX_HELLO_BYTES: usize = 64 * 1024;
/// Headroom reserved for the envelope when budgeting content.
pub const ENVELOPE_HEADROOM_BYTES: usize = 64 * 1024;
/// Largest text content that cannot exceed the frame limit even if every byte becomes a
/// six-byte `\u00XX` escape: `(16 MiB - 64 KiB) / 6`.
pub const MAX_WIRE_TEXT_CONTENT_BYTES: usize = (MAX_FRAME_BYTES - ENVELOPE_HEADROOM_BYTES) / 6;
/// Largest raw content that fits the frame limit once base64-encoded.
pub const MAX_WIRE_BASE64_CONTENT_BYTES: usize =
    (MAX_FRAME_BYTES - ENVELOPE_HEADROOM_BYTES) * 3 / 4;
/// Longest WebSocket close reason, in bytes (RFC 6455).
pub const MAX_CLOSE_REASON_BYTES: usize = 123;
/// Deepest JSON nesting the decoder accepts.
pub const MAX_NESTING_DEPTH: usize = 128;

/// Default `max_file_size_bytes` (local and platform): 10 MiB.
pub const DEFAULT_MAX_FILE_SIZE_BYTES: u64 = 10 * 1024 * 1024;
/// Default `command_timeout_seconds`.
pub const DEFAULT_COMMAND_TIMEOUT_SECONDS: u64 = 30;
/// Default per-connection `max_concurrent`.
pub const DEFAULT_MAX_CONCURRENT: u32 = 4;
/// Commands per sliding minute, machine-wide.
pub const DEFAULT_COMMANDS_PER_MINUTE: u32 = 60;
/// Concurrent commands, machine-wide.
pub const DEFAULT_MAX_CONCURRENT_COMMANDS: u32 = 10;
/// Screenshots per sliding minute, machine-wide.
pub const DEFAULT_SCREENSHOTS_PER_MINUTE: u32 = 10;
/// Live child runtimes in machine control mode.
pub const MAX_CHILD_RUNTIMES: usize = 8;
/// Session bindings kept in memory.
pub const MAX_SESSION_BINDINGS: usize = 64;
/// Outstanding platform requests per connection (enforced by the platform).
pub const MAX_OUTSTANDING_REQUESTS: usize = 256;
