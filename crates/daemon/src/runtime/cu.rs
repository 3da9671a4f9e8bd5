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

use crate::config::DisplayMode;
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
    mode: DisplayMode,
    size: [u32; 2],
    open: OpenOptions,
    cfg: EngineConfig,
    engine: Mutex<Option<Arc<Engine>>>,
    /// Who holds the desktop (take-over), the agent's last action, the live viewers.
    pub(crate) desk: Arc<crate::runtime::desk::Desk>,
    /// The isolated desktop, shared by the sessions that use it (each holds it strongly,
    /// so it stops when the last of them ends); starts are serialized here.
    #[cfg(target_os = "linux")]
    isolated: tokio::sync::Mutex<std::sync::Weak<crate::runtime::desktop::Isolated>>,
}

impl CuMachine {
    /// From the resolved settings; nothing is opened yet.
    pub(crate) fn new(s: &Settings) -> CuMachine {
        CuMachine {
            enabled: s.enable_computer_use,
            mode: s.computer_use_display.clone(),
            size: s.computer_use_display_size,
            open: OpenOptions {
                display: s.computer_use_display.named(),
                ..Default::default()
            },
            cfg: EngineConfig {
                enable_clipboard: s.enable_clipboard,
                enable_clipboard_read_foreign: s.enable_clipboard
                    && s.enable_clipboard_read_foreign,
                max_screenshots_per_minute: s.max_screenshots_per_minute,
                masked_regions: s.computer_use_masked_regions.clone(),
            },
            engine: Mutex::new(None),
            desk: Arc::default(),
            #[cfg(target_os = "linux")]
            isolated: tokio::sync::Mutex::new(std::sync::Weak::new()),
        }
    }

    /// The word for audit records: `user`, `isolated` or `named`.
    pub(crate) fn mode(&self) -> &'static str {
        self.mode.as_str()
    }

    /// What an isolated desktop will offer, known without starting it: X11 with a window
    /// manager, the clipboard when enabled, and the configured size.
    fn isolated_lists(&self) -> Option<(Features, Option<[i64; 2]>)> {
        if !self.enabled || self.mode != DisplayMode::Isolated || !cfg!(target_os = "linux") {
            return None;
        }
        let [w, h] = self.size;
        Some((
            Features::for_host(
                shim_cu::backend::HostKind::X11,
                true,
                self.cfg.enable_clipboard,
            ),
            Some([i64::from(w), i64::from(h)]),
        ))
    }

    /// The engine of the isolated desktop `session` uses, starting the desktop if none
    /// runs. Must be called on the async task serving the request (see `desktop`).
    #[cfg(target_os = "linux")]
    async fn isolated_engine(
        &self,
        session: &CuSession,
        op: &str,
    ) -> Result<Arc<Engine>, shim_cu::CuError> {
        let mut mine = session.isolated.lock().await;
        if let Some(i) = mine.as_ref()
            && i.alive()
        {
            return Ok(i.engine.clone());
        }
        let mut shared = self.isolated.lock().await;
        if let Some(i) = shared.upgrade()
            && i.alive()
        {
            let e = i.engine.clone();
            *mine = Some(i);
            return Ok(e);
        }
        // Whatever this session held is dead: let it go before starting a new one.
        *mine = None;
        let plan = tokio::task::spawn_blocking(crate::desktop::plan_here)
            .await
            .map_err(|e| shim_cu::CuError::internal(e.to_string()))?
            .map_err(|m| crate::runtime::desktop::StartError::Missing(m).to_cu(op))?;
        let cfg = self.cfg.clone();
        let iso = crate::runtime::desktop::start(plan, self.size, move |desktop| {
            Engine::new(desktop, cfg, Arc::new(SystemClock::default()))
        })
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "the isolated display did not start");
            e.to_cu(op)
        })?;
        let iso = Arc::new(iso);
        *shared = Arc::downgrade(&iso);
        let e = iso.engine.clone();
        *mine = Some(iso);
        Ok(e)
    }

    /// Where the live view looks now: the running isolated desktop (input from the page
    /// allowed), or the user's (or named) display; `None` when computer use is off or the
    /// isolated desktop is not running.
    #[cfg(target_os = "linux")]
    pub(crate) async fn live_target(&self) -> Option<LiveTarget> {
        if !self.enabled {
            return None;
        }
        if self.mode == DisplayMode::Isolated {
            let iso = self.isolated.lock().await.upgrade()?;
            return Some(LiveTarget {
                display: Some(iso.display.clone()),
                cookie: Some(iso.cookie().clone()),
                private: true,
                masks: self.cfg.masked_regions.clone(),
            });
        }
        Some(LiveTarget {
            display: self.open.display.clone(),
            cookie: None,
            private: false,
            masks: self.cfg.masked_regions.clone(),
        })
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

/// The display a live view watches.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone)]
pub(crate) struct LiveTarget {
    /// The X display (`None`: `DISPLAY`).
    pub(crate) display: Option<String>,
    /// Its cookie (the isolated desktop's).
    pub(crate) cookie: Option<shim_cu::Cookie>,
    /// The daemon's private desktop: the page may send input to it during a take-over.
    pub(crate) private: bool,
    /// `computer_use_masked_regions`, blacked out in every frame.
    pub(crate) masks: Vec<[i64; 4]>,
}

/// Which engine serves a connection's requests.
#[derive(Clone)]
enum Served {
    /// The user's (or a named) display, opened at the HELLO.
    Engine(Arc<Engine>),
    /// The isolated desktop, started at the first request.
    Isolated,
}

/// Per-runtime computer-use state: window ids and the clipboard writeback record (1.4),
/// plus what this runtime's current connection advertised, and the isolated desktop this
/// runtime uses (it stops when the last runtime holding it ends).
#[derive(Default)]
pub(crate) struct CuSession {
    state: SessionState,
    advertised: Mutex<Option<(Served, Features)>>,
    #[cfg(target_os = "linux")]
    isolated: tokio::sync::Mutex<Option<Arc<crate::runtime::desktop::Isolated>>>,
}

impl std::fmt::Debug for CuSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuSession").finish_non_exhaustive()
    }
}

