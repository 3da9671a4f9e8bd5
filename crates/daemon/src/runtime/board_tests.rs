use super::*;

fn board() -> Arc<Board> {
    Board::new(SandboxStatus {
        mode: "off".into(),
        network: "allow".into(),
        description: "off".into(),
    })
}

#[test]
fn a_chat_shows_attached_then_connected_then_stopped_and_goes_when_detached() {
    let b = board();
    b.attached("s1", "/home/ada/site");
    let c = b.connections();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, "attached");
    assert_eq!(c[0].folder.as_deref(), Some("/home/ada/site"));
    let g = b.connection(Some("s1"), Some("/home/ada/site"));
    g.connected(vec!["shell_exec".into(), "file_read".into()]);
    let c = &b.connections()[0];
    assert_eq!(
        (c.state.as_str(), c.connects, c.kind.as_str()),
        ("connected", 1, "chat")
    );
    assert_eq!(c.granted_capabilities, ["file_read", "shell_exec"]);
    g.reconnecting("the connection was lost", None);
    assert_eq!(b.connections()[0].state, "reconnecting");
    assert_eq!(
        b.connections()[0].last_disconnect.as_deref(),
        Some("the connection was lost")
    );
    // A failed attempt's trouble and the wait for the next one show until a handshake.
    g.reconnecting(
        "the connection could not be made: cannot resolve h",
        Some(shim_auth::net::Trouble::NoNetwork),
    );
    g.retry_in(std::time::Duration::from_millis(2500));
    let c = &b.connections()[0];
    assert_eq!(c.problem.as_deref(), Some("no_network"));
    assert_eq!(c.retry_in_seconds, Some(3));
    assert_eq!(c.words(), "waiting for network, trying again in 3 s");
    g.connecting();
    let c = &b.connections()[0];
    assert_eq!(
        (c.retry_in_seconds, c.words().as_str()),
        (None, "waiting for network, trying now")
    );
    g.connected(vec![]);
    let c = &b.connections()[0];
    assert_eq!(
        (c.problem.as_deref(), c.words().as_str()),
        (None, "connected")
    );
    drop(g);
    assert_eq!(b.connections()[0].state, "stopped");
    assert!(b.connections()[0].granted_capabilities.is_empty());
    b.detached("s1");
    assert!(b.connections().is_empty());
}

#[test]
fn the_control_connection_stays_listed_after_it_ends() {
    let b = board();
    let g = b.connection(None, None);
    drop(g);
    let c = b.connections();
    assert_eq!(
        (c[0].kind.as_str(), c[0].state.as_str()),
        ("control", "stopped")
    );
}

#[test]
fn operations_come_and_go_and_only_commands_can_be_killed() {
    let b = board();
    let cmd = b.operation(Some("s1"), "r1", "EXECUTE_COMMAND", "sleep 9".into(), true);
    let read = b.operation(Some("s1"), "r2", "FILE_READ", "a.txt".into(), false);
    let ops = b.operations();
    assert_eq!(ops.len(), 2);
    assert!(ops[0].killable && !ops[1].killable);
    assert_eq!(b.kill_op(ops[1].id), Err(KillOpError::NotKillable));
    assert_eq!(b.kill_op(9999), Err(KillOpError::Unknown));
    assert!(!cmd.cancelled().is_cancelled());
    assert_eq!(b.kill_op(ops[0].id), Ok(()));
    assert!(cmd.cancelled().is_cancelled());
    assert!(!read.cancelled().is_cancelled());
    drop(cmd);
    drop(read);
    assert!(b.operations().is_empty());
    assert_eq!(b.killable(ops[0].id), None);
}

#[test]
fn only_the_last_errors_are_kept() {
    let b = board();
    for i in 0..(ipc::LAST_ERRORS + 5) {
        b.error(None, "connection", "x", &format!("error {i}"));
    }
    let e = b.errors();
    assert_eq!(e.len(), ipc::LAST_ERRORS);
    assert_eq!(e[0].message, "error 5");
    assert_eq!(
        e.last().map(|e| e.message.as_str()),
        Some(format!("error {}", ipc::LAST_ERRORS + 4).as_str())
    );
}
