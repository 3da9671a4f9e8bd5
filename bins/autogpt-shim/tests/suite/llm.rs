//! The local-model route (COMPUTER_USE_HW.md 8, 11.3) through the real binary and the
//! platform peer, against a real HTTP server on 127.0.0.1 speaking Ollama's `/api/tags`
//! and NDJSON `/api/chat` with every fault of 11.3.

use std::time::Duration;

use shim_platform_peer::Connection;
use shim_platform_peer::PeerConfig;
use shim_platform_peer::Response;
use shim_platform_peer::ollama::Chat;
use shim_platform_peer::ollama::FakeOllama;
use shim_platform_peer::ollama::Tags;
use shim_platform_peer::ollama::delta_line;
use shim_platform_peer::ollama::done_line;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::messages::llm::ChatMessage;
use shim_protocol::messages::llm::ChatRole;
use shim_protocol::messages::llm::LocalLlmCompletion;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::wait_until;
use crate::suite::harness::with_op;

const SID: &str = "3c2b1a09-8f7e-4d6c-b5a4-938271605f4e";
const SECRET_PROMPT: &str = "the prompt text must never reach the audit log";

fn models() -> Vec<String> {
    vec!["llama3:8b".into(), "qwen2:1.5b".into()]
}

fn lines(deltas: &[&str], done: Option<(&str, u64, u64)>) -> Chat {
    let mut l: Vec<String> = deltas.iter().map(|d| delta_line(d)).collect();
    if let Some((r, p, e)) = done {
        l.push(done_line(r, p, e));
    }
    Chat::Lines {
        lines: l,
        delay: Duration::ZERO,
    }
}

async fn daemon(env: &Env, ollama: &FakeOllama, extra: &[(&str, &str)]) -> tokio::process::Child {
    let mut c = env.legacy_command(SID, &[]);
    c.env("AUTOGPT_SHIM_ENABLE_LOCAL_LLM", "true")
        .env("AUTOGPT_SHIM_OLLAMA_URL", ollama.url())
        .env("AUTOGPT_SHIM_LOCAL_LLM_TIMEOUT_SECONDS", "1.5")
        .envs(extra.iter().copied());
    c.spawn().unwrap()
}

fn completion(model: &str, stream: bool) -> Message {
    Message::LocalLlmCompletion(LocalLlmCompletion {
        model: model.into(),
        messages: vec![
            ChatMessage {
                role: ChatRole::System,
                content: "be brief".into(),
            },
            ChatMessage {
                role: ChatRole::Unknown("tool".into()),
                content: "skipped".into(),
            },
            ChatMessage {
                role: ChatRole::User,
                content: SECRET_PROMPT.into(),
            },
        ],
        max_tokens: 77,
        temperature: 0.5,
        top_p: 0.9,
        stream,
    })
}

fn deltas(r: &Response) -> Vec<(String, Option<String>)> {
    r.chunks
        .iter()
        .map(|f| match &f.message {
            Message::LocalLlmCompletionChunk(c) => (
                c.delta.clone(),
                c.finish_reason.map(|f| f.as_str().to_owned()),
            ),
            other => panic!("not a chunk: {other:?}"),
        })
        .collect()
}

fn details(r: &Response) -> serde_json::Value {
    match &r.frame.message {
        Message::Error(e) => e
            .details
            .clone()
            .map_or(serde_json::Value::Null, serde_json::Value::Object),
        other => panic!("expected ERROR, got {other:?}"),
    }
}

fn message(r: &Response) -> String {
    match &r.frame.message {
        Message::Error(e) => e.message.clone(),
        other => panic!("expected ERROR, got {other:?}"),
    }
}

/// Forces a reconnect (a clean close from the platform) and returns the new connection.
async fn reconnect(env: &Env, conn: Connection) -> Connection {
    conn.close(1000, "");
    env.next().await
}

