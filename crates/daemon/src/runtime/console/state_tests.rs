use super::*;

#[test]
fn a_token_becomes_one_session_once() {
    let l = Logins::default();
    let t = l.token().unwrap();
    assert_eq!(t.len(), 64);
    let Exchange::Session(cookie) = l.exchange(&t) else {
        panic!("no session")
    };
    assert!(l.is_session(&cookie));
    assert!(!l.is_session(&t), "the token itself is no session");
    assert_eq!(l.exchange(&t), Exchange::Used);
    assert_eq!(l.exchange("0123"), Exchange::Unknown);
    assert!(!l.is_session("0123"));
}

#[test]
fn old_tokens_stop_working_when_too_many_are_issued() {
    let l = Logins::default();
    let first = l.token().unwrap();
    for _ in 0..MAX_TOKENS {
        l.token().unwrap();
    }
    assert_eq!(l.exchange(&first), Exchange::Used);
}

#[test]
fn sessions_are_bounded() {
    let l = Logins::default();
    let mut cookies = Vec::new();
    for _ in 0..(MAX_SESSIONS + 3) {
        let t = l.token().unwrap();
        match l.exchange(&t) {
            Exchange::Session(c) => cookies.push(c),
            other => panic!("{other:?}"),
        }
    }
    let live = cookies.iter().filter(|c| l.is_session(c)).count();
    assert_eq!(live, MAX_SESSIONS);
    assert!(l.is_session(cookies.last().unwrap()));
}
