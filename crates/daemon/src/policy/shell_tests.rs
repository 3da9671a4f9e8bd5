use super::*;

fn progs(s: &str) -> Vec<Vec<String>> {
    split(s)
        .unwrap()
        .into_iter()
        .map(|c| c.argv.into_iter().map(|w| w.text).collect())
        .collect()
}

fn v(words: &[&[&str]]) -> Vec<Vec<String>> {
    words
        .iter()
        .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
        .collect()
}

#[test]
fn separators_pipes_and_lists() {
    assert_eq!(
        progs("a 1; b 2 && c || d | e |& f & g"),
        v(&[
            &["a", "1"],
            &["b", "2"],
            &["c"],
            &["d"],
            &["e"],
            &["f"],
            &["g"]
        ])
    );
    assert_eq!(progs("a\nb\n\n c"), v(&[&["a"], &["b"], &["c"]]));
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(progs(r#"'r'm "-rf" \/"#), v(&[&["rm", "-rf", "/"]]));
    assert_eq!(
        progs(r#"echo "a;b" 'c|d' e\;f"#),
        v(&[&["echo", "a;b", "c|d", "e;f"]])
    );
    assert_eq!(progs("echo a\\\nb"), v(&[&["echo", "ab"]]));
}

#[test]
fn substitutions_subshells_and_groups_are_split() {
    assert_eq!(
        progs("echo $(curl x)"),
        v(&[&["curl", "x"], &["echo", "$(..)"]])
    );
    assert_eq!(
        progs("echo \"$(rm y)\""),
        v(&[&["rm", "y"], &["echo", "$(..)"]])
    );
    assert_eq!(progs("echo `id`"), v(&[&["id"], &["echo", "`..`"]]));
    assert_eq!(
        progs("(cd a && rm b) | wc"),
        v(&[&["cd", "a"], &["rm", "b"], &["wc"]])
    );
    assert_eq!(progs("{ a; b; }"), v(&[&["a"], &["b"]]));
    assert_eq!(
        progs("diff <(ls a) <(ls b)"),
        v(&[&["ls", "a"], &["ls", "b"], &["diff", "<(..)", "<(..)"]])
    );
    assert_eq!(progs("x=$(whoami)"), v(&[&["whoami"]]));
}

#[test]
fn keywords_assignments_comments_and_redirections_are_not_commands() {
    assert_eq!(
        progs("if test -f a; then rm a; else touch a; fi"),
        v(&[&["test", "-f", "a"], &["rm", "a"], &["touch", "a"]])
    );
    assert_eq!(progs("for f in a b; do rm $f; done"), v(&[&["rm", "$f"]]));
    assert_eq!(
        progs("while true; do sleep 1; done"),
        v(&[&["true"], &["sleep", "1"]])
    );
    assert_eq!(progs("A=1 B=2 make all # rm -rf /"), v(&[&["make", "all"]]));
    assert_eq!(progs("cat <in >out 2>&1 >>log"), v(&[&["cat"]]));
    assert_eq!(
        progs("ls &> /dev/null; ! grep x f"),
        v(&[&["ls"], &["grep", "x", "f"]])
    );
}

#[test]
fn here_documents() {
    assert_eq!(
        progs("cat <<EOF\nrm -rf /\nEOF\nls"),
        v(&[&["cat"], &["ls"]])
    );
    assert_eq!(
        progs("cat <<EOF\n$(rm -rf /)\nEOF"),
        v(&[&["cat"], &["rm", "-rf", "/"]])
    );
    assert_eq!(progs("cat <<'EOF'\n$(rm -rf /)\nEOF"), v(&[&["cat"]]));
    assert_eq!(
        progs("cat <<-EOF\n\tbody\n\tEOF\nid"),
        v(&[&["cat"], &["id"]])
    );
}

#[test]
fn dynamic_words_are_marked() {
    let c = split("$CMD -x \"$HOME\" plain").unwrap();
    let d: Vec<bool> = c[0].argv.iter().map(|w| w.dynamic).collect();
    assert_eq!(d, [true, false, true, false]);
}

#[test]
fn what_it_does_not_understand_is_an_error() {
    for s in [
        "echo 'open",
        "echo \"open",
        "echo $(open",
        "echo `open",
        "a )",
        "case x in a) rm y;; esac",
        "f() { rm x; }",
        "function f { rm x; }",
        "echo $'\\x41'",
        "echo ${X:-$(rm y)}",
        "echo $(( $(rm y) + 1 ))",
        "(( x = 1 ))",
        "cat <<EOF\nnever closed",
        "echo >",
        &"$(".repeat(40),
    ] {
        assert!(split(s).is_err(), "{s:?} split as {:?}", split(s));
    }
}

#[test]
fn non_ascii_survives() {
    assert_eq!(
        progs("echo 'héllo' wörld"),
        v(&[&["echo", "héllo", "wörld"]])
    );
}