#[tokio::test]
async fn discovery_runs_at_every_hello_and_survives_every_probe_fault() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    let env = Env::new(PeerConfig::default()).await;
    let _child = daemon(&env, &ollama, &[]).await;
    let mut conn = env.next().await;
    assert!(conn.hello.capabilities.contains(&Capability::LocalLlm));
    assert_eq!(conn.hello.local_llm_models, models());
    assert!(
        conn.ack
            .granted_capabilities
            .contains(&Capability::LocalLlm)
    );

    let faults = [
        Tags::Status(500, "boom".into()),
        Tags::Raw("{not json".into()),
        Tags::Raw("[]".into()),
        Tags::Raw(r#"{"models":[{"size":1},7,{"name":"only-this"}]}"#.into()),
        Tags::Models(vec![]),
        Tags::Slow(Duration::from_millis(2500), models()),
    ];
    for (i, fault) in faults.into_iter().enumerate() {
        let before = ollama.tags_requests();
        ollama.set_tags(fault);
        conn = reconnect(&env, conn).await;
        assert_eq!(ollama.tags_requests(), before + 1, "fault {i}: probed once");
        if i == 3 {
            // Elements without a name are skipped.
            assert_eq!(conn.hello.local_llm_models, ["only-this"]);
            assert!(conn.hello.capabilities.contains(&Capability::LocalLlm));
        } else {
            assert!(conn.hello.local_llm_models.is_empty(), "fault {i}");
            assert!(
                !conn.hello.capabilities.contains(&Capability::LocalLlm),
                "fault {i}"
            );
        }
    }
    // Not advertised, so not granted: CAPABILITY_NOT_GRANTED, no backend call.
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    assert!(ollama.chat_bodies().is_empty());
    env.assert_no_violations();
}

#[tokio::test]
async fn discovery_on_the_control_connection_too() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_control(&[
        ("AUTOGPT_SHIM_ENABLE_LOCAL_LLM", "true"),
        ("AUTOGPT_SHIM_OLLAMA_URL", &ollama.url()),
    ]);
    let conn = env.next().await;
    assert_eq!(conn.hello.local_llm_models, models());
    // No operation of this area on the control connection (1.3 step 1).
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "FEATURE_NOT_SUPPORTED");
    assert!(ollama.chat_bodies().is_empty());
}

#[tokio::test]
async fn a_completion_streams_chunks_then_the_terminal_chunk_and_is_audited_without_content() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    // Deltas, an empty delta, blank and garbage lines, then done with counts.
    ollama.set_chat(Chat::Lines {
        lines: vec![
            delta_line("Three "),
            String::new(),
            "garbage{".into(),
            delta_line(""),
            "[1,2]".into(),
            delta_line("points ü"),
            done_line("length", 42, 12),
            delta_line("after done: never read"),
        ],
        delay: Duration::ZERO,
    });
    let env = Env::new(PeerConfig::default()).await;
    let _child = daemon(&env, &ollama, &[]).await;
    let conn = env.next().await;
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(
        deltas(&r),
        [
            ("Three ".to_owned(), None),
            ("points ü".to_owned(), None),
            (String::new(), Some("length".to_owned()))
        ]
    );
    for c in &r.chunks {
        assert_eq!(c.id, r.frame.id);
        assert_eq!(c.pending_capacity, None, "chunks are not stamped");
    }
    assert!(
        r.frame.pending_capacity.is_some(),
        "the terminal frame is stamped"
    );
    let Message::LocalLlmCompletionResponse(resp) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(resp.content, "Three points ü");
    assert_eq!(resp.finish_reason.as_str(), "length");
    assert_eq!(
        (
            resp.tokens.prompt,
            resp.tokens.completion,
            resp.tokens.total
        ),
        (Some(42), Some(12), Some(54))
    );
    assert!(resp.duration_seconds >= 0.0);
    // The backend was called in streaming mode with the options, unknown roles skipped.
    let body = &ollama.chat_bodies()[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "llama3:8b");
    assert_eq!(body["options"]["num_predict"], 77);
    assert_eq!(body["options"]["temperature"], 0.5);
    assert_eq!(body["options"]["top_p"], 0.9);
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
    assert_eq!(body["messages"][1]["role"], "user");

    // stream:false: no chunk frames, the same response.
    let r = conn
        .request(completion("llama3:8b", false), T)
        .await
        .unwrap();
    assert!(r.chunks.is_empty());
    let Message::LocalLlmCompletionResponse(resp) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(resp.content, "Three points ü");
    assert_eq!(
        ollama.chat_bodies()[1]["stream"],
        true,
        "backend always streams"
    );

    let records = env.audit_records();
    let rec = with_op(&records, "LOCAL_LLM_COMPLETION");
    assert_eq!(rec.len(), 2);
    let prompt_chars = "be brief".chars().count() + SECRET_PROMPT.chars().count();
    assert_eq!(
        rec[0]["details"],
        serde_json::json!({
            "model": "llama3:8b", "stream": true, "prompt_chars": prompt_chars,
            "response_chars": 14, "finish_reason": "length", "tokens_prompt": 42,
            "tokens_completion": 12, "tokens_total": 54
        })
    );
    assert_eq!(rec[0]["result"]["ok"], true);
    assert_eq!(rec[1]["details"]["stream"], false);
    let log = std::fs::read_to_string(env.audit_log()).unwrap();
    assert!(!log.contains(SECRET_PROMPT) && !log.contains("points"));
    env.verify_audit();
    env.assert_no_violations();
}

