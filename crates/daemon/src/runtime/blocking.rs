//! Blocking work that outlives a cancelled request.
//!
//! A request's task is aborted when its connection ends or its child runtime stops, but work
//! already running on the blocking pool cannot be: a file write or a mouse click still
//! happens. [`Blocking`] hands the result of such work to a detached task when the awaiting
//! request is dropped first, so that the operation is still audited (JAIL_FILES_EXEC.md 12.10
//! states the rule for commands; it holds for every operation that touched the machine).

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinError;
use tokio::task::JoinHandle;

type OnCancel<T> =
    Box<dyn FnOnce(Result<T, JoinError>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// A closure running on the blocking pool, with what to do with its result if nobody awaits
/// it to the end.
pub(crate) struct Blocking<T: Send + 'static> {
    handle: Option<JoinHandle<T>>,
    on_cancel: Option<OnCancel<T>>,
}

impl<T: Send + 'static> Blocking<T> {
    /// Starts `work` on the blocking pool. `on_cancel` receives its result when the
    /// [`Blocking`] (or the future of [`Blocking::join`]) is dropped before the work ended.
    pub(crate) fn spawn<F>(
        work: impl FnOnce() -> T + Send + 'static,
        on_cancel: impl FnOnce(Result<T, JoinError>) -> F + Send + 'static,
    ) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Blocking {
            handle: Some(tokio::task::spawn_blocking(work)),
            on_cancel: Some(Box::new(move |r| Box::pin(on_cancel(r)))),
        }
    }

    /// Waits for the work; the caller then owns the result and `on_cancel` never runs.
    /// `Err` says why the work produced nothing (it panicked, or the runtime is shutting
    /// down).
    pub(crate) async fn join(mut self) -> Result<T, String> {
        let Some(handle) = self.handle.as_mut() else {
            // Only `join` (which consumes `self`) and `drop` take the handle.
            return Err("the blocking work was already collected".to_owned());
        };
        let r = handle.await.map_err(|e| e.to_string());
        self.handle = None;
        r
    }
}

impl<T: Send + 'static> Drop for Blocking<T> {
    fn drop(&mut self) {
        let (Some(handle), Some(on_cancel)) = (self.handle.take(), self.on_cancel.take()) else {
            return;
        };
        // Outside a runtime (the process is ending) there is nobody left to record it.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { on_cancel(handle.await).await });
        }
    }
}

#[cfg(test)]
#[path = "blocking_tests.rs"]
mod tests;
