//! Notices that the network may have changed under the connections (issue 28, item 3): a
//! wake-up from sleep (the wall clock jumped ahead of the monotonic clock, which stops while
//! the machine sleeps) and, on Linux, a change of local addresses or links (a netlink
//! `RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR` subscription). Each event bumps a
//! counter the connections watch: a connected one probes its link at once with a short pong
//! deadline, one waiting to reconnect stops waiting and resets its backoff. Nothing is
//! replayed: a probe that fails ends the connection like a missed pong does.

use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;

use tokio::sync::watch;

/// How long a probe waits for its pong after a network change.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// How far the wall clock must run ahead of the monotonic clock within one tick to count as
/// a wake-up.
const WAKE_JUMP: Duration = Duration::from_secs(4);

const TICK: Duration = Duration::from_secs(1);

/// A wake-up: over one tick, the wall clock advanced `WAKE_JUMP` more than the monotonic
/// clock. A wall clock set backwards is not one.
pub(crate) fn woke(monotonic: Duration, wall: Option<Duration>) -> bool {
    wall.is_some_and(|w| w > monotonic + WAKE_JUMP)
}

/// Starts the watchers; they bump `changes` until the process ends.
pub(crate) fn spawn(changes: watch::Sender<u64>) {
    let wake = changes.clone();
    tokio::spawn(async move {
        let mut mono = Instant::now();
        let mut wall = SystemTime::now();
        loop {
            tokio::time::sleep(TICK).await;
            let (m, w) = (Instant::now(), SystemTime::now());
            if woke(m.duration_since(mono), w.duration_since(wall).ok()) {
                tracing::info!("wake-up from sleep detected; probing the connections");
                wake.send_modify(|n| *n = n.wrapping_add(1));
            }
            (mono, wall) = (m, w);
        }
    });
    #[cfg(target_os = "linux")]
    linux::spawn(changes);
    #[cfg(not(target_os = "linux"))]
    drop(changes);
}

#[cfg(target_os = "linux")]
mod linux {
    use rustix::net::AddressFamily;
    use rustix::net::SocketType;
    use rustix::net::netlink::SocketAddrNetlink;
    use tokio::sync::watch;

    const RTMGRP_LINK: u32 = 0x1;
    const RTMGRP_IPV4_IFADDR: u32 = 0x10;
    const RTMGRP_IPV6_IFADDR: u32 = 0x100;

    /// A thread blocked on a netlink route socket; each message is a change.
    pub(super) fn spawn(changes: watch::Sender<u64>) {
        let fd = match rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None).and_then(
            |fd| {
                rustix::net::bind(
                    &fd,
                    &SocketAddrNetlink::new(
                        0,
                        RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
                    ),
                )
                .map(|()| fd)
            },
        ) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch address changes (netlink); relying on the ping");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("netwatch".into())
            .spawn(move || {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    match rustix::net::recv(&fd, &mut buf[..], rustix::net::RecvFlags::empty()) {
                        Ok(_) => {
                            tracing::info!(
                                "network address or link change; probing the connections"
                            );
                            changes.send_modify(|n| *n = n.wrapping_add(1));
                        }
                        Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::NOBUFS) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "netlink watch ended");
                            return;
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the netlink watch");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_jump_is_a_wake_up_and_a_step_back_is_not() {
        let s = Duration::from_secs;
        assert!(!woke(s(1), Some(s(1))));
        assert!(!woke(s(1), Some(s(4))));
        assert!(woke(s(1), Some(s(60))));
        assert!(!woke(s(1), None), "the wall clock went back");
    }
}
