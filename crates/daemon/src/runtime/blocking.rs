//! Blocking work that outlives a cancelled request.
//!
//! A request's task is aborted when its connection ends or its child runtime stops, but work
//! already running on the blocking pool cannot be: a file write or a mouse click still
//! happens. [`Blocking`] hands the result of such work to a detached task when the awaiting
//! request is dropped first, so that the operation is still audited (JAIL_FILES_EXEC.md 12.10
//! states the rule for commands; it holds for every operation that touched the machine).
//! Work that writes its own audit record on the same thread (hardware operations,
//! [`Blocking::spawn_watched`]) asks its [`Waiter`] whether the request has gone,
//! so that the record says `cancelled`; its `on_cancel` then only covers work that never
//! produced a record.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

use tokio::task::JoinError;
use tokio::task::JoinHandle;

type OnCancel<T> =
    Box<dyn FnOnce(Result<T, JoinError>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Tells blocking work whether the request that started it is still waiting for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Waiter(Arc<AtomicBool>);

impl Waiter {
    /// True once the [`Blocking`] was dropped before its work ended: nobody will see the
    /// work's result except `on_cancel` (a record written now is marked `cancelled`).
    pub(crate) fn gone(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A closure running on the blocking pool, with what to do with its result if nobody awaits
/// it to the end.
pub(crate) struct Blocking<T: Send + 'static> {
    handle: Option<JoinHandle<T>>,
    on_cancel: Option<OnCancel<T>>,
    waiter: Waiter,
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
        Self::spawn_watched(move |_| work(), on_cancel)
    }

    /// [`Blocking::spawn`] for work that also finishes what the request would have done with
    /// its result (its audit record): `work` learns through the [`Waiter`] whether the
    /// request has gone meanwhile.
    pub(crate) fn spawn_watched<F>(
        work: impl FnOnce(&Waiter) -> T + Send + 'static,
        on_cancel: impl FnOnce(Result<T, JoinError>) -> F + Send + 'static,
    ) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let waiter = Waiter::default();
        let w = waiter.clone();
        Blocking {
            handle: Some(tokio::task::spawn_blocking(move || work(&w))),
            on_cancel: Some(Box::new(move |r| Box::pin(on_cancel(r)))),
            waiter,
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
        self.waiter.0.store(true, Ordering::Release);
        // Outside a runtime (the process is ending) there is nobody left to record it.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { on_cancel(handle.await).await });
        }
    }
}

#[cfg(test)]
#[path = "blocking_tests.rs"]
mod tests;
