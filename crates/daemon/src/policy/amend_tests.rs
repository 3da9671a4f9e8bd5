use super::*;

const FILE: &str = r#"# my policy: ask for everything
default = "prompt"

[[rule]]
decision = "forbid"
program = "rm"   # never

[[rule]]
decision = "prompt"
prefix = ["git", "push"]"#;

fn argv(words: &[&str]) -> Subject {
    Subject::Argv(words.iter().map(|w| (*w).to_owned()).collect())
}

#[test]
fn rules_are_appended_after_the_text_and_allow_exactly_that_command() {
    let p = Policy::parse(FILE, "p.toml").unwrap();
    let s = Subject::Command("make test && ./build.sh 'a b' \"it's\"".into());
    assert_eq!(p.check(&s).decision, Decision::Prompt);
    let argvs = p.allow_rules_for(&s).unwrap();
    assert_eq!(
        argvs,
        [
            vec!["make".to_owned(), "test".to_owned()],
            vec!["./build.sh".to_owned(), "a b".to_owned(), "it's".to_owned()],
        ]
    );
    let text = with_allow_rules(FILE, &argvs, "added by always-allow");
    // The old text, comments included, is kept byte for byte.
    assert!(text.starts_with(FILE), "{text}");
    assert!(text.contains("\n# added by always-allow\n[[rule]]\ndecision = \"allow\"\nargv = [\"make\", \"test\"]\nmatch = [\"make test\"]\n"), "{text}");
    // It loads, its examples hold, and the command is allowed now.
    let q = Policy::parse(&text, "p.toml").unwrap();
    assert_eq!(q.check(&s).decision, Decision::Allow, "{text}");
    // Exactly that command: more words, another path to the program, or another program
    // still ask.
    for other in [
        "make test install",
        "make",
        "/usr/bin/make test",
        "./build.sh 'a b'",
        "make test; ls",
    ] {
        assert_eq!(q.check_command(other).decision, Decision::Prompt, "{other}");
    }
    assert_eq!(q.rules.len(), 4);
    assert_eq!(q.rules[2].line, 13);
}

#[test]
fn wrapped_commands_get_a_rule_for_each_layer() {
    let p = Policy::parse(FILE, "p.toml").unwrap();
    let s = argv(&["sudo", "apt", "update"]);
    let argvs = p.allow_rules_for(&s).unwrap();
    assert_eq!(argvs.len(), 2, "{argvs:?}");
    let q = Policy::parse(&with_allow_rules(FILE, &argvs, "x"), "p.toml").unwrap();
    assert_eq!(q.check(&s).decision, Decision::Allow);
    assert_eq!(
        q.check_argv(&["sudo".into(), "apt".into(), "upgrade".into()])
            .decision,
        Decision::Prompt
    );
}

#[test]
fn a_prompt_rule_or_a_run_time_word_cannot_be_allowed_by_a_rule() {
    let p = Policy::parse(FILE, "p.toml").unwrap();
    let e = p
        .allow_rules_for(&Subject::Command("git push origin main".into()))
        .unwrap_err();
    assert!(e.contains("line 8"), "{e}");
    assert!(e.contains("strictest decision wins"), "{e}");
    let e = p
        .allow_rules_for(&Subject::Command("$CMD x".into()))
        .unwrap_err();
    assert!(e.contains("run time"), "{e}");
    // Already allowed: nothing to add.
    let allow = Policy::parse("default = \"allow\"\n", "a.toml").unwrap();
    assert_eq!(
        allow.allow_rules_for(&argv(&["ls"])).unwrap(),
        Vec::<Vec<String>>::new()
    );
}

#[test]
fn odd_words_are_quoted_so_that_the_example_matches() {
    let p = Policy::parse("default = \"prompt\"", "p.toml").unwrap();
    for words in [
        vec!["printf", "%s\\n", "a\"b", "it's", "tab\there"],
        vec!["echo", "", "$HOME", "*", "a;b", "ünïcode"],
        vec!["x", "line\nbreak", "back\\slash"],
        // A keyword or an assignment as the program (only through a wrapper or an argv).
        vec!["if", "x"],
        vec!["a=b", "c"],
        vec!["!"],
    ] {
        let s = argv(&words);
        let argvs = p.allow_rules_for(&s).unwrap();
        let text = with_allow_rules("default = \"prompt\"", &argvs, "note\nwith a newline");
        let q = Policy::parse(&text, "p.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(q.check(&s).decision, Decision::Allow, "{text}");
    }
}

#[test]
fn the_file_is_rewritten_in_place_and_the_policy_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, FILE).unwrap();
    let mut loaded = Policy::load(&path).unwrap();
    loaded.path = Some(path.clone());
    let shared = SharedPolicy::new(loaded);
    let s = argv(&["cargo", "build"]);
    assert_eq!(shared.current().check(&s).decision, Decision::Prompt);
    let a = shared.always_allow(&s, "approval 1").unwrap();
    assert_eq!(a.rules, [(13, "argv = [\"cargo\", \"build\"]".to_owned())]);
    assert_eq!(shared.current().check(&s).decision, Decision::Allow);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(FILE));
    assert_eq!(
        Policy::load(&path).unwrap().check(&s).decision,
        Decision::Allow
    );
    // A second time: nothing more to write.
    let a = shared.always_allow(&s, "approval 2").unwrap();
    assert!(a.rules.is_empty());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Only the policy file is left in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // A file edited into a bad state meanwhile: refused, the daemon keeps its policy.
    std::fs::write(&path, "default = \"sometimes\"\n").unwrap();
    let e = shared
        .always_allow(&argv(&["cargo", "test"]), "approval 3")
        .unwrap_err();
    assert!(matches!(e, AmendError::Invalid(_)), "{e}");
    assert_eq!(shared.current().check(&s).decision, Decision::Allow);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "default = \"sometimes\"\n"
    );
}

#[test]
fn without_a_policy_file_there_is_nowhere_to_write() {
    let shared = SharedPolicy::new(Policy::allow_all());
    let e = shared.always_allow(&argv(&["ls"]), "x").unwrap_err();
    assert_eq!(e, AmendError::NoFile);
    assert!(e.to_string().contains("command_policy_file"), "{e}");
    assert!(e.to_string().contains("hint:"), "{e}");
}

#[test]
fn a_program_the_shell_would_read_as_a_keyword_gets_an_example_that_runs_it() {
    let p = Policy::parse("default = \"prompt\"", "p.toml").unwrap();
    let s = Subject::Command("sudo if".into());
    let argvs = p.allow_rules_for(&s).unwrap();
    let text = with_allow_rules("default = \"prompt\"", &argvs, "n");
    assert!(
        text.contains("argv = [\"if\"]\nmatch = [\"command if\"]"),
        "{text}"
    );
    let q = Policy::parse(&text, "p.toml").unwrap();
    assert_eq!(q.check(&s).decision, Decision::Allow);
}
