#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::task::Context;
use std::task::Waker;
use std::time::Duration;

use super::*;

/// Lets spawned tasks run until they block.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_hundred_sessions_locked_and_released_leave_the_map_empty() {
    // 13.18: the per-session mutexes do not outlive their use.
    let locks = SessionLocks::default();
    for i in 0..100 {
        let g = locks.lock(&format!("s-{i}")).await;
        assert_eq!(locks.len(), 1);
        drop(g);
    }
    assert_eq!(locks.len(), 0);
    // Held all at once, then released.
    let mut guards = Vec::new();
    for i in 0..100 {
        guards.push(locks.lock(&format!("s-{i}")).await);
    }
    assert_eq!(locks.len(), 100);
    guards.clear();
    assert_eq!(locks.len(), 0);
}

#[tokio::test]
async fn an_early_return_releases_the_entry() {
    async fn handler(locks: &SessionLocks, fail: bool) -> Result<(), &'static str> {
        let _g = locks.lock("s").await;
        if fail {
            return Err("refused");
        }
        Ok(())
    }
    let locks = SessionLocks::default();
    for i in 0..100 {
        let _ = handler(&locks, i % 2 == 0).await;
    }
    assert_eq!(locks.len(), 0);
}

#[tokio::test]
async fn two_holders_of_one_session_serialise() {
    let locks = Arc::new(SessionLocks::default());
    let first = locks.lock("s").await;
    let entered = Arc::new(AtomicBool::new(false));
    let second = tokio::spawn({
        let locks = locks.clone();
        let entered = entered.clone();
        async move {
            let g = locks.lock("s").await;
            entered.store(true, Ordering::SeqCst);
            g
        }
    });
    settle().await;
    assert!(!entered.load(Ordering::SeqCst), "entered while held");
    // Another session is not blocked by it.
    drop(locks.lock("other").await);
    drop(first);
    let g = tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .unwrap()
        .unwrap();
    assert!(entered.load(Ordering::SeqCst));
    drop(g);
    assert_eq!(locks.len(), 0);
}

#[tokio::test]
async fn the_entry_survives_while_a_waiter_exists() {
    let locks = Arc::new(SessionLocks::default());
    let first = locks.lock("s").await;
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move {
            let _g = locks.lock("s").await;
            let _ = released.await;
        }
    });
    settle().await;
    drop(first);
    settle().await;
    // The holder left, the waiter now holds it: the entry is still there.
    assert_eq!(locks.len(), 1);
    // A third party must wait for the waiter, i.e. it locks the same mutex.
    let third = tokio::time::timeout(Duration::from_millis(50), locks.lock("s")).await;
    assert!(third.is_err(), "the entry was replaced while in use");
    assert_eq!(locks.len(), 1);
    release.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(locks.len(), 0);
}

#[tokio::test]
async fn a_cancelled_waiter_leaves_nothing_behind() {
    let locks = SessionLocks::default();
    let first = locks.lock("s").await;
    // Gives up waiting (like a request task cancelled on disconnect).
    let r = tokio::time::timeout(Duration::from_millis(20), locks.lock("s")).await;
    assert!(r.is_err());
    assert_eq!(locks.len(), 1);
    drop(first);
    assert_eq!(locks.len(), 0);
    // And the other order: the holder leaves first, then the waiter is cancelled.
    let first = locks.lock("s").await;
    let mut waiting = Box::pin(locks.lock("s"));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(
        waiting.as_mut().poll(&mut cx).is_pending(),
        "acquired while held"
    );
    drop(first);
    drop(waiting);
    assert_eq!(locks.len(), 0);
}
