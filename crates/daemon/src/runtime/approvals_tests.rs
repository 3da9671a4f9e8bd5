use std::sync::Arc;

use super::*;

async fn first_pending(a: &Approvals) -> PendingApproval {
    loop {
        if let Some(p) = a.pending().into_iter().next() {
            return p;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn an_approval_runs_and_a_denial_does_not() {
    let a = Arc::new(Approvals::new(Duration::from_secs(60)));
    for (approve, want) in [(true, Answer::Approved), (false, Answer::Denied)] {
        let waiter = {
            let a = a.clone();
            tokio::spawn(async move {
                a.ask(
                    "s1",
                    Subject::Command("git push".into()),
                    "prompt rule",
                    None,
                )
                .await
            })
        };
        let p = first_pending(&a).await;
        assert_eq!(
            (p.session_id.as_str(), p.command.as_str()),
            ("s1", "git push")
        );
        a.decide(p.id, approve, "cli").unwrap();
        let out = waiter.await.unwrap();
        assert_eq!((out.id, out.answer, out.by.as_str()), (p.id, want, "cli"));
        assert!(a.pending().is_empty());
        // A second answer is refused: the command got its one answer.
        assert_eq!(
            a.decide(p.id, true, "cli"),
            Err(DecideError::AlreadyDecided)
        );
    }
    assert_eq!(a.decide(999, true, "cli"), Err(DecideError::Unknown));
}

#[tokio::test(start_paused = true)]
async fn nobody_answering_denies_at_the_timeout_and_a_late_yes_changes_nothing() {
    let a = Approvals::new(Duration::from_secs(25));
    let out = a
        .ask(
            "s1",
            Subject::Command("rm x".into()),
            "r",
            Some("program = \"rm\"".into()),
        )
        .await;
    assert_eq!((out.answer, out.by.as_str()), (Answer::TimedOut, "timeout"));
    assert!(out.waited >= Duration::from_secs(25));
    assert_eq!(
        a.decide(out.id, true, "cli"),
        Err(DecideError::AlreadyDecided)
    );
    assert!(a.pending().is_empty());
}

#[tokio::test]
async fn a_request_that_goes_away_leaves_no_waiter() {
    let a = Arc::new(Approvals::new(Duration::from_secs(60)));
    let waiter = {
        let a = a.clone();
        tokio::spawn(async move { a.ask("s1", Subject::Command("x".into()), "r", None).await })
    };
    let p = first_pending(&a).await;
    waiter.abort();
    let _ = waiter.await;
    assert!(a.pending().is_empty());
    assert_eq!(
        a.decide(p.id, true, "cli"),
        Err(DecideError::AlreadyDecided)
    );
}
