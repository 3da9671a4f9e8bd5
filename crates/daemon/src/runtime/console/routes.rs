//! The console's pages and API (docs/console.md): the login exchange, the embedded assets,
//! the live state as server-sent events, and the buttons (approve, deny, kill, pause,
//! resume). Every request passed [`crate::runtime::console::guard`] first.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::extract::Query;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::Redirect;
use axum::response::Response;
use axum::response::sse::Event;
use axum::response::sse::KeepAlive;
use axum::response::sse::Sse;
use axum::routing::get;
use axum::routing::post;
use futures_util::Stream;
use futures_util::StreamExt;
use serde::Deserialize;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::ipc::StatusReport;
use crate::runtime::approvals::DecideError;
use crate::runtime::approvals::PendingApproval;
use crate::runtime::board::KillOpError;
use crate::runtime::console::state::COOKIE;
use crate::runtime::console::state::ConsoleState;
use crate::runtime::console::state::Exchange;
use crate::runtime::console::words;
use crate::runtime::steer;
use crate::runtime::steer::KillOneError;

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// How often the event stream looks for changes.
const TICK: Duration = Duration::from_millis(400);

/// What the page shows, sent whole on every change.
#[derive(Debug, Serialize)]
pub(crate) struct View {
    /// What `status --json` shows.
    pub(crate) status: StatusReport,
    /// The commands waiting for an answer.
    pub(crate) approvals: Vec<PendingApproval>,
    /// The last 200 audit records in words, oldest first.
    pub(crate) audit: Vec<words::Line>,
    /// Whether computer use is on.
    pub(crate) computer_use: bool,
    /// The latest screenshot's number (`/api/screenshot?v=N`), if one was taken.
    pub(crate) screenshot: Option<u64>,
}

/// The whole router.
pub(crate) fn router(st: Arc<ConsoleState>, stop: CancellationToken) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/app.js", get(app_js))
        .route("/assets/app.css", get(app_css))
        .route("/api/state", get(state))
        .route(
            "/api/events",
            get(move |s: State<Arc<ConsoleState>>| events(s, stop.clone())),
        )
        .route("/api/screenshot", get(screenshot))
        .route("/api/approvals/{id}/approve", post(approve))
        .route("/api/approvals/{id}/deny", post(deny))
        .route("/api/approvals/{id}/always", post(always))
        .route("/api/operations/{id}/kill", post(kill_one))
        .route("/api/kill", post(kill_all))
        .route("/api/pause", post(pause))
        .route("/api/resume", post(resume))
        .route("/api/takeover", post(takeover))
        .route("/api/handback", post(handback))
        .route("/api/live", get(crate::runtime::console::live::live))
        .layer(axum::middleware::from_fn_with_state(
            st.clone(),
            crate::runtime::console::guard::guard,
        ))
        .with_state(st)
}

#[derive(Deserialize)]
struct Login {
    token: Option<String>,
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (status, body).into_response()
}

async fn index(
    State(st): State<Arc<ConsoleState>>,
    Query(q): Query<Login>,
    headers: axum::http::HeaderMap,
) -> Response {
    if let Some(token) = q.token {
        return match st.exchange(&token) {
            Exchange::Session(session) => {
                let mut resp = Redirect::to("/").into_response();
                let cookie = format!("{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/");
                if let Ok(v) = HeaderValue::from_str(&cookie) {
                    resp.headers_mut().insert(header::SET_COOKIE, v);
                }
                tracing::info!("a browser logged in to the console");
                resp
            }
            Exchange::Used => text(
                StatusCode::FORBIDDEN,
                "refused: this console link was already used or has expired; run `autogpt-shim console` for a new one\n",
            ),
            Exchange::Unknown => text(
                StatusCode::FORBIDDEN,
                "refused: this console link is not valid; run `autogpt-shim console` for a new one\n",
            ),
        };
    }
    let logged_in =
        crate::runtime::console::guard::cookie(&headers, COOKIE).is_some_and(|c| st.is_session(c));
    if !logged_in {
        return text(
            StatusCode::UNAUTHORIZED,
            "refused: not logged in; run `autogpt-shim console` to get a login link\n",
        );
    }
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

async fn app_css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS).into_response()
}

/// The state the page shows now.
pub(crate) async fn view(st: &ConsoleState) -> View {
    let m = &st.machine;
    View {
        status: crate::runtime::status::snapshot_within(m, Duration::from_secs(5)).await,
        approvals: m.approvals.pending(),
        audit: st.audit_words(),
        computer_use: m.settings.enable_computer_use,
        screenshot: m.status.screenshot_version(),
    }
}

async fn state(State(st): State<Arc<ConsoleState>>) -> Response {
    axum::Json(view(&st).await).into_response()
}

async fn events(
    State(st): State<Arc<ConsoleState>>,
    stop: CancellationToken,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let ticks =
        futures_util::stream::unfold((st, String::new(), true), |(st, last, first)| async move {
            loop {
                if !first {
                    tokio::time::sleep(TICK).await;
                }
                let mut v = serde_json::to_value(view(&st).await).unwrap_or_default();
                // Ages and uptimes change every tick; send when anything else changed, or
                // every few seconds so that the ages stay fresh.
                let json = serde_json::to_string(&v).unwrap_or_default();
                strip_clock(&mut v);
                let key = serde_json::to_string(&v).unwrap_or_default();
                if first || key != last {
                    let ev = Event::default().event("state").data(json);
                    return Some((Ok::<Event, Infallible>(ev), (st, key, false)));
                }
            }
        });
    // The stream ends with the daemon, so that the server can stop.
    Sse::new(ticks.take_until(stop.cancelled_owned())).keep_alive(KeepAlive::default())
}

