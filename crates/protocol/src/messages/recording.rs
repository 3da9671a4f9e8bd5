//! Workflow recording (section 7.7): reserved in 1.1 and always refused, but parsed.

use serde::Deserialize;
use serde::Serialize;

use crate::wire_enum::wire_enum;

wire_enum! {
    /// Recording mode.
    closed RecordingMode {
        /// Buffer silently, fetch after stop.
        Demonstration => "demonstration",
        /// Stream each step.
        Copilot => "copilot",
    }
}

wire_enum! {
    /// How recorded steps are interpreted.
    closed InterpretationRoute {
        /// Structured extraction, then the cloud.
        ExtractThenCloud => "extract_then_cloud",
        /// A local vision model.
        LocalVlm => "local_vlm",
        /// Screenshots to the cloud.
        ScreenshotsToCloud => "screenshots_to_cloud",
    }
}

#[allow(clippy::derivable_impls)] // the enum comes from wire_enum!
impl Default for InterpretationRoute {
    fn default() -> Self {
        InterpretationRoute::ExtractThenCloud
    }
}

wire_enum! {
    /// A recording channel.
    closed RecordingChannel {
        /// Input events.
        Floor => "floor",
        /// Browser DOM.
        Browser => "browser",
        /// Desktop accessibility tree.
        DesktopAx => "desktop_ax",
    }
}

fn default_channels() -> Vec<RecordingChannel> {
    vec![RecordingChannel::Floor]
}

/// `REQUEST_RECORDING_CONSENT`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RequestRecordingConsent {
    /// Mode.
    pub mode: RecordingMode,
    /// Route.
    #[serde(default)]
    pub interpretation_route: InterpretationRoute,
    /// Channels.
    #[serde(default = "default_channels")]
    pub channels: Vec<RecordingChannel>,
}

/// `RECORDING_CONSENT_RESULT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RecordingConsentResult {
    /// The user approved.
    pub approved: bool,
    /// Mode.
    pub mode: RecordingMode,
    /// Route.
    pub interpretation_route: InterpretationRoute,
    /// Single-use token.
    pub consent_token: Option<String>,
    /// Token expiry, epoch seconds.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::opt_f64()")
    )]
    pub expires_at: Option<f64>,
}

/// `START_RECORDING`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct StartRecording {
    /// Mode.
    pub mode: RecordingMode,
    /// Route.
    #[serde(default)]
    pub interpretation_route: InterpretationRoute,
    /// Channels.
    #[serde(default = "default_channels")]
    pub channels: Vec<RecordingChannel>,
    /// The shim-issued consent token.
    pub consent_token: String,
}

/// A payload that names one recording: `RECORDING_STARTED`, `STOP_RECORDING`,
/// `RECORDING_FETCH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RecordingRef {
    /// `"rec_" + UUIDv4`.
    pub recording_id: String,
}

/// Enrichment coverage counts of `RECORDING_SUMMARY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct EnrichmentCoverage {
    /// Steps with DOM enrichment.
    pub dom: u64,
    /// Steps with accessibility enrichment.
    pub ax: u64,
    /// Steps without.
    pub none: u64,
}

/// `RECORDING_SUMMARY`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RecordingSummary {
    /// The recording.
    pub recording_id: String,
    /// Steps recorded.
    pub step_count: u64,
    /// Coverage.
    pub enrichment_coverage: EnrichmentCoverage,
    /// Length.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub duration_seconds: f64,
}

wire_enum! {
    /// Who acted.
    closed Actor {
        /// The user.
        Human => "human",
        /// The agent.
        Agent => "agent",
    }
}

wire_enum! {
    /// A trajectory step's action.
    closed StepAction {
        /// Navigate.
        Navigate => "navigate",
        /// Fill a field.
        Fill => "fill",
        /// Select.
        Select => "select",
        /// Click.
        Click => "click",
        /// Submit.
        Submit => "submit",
        /// Upload.
        Upload => "upload",
        /// Launch an app.
        LaunchApp => "launch_app",
        /// Focus a window.
        FocusWindow => "focus_window",
        /// Copy.
        Copy => "copy",
        /// Paste.
        Paste => "paste",
        /// Run.
        Run => "run",
        /// File operation.
        FileOp => "file_op",
        /// Wait.
        Wait => "wait",
        /// Assertion.
        Assert => "assert",
    }
}

