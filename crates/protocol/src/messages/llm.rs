//! Local LLM completions (section 7.6).

use serde::Deserialize;
use serde::Serialize;

use crate::values::lenient_int;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// A chat role. Unknown roles decode; the handler skips those messages (14 #14).
    open ChatRole {
        /// System prompt.
        System => "system",
        /// User turn.
        User => "user",
        /// Assistant turn.
        Assistant => "assistant",
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ChatMessage {
    /// Role.
    pub role: ChatRole,
    /// Text.
    pub content: String,
}

/// `LOCAL_LLM_COMPLETION`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct LocalLlmCompletion {
    /// Model name.
    pub model: String,
    /// The conversation.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub messages: Vec<ChatMessage>,
    /// Token cap.
    #[serde(default = "default_max_tokens", deserialize_with = "lenient_int::de")]
    pub max_tokens: u32,
    /// Sampling temperature.
    #[serde(default)]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub temperature: f64,
    /// Nucleus sampling.
    #[serde(default = "default_top_p")]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub top_p: f64,
    /// Stream chunks (the platform always sends true).
    #[serde(default = "super::default_true")]
    pub stream: bool,
}

fn default_max_tokens() -> u32 {
    1024
}
fn default_top_p() -> f64 {
    1.0
}

wire_enum! {
    /// Why generation stopped.
    closed FinishReason {
        /// Natural stop.
        Stop => "stop",
        /// Token cap reached.
        Length => "length",
        /// Filtered.
        ContentFilter => "content_filter",
    }
}

/// `LOCAL_LLM_COMPLETION_CHUNK` (non-terminal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct LocalLlmCompletionChunk {
    /// New text.
    pub delta: String,
    /// Set on the final chunk only.
    pub finish_reason: Option<FinishReason>,
}

/// Token counts; `total` only when both are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct TokenCounts {
    /// Prompt tokens.
    pub prompt: Option<u64>,
    /// Completion tokens.
    pub completion: Option<u64>,
    /// Sum.
    pub total: Option<u64>,
}

/// `LOCAL_LLM_COMPLETION_RESPONSE` (terminal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct LocalLlmCompletionResponse {
    /// All deltas concatenated.
    pub content: String,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Token counts.
    pub tokens: TokenCounts,
    /// Backend wall time.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub duration_seconds: f64,
}