/// Removes what changes on its own (ages, uptime), to compare two views.
fn strip_clock(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in [
                "age_ms",
                "uptime_seconds",
                "state_seconds",
                "seconds_left",
                "retry_in_seconds",
            ] {
                if let Some(x) = m.get_mut(k)
                    && let Some(n) = x.as_u64()
                {
                    // Seconds-scale values keep their 5-second bucket; ages their second.
                    *x = serde_json::Value::from(if k == "age_ms" { n / 5000 } else { n / 5 });
                }
            }
            m.values_mut().for_each(strip_clock);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_clock),
        _ => {}
    }
}

async fn screenshot(State(st): State<Arc<ConsoleState>>) -> Response {
    match st.machine.status.screenshot() {
        Some((mime, bytes)) => ([(header::CONTENT_TYPE, mime)], bytes).into_response(),
        None => text(StatusCode::NOT_FOUND, "no screenshot yet\n"),
    }
}

fn decided(id: u64, r: Result<(), DecideError>) -> Response {
    match r {
        Ok(()) => text(StatusCode::OK, "ok\n"),
        Err(DecideError::Unknown) => (
            StatusCode::NOT_FOUND,
            format!("no command waits for approval {id}\n"),
        )
            .into_response(),
        Err(DecideError::AlreadyDecided) => (
            StatusCode::CONFLICT,
            format!("approval {id} was already decided (or timed out)\n"),
        )
            .into_response(),
    }
}

async fn approve(State(st): State<Arc<ConsoleState>>, Path(id): Path<u64>) -> Response {
    decided(id, steer::decide(&st.machine, id, true, "console"))
}

async fn deny(State(st): State<Arc<ConsoleState>>, Path(id): Path<u64>) -> Response {
    decided(id, steer::decide(&st.machine, id, false, "console"))
}

/// "Always allow": approve now and write a rule to the policy file
/// ([`steer::always_allow`]).
async fn always(State(st): State<Arc<ConsoleState>>, Path(id): Path<u64>) -> Response {
    use crate::ipc::IpcErrorKind;
    match steer::always_allow(&st.machine, id, "console").await {
        Some(crate::ipc::Response::RuleAdded { file, rules }) => (
            StatusCode::OK,
            format!("ok: {} rule(s) added to {file}\n", rules.len()),
        )
            .into_response(),
        Some(crate::ipc::Response::Error { kind, message }) => {
            let status = match kind {
                IpcErrorKind::UnknownApproval => StatusCode::NOT_FOUND,
                _ => StatusCode::CONFLICT,
            };
            (status, format!("{message}\n")).into_response()
        }
        Some(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "unexpected answer\n"),
        None => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        ),
    }
}

async fn kill_one(State(st): State<Arc<ConsoleState>>, Path(id): Path<u64>) -> Response {
    match steer::kill_one(&st.machine, id, "console").await {
        Ok(()) => text(StatusCode::OK, "ok\n"),
        Err(KillOneError::Op(KillOpError::Unknown)) => (
            StatusCode::NOT_FOUND,
            format!("no operation {id} is running\n"),
        )
            .into_response(),
        Err(KillOneError::Op(KillOpError::NotKillable)) => (
            StatusCode::CONFLICT,
            format!("operation {id} cannot be ended alone (only commands can)\n"),
        )
            .into_response(),
        Err(KillOneError::AuditDown) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        ),
    }
}

async fn kill_all(State(st): State<Arc<ConsoleState>>) -> Response {
    match steer::kill_all(&st.machine, "console").await {
        Ok(n) => (StatusCode::OK, format!("ended {n}\n")).into_response(),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        ),
    }
}

async fn set_paused(st: &ConsoleState, paused: bool) -> Response {
    match steer::pause(&st.machine, paused, "console").await {
        Ok(()) => text(StatusCode::OK, "ok\n"),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        ),
    }
}

async fn pause(State(st): State<Arc<ConsoleState>>) -> Response {
    set_paused(&st, true).await
}

async fn resume(State(st): State<Arc<ConsoleState>>) -> Response {
    set_paused(&st, false).await
}

#[derive(Deserialize)]
struct TakeoverQuery {
    /// Hand back on its own after this many seconds.
    timeout: Option<u64>,
}

/// "Take over": the agent's input is refused until "Hand back" (or the timeout).
async fn takeover(State(st): State<Arc<ConsoleState>>, Query(q): Query<TakeoverQuery>) -> Response {
    let cu = &st.machine.cu;
    let timeout = q.timeout.map(Duration::from_secs);
    match crate::runtime::desk::take_over(&cu.desk, &st.machine.audit, "console", timeout).await {
        Ok(()) => text(StatusCode::OK, "ok\n"),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        ),
    }
}

/// "Hand back": the agent may use the desktop again.
async fn handback(State(st): State<Arc<ConsoleState>>) -> Response {
    let cu = &st.machine.cu;
    match crate::runtime::desk::hand_back(&cu.desk, &st.machine.audit, "console").await {
        Ok(true) => text(StatusCode::OK, "ok\n"),
        Ok(false) => text(
            StatusCode::CONFLICT,
            "the desktop is not taken over; the agent already has it\n",
        ),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        ),
    }
}
