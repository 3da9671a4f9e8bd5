//! The local-model route (COMPUTER_USE_HW.md 8): model discovery at every `HELLO` against
//! an Ollama backend, and `LOCAL_LLM_COMPLETION` streamed from its NDJSON `/api/chat`.
//!
//! Machine-wide state ([`LlmMachine`]): the HTTP client and the single-flight slot (8.5).
//! Per runtime ([`LlmSession`]): the model list probed at the last `HELLO` (8.2), used by
//! the pre-check. A request dropped mid-stream (the connection went away and its task was
//! aborted) drops the HTTP request with it, frees the slot and still writes its audit
//! record ([`Flight`]).

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use shim_audit::AuditResult;
use shim_audit::Map;
use shim_protocol::Capability;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::Message;
use shim_protocol::error::BackendErrorDetails;
use shim_protocol::error::ModelNotAvailableDetails;
use shim_protocol::messages::handshake::Hello;
use shim_protocol::messages::llm::ChatRole;
use shim_protocol::messages::llm::FinishReason;
use shim_protocol::messages::llm::LocalLlmCompletion;
use shim_protocol::messages::llm::LocalLlmCompletionChunk;
use shim_protocol::messages::llm::LocalLlmCompletionResponse;
use shim_protocol::messages::llm::TokenCounts;

use crate::config::Settings;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;

/// The probe timeout of 8.2 (0.1 Constants).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The audit `op` of a completion (8.6).
const OP: &str = "LOCAL_LLM_COMPLETION";

/// Machine-wide local-LLM state.
pub(crate) struct LlmMachine {
    enabled: bool,
    /// `ollama_url` without trailing `/`.
    base: String,
    client: Option<reqwest::Client>,
    /// The single-flight slot (8.4 step 2, 1.4: machine scope).
    busy: AtomicBool,
    /// Per I/O operation of a chat (8.4 step 3): 60 s unless tuned.
    chat_timeout: Duration,
}

/// Per-runtime local-LLM state: the list probed at the last `HELLO` (1.4: per connection,
/// reset at every HELLO).
#[derive(Debug, Default)]
pub(crate) struct LlmSession {
    models: Mutex<Vec<String>>,
}

/// Why the probe found nothing (for `doctor`).
pub(crate) type ProbeResult = Result<Vec<String>, String>;

impl LlmMachine {
    /// From the settings; the client exists only when the route is enabled.
    pub(crate) fn new(settings: &Settings) -> LlmMachine {
        let client = if settings.enable_local_llm {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(settings.tuning.local_llm_timeout)
                .build()
                .map_err(|e| tracing::warn!(error = %e, "cannot build the local LLM client"))
                .ok()
        } else {
            None
        };
        LlmMachine {
            enabled: settings.enable_local_llm,
            base: settings.ollama_url.trim_end_matches('/').to_owned(),
            client,
            busy: AtomicBool::new(false),
            chat_timeout: settings.tuning.local_llm_timeout,
        }
    }

