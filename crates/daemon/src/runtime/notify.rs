//! Desktop notifications for commands waiting for approval, with Approve / Deny buttons
//! wired to the broker ([`crate::runtime::approvals`]).
//!
//! Linux (and other freedesktop desktops): the `org.freedesktop.Notifications` D-Bus API on
//! the session bus, through `zbus` (already built for the Secret Service keychain, pure
//! Rust, no libdbus). The bus is only contacted when the first command waits, so a daemon
//! that never prompts never touches it. No session bus, or no notification service on it:
//! no notification, one debug line, and approvals work as before (`autogpt-shim approve`).
//! An answer from a button is recorded as `decided_by: "notification"`.
//!
//! Who can press the buttons: the notification service is found by its well-known name on
//! the user's own session bus, and only its signals are taken (zbus matches the sender to
//! the name's owner). Any process of the same user could own that name, as it could
//! connect to the control socket: the user's own processes are trusted alike.
//!
//! macOS and Windows: no notifications yet ([`run`] returns at once, documented in
//! docs/policy.md); their answer paths are the CLI and the console.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::runtime::approvals::Approvals;

/// Shows a notification for each waiting command until `stop`.
#[cfg(target_os = "linux")]
pub(crate) async fn run(approvals: Arc<Approvals>, stop: CancellationToken) {
    linux::run(approvals, stop).await;
}

/// No desktop notifications on this OS (see the module doc).
#[cfg(not(target_os = "linux"))]
pub(crate) async fn run(approvals: Arc<Approvals>, stop: CancellationToken) {
    let _ = (approvals, stop);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::sync::Arc;

    use futures_util::StreamExt;
    use tokio::sync::broadcast::error::RecvError;
    use tokio_util::sync::CancellationToken;
    use zbus::zvariant::Value;

    use crate::runtime::approvals::Approvals;
    use crate::runtime::approvals::Event;
    use crate::runtime::approvals::PendingApproval;

    const NAME: &str = "org.freedesktop.Notifications";
    const PATH: &str = "/org/freedesktop/Notifications";

    /// Who answered, in the audit record.
    const BY: &str = "notification";

    pub(super) async fn run(approvals: Arc<Approvals>, stop: CancellationToken) {
        let mut events = approvals.subscribe();
        // Wait for the first command that needs an answer before touching the bus.
        let first = loop {
            tokio::select! {
                () = stop.cancelled() => return,
                e = events.recv() => match e {
                    Ok(Event::Waiting(p)) => break p,
                    Ok(Event::Decided(_)) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
            }
        };
        let conn = match zbus::Connection::session().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "no D-Bus session bus: no desktop notifications for approvals");
                return;
            }
        };
        let proxy = match zbus::Proxy::new(&conn, NAME, PATH, NAME).await {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(error = %e, "no desktop notifications for approvals");
                return;
            }
        };
        let Ok(mut actions) = proxy.receive_signal("ActionInvoked").await else {
            tracing::debug!(
                "cannot follow the notification service's buttons: no desktop notifications"
            );
            return;
        };
        // notification id -> approval id, and back.
        let mut shown: HashMap<u32, u64> = HashMap::new();
        if let Some(n) = notify(&proxy, &first, approvals.timeout_ms()).await {
            shown.insert(n, first.id);
        }
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                e = events.recv() => match e {
                    Ok(Event::Waiting(p)) => {
                        if let Some(n) = notify(&proxy, &p, approvals.timeout_ms()).await {
                            shown.insert(n, p.id);
                        }
                    }
                    Ok(Event::Decided(id)) => {
                        if let Some((&n, _)) = shown.iter().find(|(_, a)| **a == id) {
                            shown.remove(&n);
                            let _ = proxy.call::<_, _, ()>("CloseNotification", &(n,)).await;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => break,
                },
                m = actions.next() => {
                    let Some(m) = m else { break };
                    let Ok((n, key)) = m.body().deserialize::<(u32, String)>() else {
                        continue;
                    };
                    let Some(&id) = shown.get(&n) else { continue };
                    let approve = match key.as_str() {
                        "approve" => true,
                        "deny" => false,
                        _ => continue,
                    };
                    // A late click (already answered elsewhere) changes nothing.
                    match approvals.decide(id, approve, BY) {
                        Ok(()) => tracing::info!(approval = id, approve, "answered from the desktop notification"),
                        Err(e) => tracing::debug!(approval = id, error = %e, "a notification button came too late"),
                    }
                }
            }
        }
        for n in shown.into_keys() {
            let _ = proxy.call::<_, _, ()>("CloseNotification", &(n,)).await;
        }
    }

    /// Shows one notification; its id, or `None` (logged at debug) when no service answers.
    async fn notify(proxy: &zbus::Proxy<'_>, p: &PendingApproval, timeout_ms: i32) -> Option<u32> {
        let summary = format!("autogpt-shim: approve command {}?", p.id);
        let body = format!(
            "{}\n\nWhy: {}\nChat {} · denied in {} s unless you answer",
            escape(&p.command),
            escape(&p.reason),
            escape(&p.session_id),
            p.seconds_left
        );
        let actions = ["approve", "Approve", "deny", "Deny"];
        let mut hints: HashMap<&str, Value<'_>> = HashMap::new();
        hints.insert("urgency", Value::U8(2));
        hints.insert("category", Value::from("x-autogpt-shim.approval"));
        let r = proxy
            .call::<_, _, u32>(
                "Notify",
                &(
                    "autogpt-shim",
                    0u32,
                    "dialog-question",
                    summary.as_str(),
                    body.as_str(),
                    &actions[..],
                    hints,
                    timeout_ms,
                ),
            )
            .await;
        match r {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::debug!(error = %e, approval = p.id, "no desktop notification (no notification service?)");
                None
            }
        }
    }

    /// The body may be read as markup by the service: `<`, `>` and `&` are escaped.
    fn escape(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars().take(2000) {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                c => out.push(c),
            }
        }
        out
    }
}
