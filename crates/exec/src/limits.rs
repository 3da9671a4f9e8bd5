//! Machine-wide command limits (JAIL_FILES_EXEC.md 12.1 steps 2-3 and 13).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::Semaphore;

use crate::error::ExecError;

/// A monotonic clock, injectable so that tests need not sleep a minute.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Configured machine-wide limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandLimits {
    /// `max_commands_per_minute` (default 60).
    pub max_commands_per_minute: u32,
    /// `max_concurrent_commands` (default 10).
    pub max_concurrent_commands: u32,
    /// The sliding window (60 s; configurable for tests only).
    pub window: Duration,
}

impl Default for CommandLimits {
    fn default() -> Self {
        CommandLimits {
            max_commands_per_minute: 60,
            max_concurrent_commands: 10,
            window: Duration::from_secs(60),
        }
    }
}

/// Both limiters, shared by every child runtime of the machine. Create one per daemon and
/// share it through an `Arc`.
///
/// ```
/// use shim_exec::CommandLimiter;
/// use shim_exec::CommandLimits;
///
/// let limiter = CommandLimiter::new(CommandLimits {
///     max_concurrent_commands: 1,
///     ..CommandLimits::default()
/// });
/// let permit = limiter.admit()?; // held while the command runs
/// assert_eq!(limiter.running(), 1);
/// assert_eq!(limiter.in_window(), 1);
/// assert!(limiter.admit().is_err()); // TooManyConcurrent
/// drop(permit);
/// assert_eq!(limiter.running(), 0);
/// # Ok::<(), shim_exec::ExecError>(())
/// ```
#[derive(Debug)]
pub struct CommandLimiter {
    limits: CommandLimits,
    clock: Arc<dyn Clock>,
    events: Mutex<VecDeque<Instant>>,
    running: Arc<Semaphore>,
}

/// A running-command slot; dropping it frees the slot.
#[derive(Debug)]
pub struct CommandPermit {
    _permit: OwnedSemaphorePermit,
}

impl CommandLimiter {
    /// Limiter on the real monotonic clock.
    pub fn new(limits: CommandLimits) -> Arc<CommandLimiter> {
        CommandLimiter::with_clock(limits, Arc::new(MonotonicClock))
    }

    /// Limiter on an injected clock (tests).
    pub fn with_clock(limits: CommandLimits, clock: Arc<dyn Clock>) -> Arc<CommandLimiter> {
        let permits = usize::try_from(limits.max_concurrent_commands).unwrap_or(usize::MAX);
        Arc::new(CommandLimiter {
            limits,
            clock,
            events: Mutex::new(VecDeque::new()),
            running: Arc::new(Semaphore::new(permits.min(Semaphore::MAX_PERMITS))),
        })
    }

    /// The configured limits.
    pub fn limits(&self) -> CommandLimits {
        self.limits
    }

    /// 12.1 steps 2 and 3: the sliding window first (only admitted requests are recorded),
    /// then try-acquire a running slot (no queueing). A request refused at step 3 keeps the
    /// window slot it took (incumbent parity).
    pub fn admit(&self) -> Result<CommandPermit, ExecError> {
        {
            let now = self.clock.now();
            let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
            while let Some(&front) = events.front() {
                if now.saturating_duration_since(front) >= self.limits.window {
                    events.pop_front();
                } else {
                    break;
                }
            }
            let max = usize::try_from(self.limits.max_commands_per_minute).unwrap_or(usize::MAX);
            if events.len() >= max {
                return Err(ExecError::RateLimited {
                    per_minute: self.limits.max_commands_per_minute,
                });
            }
            events.push_back(now);
        }
        let permit = Arc::clone(&self.running)
            .try_acquire_owned()
            .map_err(|_| ExecError::TooManyConcurrent)?;
        Ok(CommandPermit { _permit: permit })
    }

    /// Commands admitted within the current sliding window (what `status` shows against
    /// `max_commands_per_minute`).
    pub fn in_window(&self) -> usize {
        let now = self.clock.now();
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events
            .iter()
            .filter(|&&t| now.saturating_duration_since(t) < self.limits.window)
            .count()
    }

    /// Commands currently holding a running slot.
    pub fn running(&self) -> usize {
        let max = usize::try_from(self.limits.max_concurrent_commands).unwrap_or(usize::MAX);
        max.saturating_sub(self.running.available_permits())
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
