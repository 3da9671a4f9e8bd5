//! Section 13 through the executor, with real processes.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use super::common::*;
use shim_exec::AuditEvent;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::ExecError;
use shim_exec::Executor;
use shim_exec::limits::Clock;
use shim_protocol::ErrorCode;

#[derive(Debug)]
struct ManualClock(Mutex<Instant>);

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }
}

fn overloaded_audit(audit: Option<AuditEvent>) -> bool {
    matches!(audit, Some(AuditEvent::ExecuteCommand { result, .. })
        if result.error_code == Some(ErrorCode::ShimOverloaded) && result.duration_ms == 0)
}

#[tokio::test]
async fn the_61st_command_inside_a_minute_is_refused() {
    let root = Root::new();
    let clock = Arc::new(ManualClock(Mutex::new(Instant::now())));
    let ex = Executor::new(
        config(),
        CommandLimiter::with_clock(CommandLimits::default(), clock.clone()),
    );
    for i in 0..60 {
        let e = run(&ex, &root, argv(&["true"])).await;
        assert_eq!(e.result.unwrap().exit_code, 0, "command {i}");
        *clock.0.lock().unwrap() += Duration::from_millis(900);
    }
    let e = run(&ex, &root, argv(&["true"])).await;
    let err = e.result.unwrap_err();
    assert!(matches!(err, ExecError::RateLimited { per_minute: 60 }));
    assert_eq!(err.to_string(), "Command rate limit exceeded (60/minute).");
    assert!(overloaded_audit(e.audit));
    // The first command leaves the 60 s window.
    *clock.0.lock().unwrap() += Duration::from_secs(6);
    assert_eq!(
        run(&ex, &root, argv(&["true"]))
            .await
            .result
            .unwrap()
            .exit_code,
        0
    );
}

#[tokio::test]
async fn the_11th_concurrent_command_is_refused() {
    let root = Root::new();
    let limiter = CommandLimiter::new(CommandLimits::default());
    let ex = Executor::new(config(), limiter.clone());
    let mut running = Vec::new();
    for _ in 0..10 {
        let p = ex.prepare(&sh("sleep 30"), "/", root.resolver()).unwrap();
        running.push(tokio::spawn(p.run()));
    }
    assert_eq!(limiter.running(), 10);
    let e = run(&ex, &root, argv(&["true"])).await;
    let err = e.result.unwrap_err();
    assert!(matches!(err, ExecError::TooManyConcurrent));
    assert_eq!(err.to_string(), "Concurrent command limit exceeded.");
    assert!(overloaded_audit(e.audit));
    // Cancelling frees the slots (and kills the sleeps).
    for h in &running {
        h.abort();
    }
    for h in running {
        let _ = h.await;
    }
    assert_eq!(limiter.running(), 0);
    assert_eq!(
        run(&ex, &root, argv(&["true"]))
            .await
            .result
            .unwrap()
            .exit_code,
        0
    );
}
