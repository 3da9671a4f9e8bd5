use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use super::*;

type Seen = Arc<Mutex<Vec<u32>>>;

fn recorder() -> (
    Seen,
    impl Fn(Result<u32, JoinError>) -> std::future::Ready<()>,
) {
    let seen = Seen::default();
    let s = seen.clone();
    (seen, move |r: Result<u32, JoinError>| {
        s.lock().unwrap().push(r.unwrap());
        std::future::ready(())
    })
}

#[tokio::test]
async fn a_joined_result_goes_to_the_caller_only() {
    let (seen, on_cancel) = recorder();
    let r = Blocking::spawn(|| 7, on_cancel).join().await;
    assert_eq!(r, Ok(7));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_abandoned_result_goes_to_on_cancel_once_the_work_ends() {
    let (seen, on_cancel) = recorder();
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let job = Blocking::spawn(
        move || {
            let _ = gate.recv();
            9
        },
        on_cancel,
    );
    // The awaiting request is cancelled while the work still runs.
    let waiter = tokio::spawn(job.join());
    tokio::time::sleep(Duration::from_millis(20)).await;
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    assert!(
        seen.lock().unwrap().is_empty(),
        "the work has not ended yet"
    );
    release.send(()).unwrap();
    for _ in 0..500 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*seen.lock().unwrap(), vec![9]);
}

#[tokio::test]
async fn watched_work_learns_that_its_request_has_gone() {
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let (saw_tx, saw) = std::sync::mpsc::channel::<(bool, bool)>();
    let job = Blocking::spawn_watched(
        move |waiter: &Waiter| {
            let before = waiter.gone();
            let _ = gate.recv();
            let _ = saw_tx.send((before, waiter.gone()));
            1u32
        },
        |_| std::future::ready(()),
    );
    let waiter = tokio::spawn(job.join());
    tokio::time::sleep(Duration::from_millis(20)).await;
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    release.send(()).unwrap();
    let seen = tokio::task::spawn_blocking(move || saw.recv().unwrap())
        .await
        .unwrap();
    assert_eq!(seen, (false, true));
}

#[tokio::test]
async fn watched_work_that_is_joined_never_sees_its_request_gone() {
    let job = Blocking::spawn_watched(|waiter: &Waiter| waiter.gone(), |_| std::future::ready(()));
    assert_eq!(job.join().await, Ok(false));
}