#[tokio::test]
async fn every_backend_fault_maps_to_its_error() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    let env = Env::new(PeerConfig::default()).await;
    let _child = daemon(&env, &ollama, &[]).await;
    let conn = env.next().await;

    // Pre-check against the advertised list: no backend call.
    let r = conn.request(completion("mistral", true), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "MODEL_NOT_AVAILABLE");
    assert_eq!(message(&r), "Model 'mistral' not in advertised list.");
    assert_eq!(
        details(&r),
        serde_json::json!({"requested_model": "mistral", "available_models": models()})
    );
    assert!(ollama.chat_bodies().is_empty());

    // 404 from the backend.
    ollama.set_chat(Chat::Status(404, r#"{"error":"model not found"}"#.into()));
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "MODEL_NOT_AVAILABLE");
    assert_eq!(
        message(&r),
        "Requested local LLM model is not loaded on the shim."
    );
    assert_eq!(
        details(&r)["backend_error"],
        r#"{"error":"model not found"}"#
    );

    // 500 and another non-200.
    for status in [500u16, 418] {
        ollama.set_chat(Chat::Status(status, "x".repeat(300)));
        let r = conn
            .request(completion("llama3:8b", true), T)
            .await
            .unwrap();
        assert_eq!(error_code(&r.frame.message), "LOCAL_LLM_FAILED", "{status}");
        let m = message(&r);
        assert!(m.starts_with("Local LLM backend failed: "), "{m}");
        assert_eq!(
            m.chars().count(),
            "Local LLM backend failed: ".len() + 200,
            "first 200 characters"
        );
        assert!(
            details(&r)["backend_error"]
                .as_str()
                .unwrap()
                .contains(&status.to_string())
        );
    }

    // A stream that ends without `done`: terminal chunk anyway, finish stop, no tokens.
    ollama.set_chat(lines(&["partial"], None));
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(
        deltas(&r),
        [
            ("partial".to_owned(), None),
            (String::new(), Some("stop".to_owned()))
        ]
    );
    let Message::LocalLlmCompletionResponse(resp) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(resp.finish_reason.as_str(), "stop");
    assert_eq!(
        (
            resp.tokens.prompt,
            resp.tokens.completion,
            resp.tokens.total
        ),
        (None, None, None)
    );

    // A hang before any byte: LOCAL_LLM_FAILED after the (tuned) timeout.
    ollama.set_chat(Chat::Hang);
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "LOCAL_LLM_FAILED");
    // Chunks, then a hang: the ERROR terminates the request after the chunks.
    ollama.set_chat(Chat::LinesThenHang(vec![delta_line("so far")]));
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(deltas(&r), [("so far".to_owned(), None)]);
    assert_eq!(error_code(&r.frame.message), "LOCAL_LLM_FAILED");
    // Both hung requests were abandoned (the HTTP connection closed).
    wait_until("hung requests aborted", || ollama.aborted() == 2).await;

    // A backend that is not there at all.
    drop(ollama);
    let r = conn
        .request(completion("llama3:8b", true), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "LOCAL_LLM_FAILED");

    // One record per request, failures with finish_reason null and what was received.
    let records = env.audit_records();
    let rec = with_op(&records, "LOCAL_LLM_COMPLETION");
    let codes: Vec<&str> = rec
        .iter()
        .map(|r| r["result"]["error_code"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(
        codes,
        [
            "MODEL_NOT_AVAILABLE",
            "MODEL_NOT_AVAILABLE",
            "LOCAL_LLM_FAILED",
            "LOCAL_LLM_FAILED",
            "ok",
            "LOCAL_LLM_FAILED",
            "LOCAL_LLM_FAILED",
            "LOCAL_LLM_FAILED"
        ]
    );
    assert_eq!(rec[0]["details"]["response_chars"], 0);
    assert_eq!(rec[0]["details"]["finish_reason"], serde_json::Value::Null);
    assert_eq!(rec[6]["details"]["response_chars"], 6);
    env.verify_audit();
    env.assert_no_violations();
}

#[tokio::test]
async fn a_trickle_of_ten_thousand_chunks_arrives_in_order() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    let words: Vec<String> = (0..10_000).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    ollama.set_chat(lines(&refs, Some(("stop", 1, 10_000))));
    let env = Env::new(PeerConfig::default()).await;
    let _child = daemon(&env, &ollama, &[]).await;
    let conn = env.next().await;
    let r = conn
        .request(completion("llama3:8b", true), Duration::from_secs(60))
        .await
        .unwrap();
    let d = deltas(&r);
    assert_eq!(d.len(), 10_001);
    for (i, (text, fin)) in d[..10_000].iter().enumerate() {
        assert_eq!(text, &words[i]);
        assert!(fin.is_none());
    }
    let Message::LocalLlmCompletionResponse(resp) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(resp.content, words.concat());
    env.assert_no_violations();
}

