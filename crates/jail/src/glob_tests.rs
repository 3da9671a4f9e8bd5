use super::*;

fn m(p: &str, n: &str) -> bool {
    Glob::new(p, false, false).matches(n)
}

#[test]
fn syntax_of_9_3() {
    assert!(m("*", ""));
    assert!(m("*", ".hidden"));
    assert!(m("*.txt", "a.txt"));
    assert!(m("*.txt", ".txt"));
    assert!(!m("*.txt", "a.txt.bak"));
    assert!(m("?", "é"));
    assert!(!m("?", "ab"));
    assert!(m("[abc]x", "bx"));
    assert!(m("[a-c]x", "cx"));
    assert!(!m("[!a-c]x", "cx"));
    assert!(m("[!a-c]x", "dx"));
    assert!(m("[]]", "]"));
    assert!(m("[!]]", "a"));
    assert!(!m("[!]]", "]"));
    assert!(m("a[", "a["));
    assert!(m("[ab", "[ab"));
    assert!(m("a\\*", "a\\bc"), "no escape character");
    assert!(m("**", "anything"));
    assert!(m("a*b*c", "aXbYc"));
    assert!(!m("a*b*c", "aXbY"));
    assert!(m("[a-]", "-"));
}

#[test]
fn separators_never_match() {
    assert!(!m("a/b", "a/b"));
    assert!(!m("*/x", "d"));
    assert!(Glob::new("a\\b", false, false).matches("a\\b"));
    assert!(!Glob::new("a\\b", false, true).matches("a\\b"));
}

#[test]
fn case_folding_when_asked() {
    assert!(!m("*.TXT", "a.txt"));
    assert!(Glob::new("*.TXT", true, false).matches("A.txt"));
    assert!(Glob::new("É*", true, false).matches("été"));
}