    /// `GET /api/tags` with the 2 s timeout (8.2): the model names, or why there are none.
    pub(crate) async fn probe(&self) -> ProbeResult {
        let Some(client) = &self.client else {
            return Err("enable_local_llm is off".into());
        };
        let url = format!("{}/api/tags", self.base);
        let fetch = async {
            let resp = client.get(&url).send().await.map_err(|e| e.to_string())?;
            let status = resp.status().as_u16();
            let body = resp.bytes().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((status, body))
        };
        let (status, body) = tokio::time::timeout(PROBE_TIMEOUT, fetch)
            .await
            .map_err(|_| format!("{url} did not answer within 2 s"))??;
        if status != 200 {
            return Err(format!("{url} answered HTTP {status}"));
        }
        let v: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON ({e})"))?;
        let Some(obj) = v.as_object() else {
            return Err(format!("{url}: not a JSON object"));
        };
        let models: Vec<String> = obj
            .get("models")
            .and_then(|m| m.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.get("name").and_then(|n| n.as_str()).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if models.is_empty() {
            return Err(format!("{url}: no models installed"));
        }
        Ok(models)
    }
}

/// Probes at this `HELLO` and fills `local_llm_models` and the capability (1.2, 8.2); the
/// list is cached in `session` for the pre-check. Never fails the handshake.
pub(crate) async fn advertise(m: &LlmMachine, session: &LlmSession, hello: &mut Hello) {
    let models = if m.enabled {
        match m.probe().await {
            Ok(models) => models,
            Err(why) => {
                tracing::info!(reason = %why, "local LLM not advertised");
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    if !models.is_empty() && !hello.capabilities.contains(&Capability::LocalLlm) {
        hello.capabilities.push(Capability::LocalLlm);
    }
    hello.local_llm_models = models.clone();
    if let Ok(mut c) = session.models.lock() {
        *c = models;
    }
}

/// The running completion: holds the single-flight slot, and writes the failure record if
/// the request is dropped before it finished (the connection went away).
struct Flight<'a> {
    machine: &'a LlmMachine,
    audit: Auditor,
    id: String,
    base: Map,
    response_chars: usize,
    started: Instant,
    done: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.machine.busy.store(false, Ordering::SeqCst);
        if self.done {
            return;
        }
        // Cancelled mid-stream (8.6: exactly one record per request).
        let details = failure_details(self.base.clone(), self.response_chars);
        let mut result = AuditResult::failed(&ErrorCode::LocalLlmFailed);
        result.duration_ms = millis(self.started.elapsed());
        let (audit, id) = (self.audit.clone(), self.id.clone());
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            h.spawn(async move {
                let _ = audit.op(OP, Some(&id), details, result).await;
            });
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn failure_details(base: Map, response_chars: usize) -> Map {
    base.with("response_chars", response_chars)
        .with("finish_reason", Option::<String>::None)
}

/// A wire error and the characters received before it.
struct Failure {
    message: Message,
}

fn backend_failed(text: &str) -> Failure {
    let short: String = text.chars().take(200).collect();
    Failure {
        message: Message::Error(ErrorPayload::with_details(
            ErrorCode::LocalLlmFailed,
            format!("Local LLM backend failed: {short}"),
            &BackendErrorDetails {
                backend_error: text.to_owned(),
            },
        )),
    }
}

/// What the stream produced.
struct Outcome {
    content: String,
    finish: FinishReason,
    prompt: Option<u64>,
    completion: Option<u64>,
}

/// `LOCAL_LLM_COMPLETION` after the gate (8.4). `chunk` sends one non-terminal chunk.
/// Returns the terminal message; `Err` only when the audit record could not be written.
pub(crate) async fn complete(
    m: &LlmMachine,
    session: &LlmSession,
    audit: &Auditor,
    id: &str,
    req: LocalLlmCompletion,
    chunk: &(dyn Fn(Message) + Send + Sync),
) -> Result<Message, AuditFailed> {
    let started = Instant::now();
    let messages: Vec<serde_json::Value> = req
        .messages
        .iter()
        .filter(|msg| !matches!(msg.role, ChatRole::Unknown(_)))
        .map(|msg| serde_json::json!({"role": msg.role.as_str(), "content": msg.content}))
        .collect();
    let prompt_chars: usize = req
        .messages
        .iter()
        .filter(|msg| !matches!(msg.role, ChatRole::Unknown(_)))
        .map(|msg| msg.content.chars().count())
        .sum();
    let base = Map::new()
        .with("model", req.model.as_str())
        .with("stream", req.stream)
        .with("prompt_chars", prompt_chars);
    let refuse = |message: Message, code: ErrorCode| {
        let mut result = AuditResult::failed(&code);
        result.duration_ms = millis(started.elapsed());
        let details = failure_details(base.clone(), 0);
        async move {
            audit.op(OP, Some(id), details, result).await?;
            Ok(message)
        }
    };

    // Step 1: the pre-check against this connection's list.
    let available = session.models.lock().map(|m| m.clone()).unwrap_or_default();
    if !available.is_empty() && !available.contains(&req.model) {
        let msg = Message::Error(ErrorPayload::with_details(
            ErrorCode::ModelNotAvailable,
            format!("Model '{}' not in advertised list.", req.model),
            &ModelNotAvailableDetails {
                requested_model: req.model.clone(),
                available_models: available,
            },
        ));
        return refuse(msg, ErrorCode::ModelNotAvailable).await;
    }
    let Some(client) = &m.client else {
        let f = backend_failed("the local LLM route is not enabled");
        return refuse(f.message, ErrorCode::LocalLlmFailed).await;
    };
    // Step 2: single flight, machine-wide, never queued.
    if m.busy.swap(true, Ordering::SeqCst) {
        let msg = Message::Error(ErrorPayload::new(
            ErrorCode::LocalLlmBusy,
            "A local LLM completion is already running on this machine.",
        ));
        return refuse(msg, ErrorCode::LocalLlmBusy).await;
    }
    let mut flight = Flight {
        machine: m,
        audit: audit.clone(),
        id: id.to_owned(),
        base: base.clone(),
        response_chars: 0,
        started,
        done: false,
    };
    let body = serde_json::json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
        "options": {
            "temperature": req.temperature,
            "top_p": req.top_p,
            "num_predict": req.max_tokens,
        },
    });
    let r = stream_chat(m, client, &body, req.stream, chunk, &mut flight).await;
    flight.done = true;
    let elapsed = started.elapsed();
    match r {
        Ok(out) => {
            let total = match (out.prompt, out.completion) {
                (Some(p), Some(c)) => Some(p.saturating_add(c)),
                _ => None,
            };
            let details = base
                .with("response_chars", out.content.chars().count())
                .with("finish_reason", out.finish.as_str())
                .with("tokens_prompt", out.prompt)
                .with("tokens_completion", out.completion)
                .with("tokens_total", total);
            audit
                .op(OP, Some(id), details, AuditResult::ok_after(elapsed))
                .await?;
            Ok(Message::LocalLlmCompletionResponse(
                LocalLlmCompletionResponse {
                    content: out.content,
                    finish_reason: out.finish,
                    tokens: TokenCounts {
                        prompt: out.prompt,
                        completion: out.completion,
                        total,
                    },
                    duration_seconds: (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
                },
            ))
        }
        Err(f) => {
            let code = match &f.message {
                Message::Error(e) => e.code.clone(),
                _ => ErrorCode::LocalLlmFailed,
            };
            let mut result = AuditResult::failed(&code);
            result.duration_ms = millis(elapsed);
            audit
                .op(
                    OP,
                    Some(id),
                    failure_details(base, flight.response_chars),
                    result,
                )
                .await?;
            Ok(f.message)
        }
    }
}

/// Steps 3-5 of 8.4: the request, then the NDJSON stream.
async fn stream_chat(
    m: &LlmMachine,
    client: &reqwest::Client,
    body: &serde_json::Value,
    stream: bool,
    chunk: &(dyn Fn(Message) + Send + Sync),
    flight: &mut Flight<'_>,
) -> Result<Outcome, Failure> {
    let url = format!("{}/api/chat", m.base);
    let timeout = m.chat_timeout;
    let send = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send();
    let mut resp = match tokio::time::timeout(timeout, send).await {
        Err(_) => return Err(backend_failed("timed out waiting for the backend")),
        Ok(Err(e)) => return Err(backend_failed(&e.to_string())),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    if status != 200 {
        let text = match tokio::time::timeout(timeout, resp.bytes()).await {
            Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        if status == 404 {
            return Err(Failure {
                message: Message::Error(ErrorPayload::with_details(
                    ErrorCode::ModelNotAvailable,
                    "Requested local LLM model is not loaded on the shim.",
                    &BackendErrorDetails {
                        backend_error: text,
                    },
                )),
            });
        }
        let what = if text.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {text}")
        };
        return Err(backend_failed(&what));
    }
    let mut out = Outcome {
        content: String::new(),
        finish: FinishReason::Stop,
        prompt: None,
        completion: None,
    };
    let mut pending: Vec<u8> = Vec::new();
    'read: loop {
        let next = match tokio::time::timeout(timeout, resp.chunk()).await {
            Err(_) => return Err(backend_failed("timed out reading the backend's stream")),
            Ok(Err(e)) => return Err(backend_failed(&e.to_string())),
            Ok(Ok(c)) => c,
        };
        let at_end = next.is_none();
        if let Some(bytes) = next {
            pending.extend_from_slice(&bytes);
        } else if !pending.is_empty() {
            // A last line without its newline.
            pending.push(b'\n');
        }
        while let Some(nl) = memchr_newline(&pending) {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            if line_event(&line[..nl], stream, chunk, flight, &mut out) {
                break 'read;
            }
        }
        if at_end {
            break;
        }
    }
    // 8.4 step 5 [Rust extension]: a stream without `done` still gets its terminal chunk.
    if stream {
        chunk(Message::LocalLlmCompletionChunk(LocalLlmCompletionChunk {
            delta: String::new(),
            finish_reason: Some(out.finish),
        }));
    }
    Ok(out)
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// One NDJSON line (8.4 step 4); `true` when it was the `done` object. Blank and
/// unparsable lines are skipped.
fn line_event(
    line: &[u8],
    stream: bool,
    chunk: &(dyn Fn(Message) + Send + Sync),
    flight: &mut Flight<'_>,
    out: &mut Outcome,
) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
        return false;
    };
    let Some(obj) = v.as_object() else {
        return false;
    };
    let delta = obj
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(|c| c.as_str())
        .unwrap_or("");
    if !delta.is_empty() {
        out.content.push_str(delta);
        flight.response_chars += delta.chars().count();
        if stream {
            chunk(Message::LocalLlmCompletionChunk(LocalLlmCompletionChunk {
                delta: delta.to_owned(),
                finish_reason: None,
            }));
        }
    }
    if obj.get("done").and_then(|d| d.as_bool()) == Some(true) {
        out.prompt = obj.get("prompt_eval_count").and_then(|n| n.as_u64());
        out.completion = obj.get("eval_count").and_then(|n| n.as_u64());
        out.finish = match obj.get("done_reason").and_then(|r| r.as_str()) {
            Some("length") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            _ => FinishReason::Stop,
        };
        return true;
    }
    false
}
