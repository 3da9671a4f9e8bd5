//! Computer-use dispatch (COMPUTER_USE_HW.md 1-7): advertisement at every HELLO, gating
//! steps 3-6 through [`shim_cu::Engine`] on a blocking thread, and one audit record per
//! request before its reply. Steps 1-2 (control connection, capability) stay in `conn`.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use shim_audit::AuditResult;
use shim_audit::Map;
use shim_audit::Value;
use shim_cu::Engine;
use shim_cu::EngineConfig;
use shim_cu::OpenOptions;
use shim_cu::engine::Ctx;
use shim_cu::engine::Reply;
use shim_cu::engine::Request;
use shim_cu::features::Features;
use shim_cu::policy::SessionState;
use shim_cu::policy::SystemClock;
use shim_protocol::Capability;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::messages::handshake::Ack;
use shim_protocol::messages::handshake::Hello;

use crate::config::Settings;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;
use crate::runtime::blocking::Blocking;

/// How long a HELLO waits for the display probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Machine-wide computer-use state: the engine (lock, rate window, backend), opened on
/// the first HELLO that needs it and reopened when its display connection died.
pub(crate) struct CuMachine {
    enabled: bool,
    open: OpenOptions,
    cfg: EngineConfig,
    engine: Mutex<Option<Arc<Engine>>>,
}

impl CuMachine {
    /// From the resolved settings; nothing is opened yet.
    pub(crate) fn new(s: &Settings) -> CuMachine {
        CuMachine {
            enabled: s.enable_computer_use,
            open: OpenOptions {
                display: s.computer_use_display.clone(),
            },
            cfg: EngineConfig {
                enable_clipboard: s.enable_clipboard,
                enable_clipboard_read_foreign: s.enable_clipboard
                    && s.enable_clipboard_read_foreign,
                max_screenshots_per_minute: s.max_screenshots_per_minute,
                masked_regions: s.computer_use_masked_regions.clone(),
            },
            engine: Mutex::new(None),
        }
    }

    /// The engine if the desktop is usable now (blocking: may connect to X).
    fn probe(&self) -> Option<Arc<Engine>> {
        if !self.enabled {
            return None;
        }
        let mut slot = self.engine.lock().ok()?;
        if let Some(e) = slot.as_ref()
            && (e.desktop().alive)()
        {
            return Some(e.clone());
        }
        match shim_cu::open(&self.open) {
            Ok(desktop) => {
                let e = Arc::new(Engine::new(
                    desktop,
                    self.cfg.clone(),
                    Arc::new(SystemClock::default()),
                ));
                *slot = Some(e.clone());
                Some(e)
            }
            Err(why) => {
                tracing::warn!(reason = %why, "computer use is enabled but not available; not advertised");
                *slot = None;
                None
            }
        }
    }
}

/// Per-runtime computer-use state: window ids and the clipboard writeback record (1.4),
/// plus what this runtime's current connection advertised.
#[derive(Default)]
pub(crate) struct CuSession {
    state: SessionState,
    advertised: Mutex<Option<(Arc<Engine>, Features)>>,
}

impl std::fmt::Debug for CuSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuSession").finish_non_exhaustive()
    }
}

/// Fills the computer-use fields of a HELLO (1.2, 2.2), re-probing the host, and resets
/// what every HELLO resets (the window ids).
pub(crate) async fn advertise(
    machine: &Arc<CuMachine>,
    session: &Arc<CuSession>,
    hello: &mut Hello,
) {
    session.state.on_hello();
    let m = machine.clone();
    let probe = tokio::task::spawn_blocking(move || {
        let engine = m.probe()?;
        let features = engine.features();
        let res = engine.screen_resolution();
        Some((engine, features, res))
    });
    let found = match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
        Ok(Ok(f)) => f,
        _ => None,
    };
    let advertised = found.map(|(engine, features, res)| {
        let (fine, coarse) = features.to_wire();
        hello.capabilities.push(Capability::ComputerUse);
        hello.computer_use_features = fine;
        hello.computer_use_features_coarse = coarse;
        hello.screen_resolution =
            res.and_then(|[w, h]| Some([u32::try_from(w).ok()?, u32::try_from(h).ok()?]));
        (engine, features)
    });
    if let Ok(mut a) = session.advertised.lock() {
        *a = advertised;
    }
}

/// Whether `ty` is a computer-use request.
pub(crate) fn is_cu(ty: MessageType) -> bool {
    ty.required_capability() == Some(Capability::ComputerUse)
}