/// Puts computer use with `features` and the screen size `res` into `hello`.
fn offer(hello: &mut Hello, features: &Features, res: Option<[i64; 2]>) {
    let (fine, coarse) = features.to_wire();
    hello.capabilities.push(Capability::ComputerUse);
    hello.computer_use_features = fine;
    hello.computer_use_features_coarse = coarse;
    hello.screen_resolution =
        res.and_then(|[w, h]| Some([u32::try_from(w).ok()?, u32::try_from(h).ok()?]));
}

/// Fills the computer-use fields of a HELLO (1.2, 2.2), re-probing the host, and resets
/// what every HELLO resets (the window ids).
pub(crate) async fn advertise(
    machine: &Arc<CuMachine>,
    session: &Arc<CuSession>,
    hello: &mut Hello,
) {
    session.state.on_hello();
    if let Some((features, res)) = machine.isolated_lists() {
        offer(hello, &features, res);
        if let Ok(mut a) = session.advertised.lock() {
            *a = Some((Served::Isolated, features));
        }
        return;
    }
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
        offer(hello, &features, res);
        (Served::Engine(engine), features)
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
///
/// While the local user holds the desktop ([`crate::runtime::desk`]) a request that acts on
/// it is refused with `DESKTOP_IN_USE` (audited) before the engine sees it. `chat` is the
/// session id of the connection, for the live view's marker of the last action.
pub(crate) async fn handle(
    machine: &Arc<CuMachine>,
    session: &Arc<CuSession>,
    audit: &Auditor,
    max_file_size: u64,
    id: &str,
    chat: Option<&str>,
    msg: &Message,
) -> Option<Result<Message, AuditFailed>> {
    let (served, features) = session.advertised.lock().ok()?.clone()?;
    let req = request(msg)?;
    let op = req.op();
    let mode = machine.mode();
    if machine.desk.held() && crate::runtime::desk::acts(&req) {
        return Some(refuse_held(audit, id, op, mode).await);
    }
    let action = match &req {
        Request::Input(a) => Some(a.clone()),
        _ => None,
    };
    let engine = match served {
        Served::Engine(e) => e,
        #[cfg(target_os = "linux")]
        Served::Isolated => {
            let began = std::time::Instant::now();
            match machine.isolated_engine(session, op).await {
                Ok(e) => e,
                Err(err) => {
                    // Fail closed: never the user's display. One record, one error.
                    let outcome = shim_cu::engine::Outcome {
                        reply: Err(err),
                        audit: Some(shim_cu::engine::AuditRecord {
                            op,
                            details: serde_json::Map::new(),
                            duration: began.elapsed(),
                        }),
                    };
                    if let Err(e) = record(audit, id, &outcome, false, mode).await {
                        return Some(Err(e));
                    }
                    return Some(Ok(match outcome.reply {
                        Ok(r) => reply(r),
                        Err(e) => Message::Error(e.to_payload()),
                    }));
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        Served::Isolated => return None,
    };
    let s = session.clone();
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
            let _ = record(&cancel_audit, &cancel_id, &outcome, true, mode).await;
        },
    );
    let outcome = outcome_of(job.join().await, op);
    if let Err(e) = record(audit, id, &outcome, false, mode).await {
        return Some(Err(e));
    }
    if let (Some(a), Ok(_)) = (&action, &outcome.reply) {
        machine.desk.note_action(chat, a);
    }
    Some(Ok(match outcome.reply {
        Ok(r) => reply(r),
        Err(e) => Message::Error(e.to_payload()),
    }))
}

/// The `DESKTOP_IN_USE` refusal of `op`, audited like every computer-use refusal.
async fn refuse_held(
    audit: &Auditor,
    id: &str,
    op: &'static str,
    mode: &'static str,
) -> Result<Message, AuditFailed> {
    let err = crate::runtime::desk::refusal();
    let outcome = shim_cu::engine::Outcome {
        reply: Err(err.clone()),
        audit: Some(shim_cu::engine::AuditRecord {
            op,
            details: serde_json::Map::new(),
            duration: Duration::ZERO,
        }),
    };
    record(audit, id, &outcome, false, mode).await?;
    Ok(Message::Error(err.to_payload()))
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
/// request was gone before the action ended. [addition] `display` names the display mode
/// (`isolated`, `named`) when it is not the user's own desktop.
async fn record(
    audit: &Auditor,
    id: &str,
    outcome: &shim_cu::engine::Outcome,
    cancelled: bool,
    mode: &'static str,
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
    if mode != "user" {
        details.insert("display", mode);
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
