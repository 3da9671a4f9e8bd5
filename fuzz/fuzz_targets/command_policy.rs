//! Fuzzes the command policy (`shim_daemon::policy`): the policy file parser, the shell
//! splitter and the judge, and the local control socket's frame decoder.
//!
//! Input: the bytes up to the first NUL are a policy file (TOML), the rest a command string.
//!
//! Invariants: nothing panics or hangs. A policy that parses judges any command; a verdict
//! that names a rule names one of the file's rules with that line; a string the splitter
//! accepts is never judged more leniently than the default when no rule exists; a string it
//! refuses is at least `prompt`; the rules "always allow" proposes, appended to the file,
//! load and allow the command. A frame body is decoded into a request, another version, or
//! an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_daemon::ipc;
use shim_daemon::policy::Decision;
use shim_daemon::policy::Policy;
use shim_daemon::policy::Subject;
use shim_daemon::policy::amend;
use shim_daemon::policy::shell;

fuzz_target!(|data: &[u8]| {
    let (file, cmd) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&[][..], data),
    };
    let cmd = String::from_utf8_lossy(cmd);
    let split = shell::split(&cmd);
    if let Ok(cmds) = &split {
        assert!(cmds.iter().all(|c| !c.argv.is_empty()));
    }
    for default in ["allow", "prompt", "forbid"] {
        let p = Policy::parse(&format!("default = \"{default}\"\n"), "f").unwrap();
        let v = p.check_command(&cmd);
        match &split {
            Ok(_) => assert!(v.decision >= p.default.min(Decision::Prompt)),
            Err(_) => assert!(v.decision >= Decision::Prompt, "{cmd:?} {v:?}"),
        }
    }
    if let Ok(text) = std::str::from_utf8(file) {
        if let Ok(p) = Policy::parse(text, "f") {
            let v = p.check_command(&cmd);
            if let Some(line) = v.rule_line {
                assert!(p.rules.iter().any(|r| r.line == line && Some(r.describe()) == v.rule));
            }
            // "Always allow": when rules are proposed, the amended text keeps the old text,
            // loads (its new examples included) and allows the command.
            let subject = Subject::Command(cmd.clone().into_owned());
            if let Ok(argvs) = p.allow_rules_for(&subject) {
                let amended = amend::with_allow_rules(text, &argvs, "fuzz");
                assert!(amended.starts_with(text));
                let q = Policy::parse(&amended, "f").unwrap_or_else(|e| panic!("{e}\n{amended}"));
                assert_eq!(q.check(&subject).decision, Decision::Allow, "{amended}");
            }
        }
    }
    let _ = ipc::decode::<ipc::Request>(data);
});