fn request(msg: &Message) -> Option<Request> {
    Some(match msg.clone() {
        Message::ScreenshotRequest(p) => Request::Screenshot(p),
        Message::InputAction(p) => Request::Input(p),
        Message::CursorPositionRequest(_) => Request::CursorPosition,
        Message::DisplayInfoRequest(_) => Request::DisplayInfo,
        Message::WindowListRequest(p) => Request::WindowList(p),
        Message::WindowFocus(p) => Request::WindowFocus(p),
        Message::AppListRequest(p) => Request::AppList(p),
        Message::AppLaunch(p) => Request::AppLaunch(p),
        Message::ClipboardRead(p) => Request::ClipboardRead(p),
        Message::ClipboardWrite(p) => Request::ClipboardWrite(p),
        Message::PermissionsCheckRequest(p) => Request::Permissions(p),
        _ => return None,
    })
}

fn reply(r: Reply) -> Message {
    match r {
        Reply::Screenshot(p) => Message::ScreenshotResponse(p),
        Reply::Ack => Message::Ack(Ack::OK),
        Reply::Cursor(p) => Message::CursorPositionResponse(p),
        Reply::Displays(p) => Message::DisplayInfoResponse(p),
        Reply::Windows(p) => Message::WindowListResponse(p),
        Reply::Apps(p) => Message::AppListResponse(p),
        Reply::Clipboard(p) => Message::ClipboardReadResponse(p),
        Reply::Permissions(p) => Message::PermissionsCheckResponse(p),
    }
}

/// Serves one computer-use request on a data connection whose grant includes
/// `computer_use`. `None` when computer use was not advertised on this connection.
pub(crate) async fn handle(
    session: &Arc<CuSession>,
    audit: &Auditor,
    max_file_size: u64,
    id: &str,
    msg: &Message,
) -> Option<Result<Message, AuditFailed>> {
    let (engine, features) = session.advertised.lock().ok()?.clone()?;
    let req = request(msg)?;
    let s = session.clone();
    let op = req.op();
    let (cancel_audit, cancel_id) = (audit.clone(), id.to_owned());
    let job = Blocking::spawn(
        move || {
            engine.handle(
                Ctx {
                    session: &s.state,
                    features: &features,
                    max_file_size,
                },
                req,
            )
        },
        // An action already under way still happens when its request is cancelled: audit it.
        move |r| async move {
            let outcome = outcome_of(r.map_err(|e| e.to_string()), op);
            let _ = record(&cancel_audit, &cancel_id, &outcome, true).await;
        },
    );
    let outcome = outcome_of(job.join().await, op);
    if let Err(e) = record(audit, id, &outcome, false).await {
        return Some(Err(e));
    }
    Some(Ok(match outcome.reply {
        Ok(r) => reply(r),
        Err(e) => Message::Error(e.to_payload()),
    }))
}

/// The engine's outcome, or an internal error when the blocking work produced none.
fn outcome_of(
    joined: Result<shim_cu::engine::Outcome, String>,
    op: &'static str,
) -> shim_cu::engine::Outcome {
    joined.unwrap_or_else(|e| shim_cu::engine::Outcome {
        reply: Err(shim_cu::CuError::internal(format!(
            "computer-use operation failed: {e}"
        ))),
        audit: Some(shim_cu::engine::AuditRecord {
            op,
            details: serde_json::Map::new(),
            duration: Duration::ZERO,
        }),
    })
}

/// Writes the outcome's audit record, if it has one (section 6), marked `cancelled` when the
/// request was gone before the action ended.
async fn record(
    audit: &Auditor,
    id: &str,
    outcome: &shim_cu::engine::Outcome,
    cancelled: bool,
) -> Result<(), AuditFailed> {
    let Some(rec) = &outcome.audit else {
        return Ok(());
    };
    let mut details = Map::new();
    for (k, v) in &rec.details {
        details.insert(k.as_str(), Value::from_json(v));
    }
    if cancelled {
        details.insert("cancelled", true);
    }
    let result = match &outcome.reply {
        Ok(_) => AuditResult::ok_after(rec.duration),
        Err(e) => {
            let mut r = AuditResult::failed(&e.code);
            r.duration_ms = u64::try_from(rec.duration.as_millis()).unwrap_or(u64::MAX);
            r
        }
    };
    audit.op(rec.op, Some(id), details, result).await
}

/// The refusal when computer use was granted but is not served by this connection.
pub(crate) fn not_enabled() -> Message {
    Message::Error(ErrorPayload::new(
        ErrorCode::CapabilityNotGranted,
        "computer_use is not enabled on this machine.",
    ))
}