#[tokio::test]
async fn single_flight_across_sessions_and_cancellation_when_the_connection_drops() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["A", "B"]);
    let url = ollama.url();
    let (_child, control) = crate::suite::control::start(
        &env,
        &[
            ("AUTOGPT_SHIM_ENABLE_LOCAL_LLM", "true"),
            ("AUTOGPT_SHIM_OLLAMA_URL", &url),
            ("AUTOGPT_SHIM_LOCAL_LLM_TIMEOUT_SECONDS", "30"),
        ],
    )
    .await;
    const SID_A: &str = "0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e";
    const SID_B: &str = "0b0b0b0b-1b1b-4c2c-8d3d-4e4e4e4e4e4e";
    crate::suite::control::browse_and_attach(&control, SID_A, "A").await;
    let a = crate::suite::control::activate_child(&env, &control, SID_A).await;
    crate::suite::control::browse_and_attach(&control, SID_B, "B").await;
    let b = crate::suite::control::activate_child(&env, &control, SID_B).await;

    // Session A's completion hangs in the backend.
    let a = std::sync::Arc::new(a);
    let a2 = a.clone();
    let hung = tokio::spawn(async move { a2.request(completion("llama3:8b", true), T).await });
    wait_until("the backend saw the chat", || {
        ollama.chat_bodies().len() == 1
    })
    .await;

    // Session B is refused at once: one completion per machine, never queued.
    let r = b.request(completion("llama3:8b", true), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "LOCAL_LLM_BUSY");
    assert_eq!(details(&r), serde_json::Value::Null);
    assert_eq!(ollama.chat_bodies().len(), 1);

    // A's connection drops: its request is cancelled and the HTTP request aborted.
    a.close(1000, "");
    let _ = hung.await;
    wait_until("the backend request was aborted", || ollama.aborted() == 1).await;

    // The slot is free again.
    ollama.set_chat(lines(&["ok"], Some(("stop", 1, 1))));
    let r = b.request(completion("llama3:8b", true), T).await.unwrap();
    assert_eq!(
        r.frame.message.message_type().as_str(),
        "LOCAL_LLM_COMPLETION_RESPONSE"
    );
    // The cancelled request still has its one record.
    let records = env.audit_records();
    let rec = with_op(&records, "LOCAL_LLM_COMPLETION");
    let codes: Vec<&str> = rec
        .iter()
        .map(|r| r["result"]["error_code"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(codes, ["LOCAL_LLM_BUSY", "LOCAL_LLM_FAILED", "ok"]);
    env.verify_audit();
}

#[tokio::test]
async fn a_streaming_completion_holds_one_concurrency_slot() {
    let ollama = FakeOllama::start(Tags::Models(models()), Chat::Hang)
        .await
        .unwrap();
    let env = Env::with_ack(shim_platform_peer::AckConfig {
        max_concurrent: 1,
        ..shim_platform_peer::AckConfig::default()
    })
    .await;
    let _child = daemon(
        &env,
        &ollama,
        &[("AUTOGPT_SHIM_LOCAL_LLM_TIMEOUT_SECONDS", "30")],
    )
    .await;
    let conn = std::sync::Arc::new(env.next().await);
    let c2 = conn.clone();
    let hung = tokio::spawn(async move { c2.request(completion("llama3:8b", true), T).await });
    wait_until("the backend saw the chat", || {
        ollama.chat_bodies().len() == 1
    })
    .await;
    let r = conn
        .request(crate::suite::harness::stat(env.root_str()), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    hung.abort();
}
