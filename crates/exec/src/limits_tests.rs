use super::*;

#[derive(Debug)]
struct ManualClock(Mutex<Instant>);

impl ManualClock {
    fn advance(&self, d: Duration) {
        let mut t = self.0.lock().unwrap();
        *t += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }
}

fn limiter(per_min: u32, conc: u32) -> (Arc<CommandLimiter>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock(Mutex::new(Instant::now())));
    let l = CommandLimiter::with_clock(
        CommandLimits {
            max_commands_per_minute: per_min,
            max_concurrent_commands: conc,
            window: Duration::from_secs(60),
        },
        clock.clone(),
    );
    (l, clock)
}

#[test]
fn sixty_first_command_inside_a_minute_is_refused_and_window_slides() {
    let (l, clock) = limiter(60, 100);
    for i in 0..60 {
        drop(l.admit().unwrap_or_else(|e| panic!("command {i}: {e}")));
        clock.advance(Duration::from_millis(500));
    }
    // 30 s elapsed: the 61st is refused.
    let e = l.admit().unwrap_err();
    assert!(matches!(e, ExecError::RateLimited { per_minute: 60 }));
    assert_eq!(e.to_string(), "Command rate limit exceeded (60/minute).");
    assert_eq!(e.code(), shim_protocol::ErrorCode::ShimOverloaded);
    // A refused request is not recorded: once the first event is 60 s old, one slot frees.
    clock.advance(Duration::from_millis(30_000));
    assert!(l.admit().is_ok());
    assert!(l.admit().is_err());
}

#[test]
fn eleventh_concurrent_command_is_refused_but_consumed_a_rate_slot() {
    let (l, _clock) = limiter(12, 10);
    let held: Vec<_> = (0..10).map(|_| l.admit().unwrap()).collect();
    assert_eq!(l.running(), 10);
    let e = l.admit().unwrap_err();
    assert!(matches!(e, ExecError::TooManyConcurrent));
    assert_eq!(e.to_string(), "Concurrent command limit exceeded.");
    assert_eq!(e.code(), shim_protocol::ErrorCode::ShimOverloaded);
    drop(held);
    assert_eq!(l.running(), 0);
    // 10 admitted + 1 refused at step 3 = 11 window events; the 12th is the last one.
    assert!(l.admit().is_ok());
    assert!(matches!(l.admit(), Err(ExecError::RateLimited { .. })));
}