wire_enum! {
    /// Enrichment kind.
    closed EnrichmentKind {
        /// DOM.
        Dom => "dom",
        /// Accessibility tree.
        Ax => "ax",
        /// None.
        None => "none",
    }
}

/// A selector of an enrichment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Selector {
    /// Strategy name.
    pub strategy: String,
    /// Selector value.
    pub value: String,
}

/// A step's enrichment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Enrichment {
    /// Kind.
    pub kind: EnrichmentKind,
    /// Selectors.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub selectors: Vec<Selector>,
    /// Accessibility path.
    #[serde(default)]
    pub ax_path: Option<String>,
    /// Role.
    #[serde(default)]
    pub role: Option<String>,
    /// Label.
    #[serde(default)]
    pub label: Option<String>,
    /// URL.
    #[serde(default)]
    pub url: Option<String>,
}

wire_enum! {
    /// Type of a step's value.
    closed ValueType {
        /// Text.
        Text => "text",
        /// Email.
        Email => "email",
        /// Number.
        Number => "number",
        /// Date.
        Date => "date",
        /// Secret (never carried raw).
        Secret => "secret",
        /// File.
        File => "file",
        /// Enumeration.
        Enum => "enum",
    }
}

/// A step's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct StepValue {
    /// Raw value (null when redacted).
    pub raw: Option<String>,
    /// Type.
    #[serde(rename = "type")]
    pub value_type: ValueType,
    /// Whether it is a workflow parameter.
    pub is_parameter: Option<bool>,
}

wire_enum! {
    /// Step outcome.
    closed Outcome {
        /// Succeeded.
        Ok => "ok",
        /// Failed.
        Error => "error",
        /// Unknown.
        Unknown => "unknown",
    }
}

/// One step of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct TrajectoryStep {
    /// Sequence number.
    pub seq: u64,
    /// Time, epoch seconds.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub ts: f64,
    /// Who acted.
    pub actor: Actor,
    /// What.
    pub action: StepAction,
    /// Screenshot reference.
    pub screenshot_ref: String,
    /// Pointer position.
    pub cursor: [i64; 2],
    /// Active application.
    pub active_app: String,
    /// Active window.
    pub active_window: String,
    /// Enrichment.
    pub enrichment: Enrichment,
    /// Value.
    pub value: StepValue,
    /// Narration.
    pub narration: Option<String>,
    /// Outcome.
    pub outcome: Outcome,
    /// Redacted.
    pub redacted: bool,
}

/// A fetched recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Recording {
    /// Id.
    pub recording_id: String,
    /// Format version, `"1.0"`.
    pub version: String,
    /// Creation time.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub created_at: f64,
    /// Machine.
    pub machine_id: String,
    /// Route.
    pub interpretation_route: InterpretationRoute,
    /// Steps.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::small_vec()")
    )]
    pub steps: Vec<TrajectoryStep>,
    /// Redaction applied.
    pub redaction_applied: bool,
}

/// `RECORDING_DATA`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RecordingData {
    /// The recording.
    pub recording: Recording,
}

/// `APPLY_RECORDING_REVIEW`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ApplyRecordingReview {
    /// The recording.
    pub recording_id: String,
    /// Steps to remove.
    #[serde(default)]
    pub removed_step_seqs: Vec<u64>,
    /// Steps to redact.
    #[serde(default)]
    pub redacted_step_seqs: Vec<u64>,
}

/// `RECORDING_REVIEW_APPLIED`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RecordingReviewApplied {
    /// The recording.
    pub recording_id: String,
    /// Steps left.
    pub step_count: u64,
}

/// `RECORDING_STEP` (unsolicited).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RecordingStep {
    /// The recording.
    pub recording_id: String,
    /// The step.
    pub step: TrajectoryStep,
}
