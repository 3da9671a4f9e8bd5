//! The command policy (`command_policy_file`): which commands run, which need the local
//! user's yes, and which never run (STYLE.md 9).
//!
//! The file is TOML:
//!
//! ```toml
//! default = "allow"            # allow | prompt | forbid
//! [[rule]]
//! decision = "forbid"
//! program = "rm"               # or: prefix = ["git", "push"]   or: pattern = "curl .*[|] *sh"
//! match = ["rm -rf /", "rm x"]
//! not_match = ["rmdir x"]
//! justification = "deleting is for people"   # optional, shown in the refusal
//! ```
//!
//! Judging a command string: the string is split into its simple commands ([`shell::split`]:
//! pipes, `&&`, `;`, subshells, command substitution, here-documents); each simple command
//! is judged on its program name (`/bin/rm` is `rm`) and argv, and again for the command it
//! wraps (`sudo`, `env`, `nohup`, `timeout`, `xargs`, `sh -c STRING`, ...); `pattern` rules
//! are searched in the whole string. Every matching rule contributes its decision, a simple
//! command no rule matches contributes the default, and the strictest decision wins
//! (`forbid` > `prompt` > `allow`). A string that cannot be split, and a program name or a
//! prefix word the shell would only know at run time (`$X`), is `prompt` at least.

pub mod amend;
pub mod shell;

use std::fmt;
use std::path::Path;
use std::path::PathBuf;

use serde::Deserialize;
use serde::Serialize;

use crate::policy::shell::SimpleCommand;
use crate::policy::shell::Word;

/// What happens to a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// It runs.
    Allow,
    /// It waits for the local user's yes.
    Prompt,
    /// It never runs.
    Forbid,
}

impl Decision {
    /// The spelling in the file and in `policy check --json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Prompt => "prompt",
            Decision::Forbid => "forbid",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a rule recognises a command.
#[derive(Debug, Clone)]
enum Matcher {
    /// The program's name (the last component of argv\[0\]).
    Program(String),
    /// The first words of argv.
    Prefix(Vec<String>),
    /// The whole argv, word for word (what "always allow" writes).
    Argv(Vec<String>),
    /// A regular expression searched in the whole command string.
    Pattern(regex::Regex),
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Matcher::Program(p) => write!(f, "program = {p:?}"),
            Matcher::Prefix(p) => write!(f, "prefix = {p:?}"),
            Matcher::Argv(a) => write!(f, "argv = {a:?}"),
            Matcher::Pattern(r) => write!(f, "pattern = {:?}", r.as_str()),
        }
    }
}

/// One `[[rule]]` of the file.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The line of its `[[rule]]` header (1-based).
    pub line: usize,
    /// Its decision.
    pub decision: Decision,
    /// Its optional justification.
    pub justification: Option<String>,
    matcher: Matcher,
}

impl Rule {
    /// `program = "rm"`, `prefix = [..]` or `pattern = ".."`, as written in the file.
    pub fn describe(&self) -> String {
        self.matcher.to_string()
    }
}

/// A loaded policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where it was loaded from (`None`: the built-in allow-everything policy).
    pub path: Option<PathBuf>,
    /// The decision for a simple command no rule matches.
    pub default: Decision,
    /// The rules in file order.
    pub rules: Vec<Rule>,
}

/// A policy file that cannot be used; `start` stops with exit 78 on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{}: {reason}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct PolicyError {
    /// The file.
    pub path: String,
    /// The line the problem is on, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub reason: String,
}

/// The answer for one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The strictest decision.
    pub decision: Decision,
    /// The line of the rule that decided, if a rule did (the first rule with that decision).
    pub rule_line: Option<usize>,
    /// That rule as written (`program = "rm"`), if a rule decided.
    pub rule: Option<String>,
    /// That rule's justification, if any.
    pub justification: Option<String>,
    /// Why, in words: which simple command and which rule, the default, or why the string
    /// could not be judged.
    pub reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    default: Option<Decision>,
    #[serde(default)]
    rule: Vec<toml::Spanned<RawRule>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    decision: Decision,
    program: Option<String>,
    prefix: Option<Vec<String>>,
    argv: Option<Vec<String>>,
    pattern: Option<String>,
    #[serde(default, rename = "match")]
    matches: Vec<String>,
    #[serde(default)]
    not_match: Vec<String>,
    justification: Option<String>,
}

/// Whether a rule matches a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hit {
    No,
    /// It might: a word it compares is only known at run time.
    Maybe,
    Yes,
}

/// Programs that run the command given in their arguments, with the options of theirs that
/// take a value (so that the value is not taken for the command).
const WRAPPERS: &[(&str, &[&str])] = &[
    (
        "sudo",
        &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
    ),
    ("doas", &["-u", "-C"]),
    ("env", &["-u", "-C", "-S", "--unset", "--chdir"]),
    ("nohup", &[]),
    ("time", &["-f", "-o"]),
    ("nice", &["-n"]),
    ("ionice", &["-c", "-n", "-p"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    ("xargs", &["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"]),
    ("exec", &["-a"]),
    ("command", &[]),
    ("builtin", &[]),
    ("stdbuf", &["-i", "-o", "-e"]),
    ("setsid", &[]),
    ("chroot", &[]),
    ("watch", &["-n", "-d"]),
    ("strace", &["-o", "-e", "-p"]),
    ("busybox", &[]),
    ("flock", &["-w", "-E"]),
];

/// Shells whose `-c STRING` is a command string of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"];

impl Policy {
    /// The policy without a file: everything is allowed.
    pub fn allow_all() -> Policy {
        Policy {
            path: None,
            default: Decision::Allow,
            rules: Vec::new(),
        }
    }

    /// Reads and checks a policy file (including every rule's examples).
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
            path: path.display().to_string(),
            line: None,
            reason: format!("cannot read it: {e}"),
        })?;
        let mut p = Policy::parse(&text, &path.display().to_string())?;
        p.path = Some(path.to_path_buf());
        Ok(p)
    }

    /// Parses and checks policy text; `name` is used in errors.
    pub fn parse(text: &str, name: &str) -> Result<Policy, PolicyError> {
        let err = |line: Option<usize>, reason: String| PolicyError {
            path: name.to_owned(),
            line,
            reason,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            err(
                e.span().map(|s| line_of(text, s.start)),
                e.message().trim().to_owned(),
            )
        })?;
        let mut rules = Vec::with_capacity(raw.rule.len());
        for spanned in raw.rule {
            let line = header_line(text, spanned.span().start);
            let r = spanned.into_inner();
            let matcher = match (r.program, r.prefix, r.argv, r.pattern) {
                (Some(p), None, None, None) => {
                    if p.is_empty() || p.contains('/') {
                        return Err(err(
                            Some(line),
                            "program must be a name without '/' (it matches the last component of the path)"
                                .into(),
                        ));
                    }
                    Matcher::Program(p)
                }
                (None, Some(p), None, None) => {
                    if p.is_empty() {
                        return Err(err(Some(line), "prefix must not be empty".into()));
                    }
                    Matcher::Prefix(p)
                }
                (None, None, Some(a), None) => {
                    if a.is_empty() {
                        return Err(err(Some(line), "argv must not be empty".into()));
                    }
                    Matcher::Argv(a)
                }
                (None, None, None, Some(p)) => match regex::Regex::new(&p) {
                    Ok(r) => Matcher::Pattern(r),
                    Err(e) => {
                        return Err(err(Some(line), format!("bad pattern {p:?}: {e}")));
                    }
                },
                _ => {
                    return Err(err(
                        Some(line),
                        "a rule needs exactly one of program, prefix, argv or pattern".into(),
                    ));
                }
            };
            let rule = Rule {
                line,
                decision: r.decision,
                justification: r.justification,
                matcher,
            };
            for ex in &r.matches {
                if rule_hit(&rule, ex) != Hit::Yes {
                    return Err(err(
                        Some(line),
                        format!("the rule does not match its example {ex:?} (listed in match)"),
                    ));
                }
            }
            for ex in &r.not_match {
                if rule_hit(&rule, ex) != Hit::No {
                    return Err(err(
                        Some(line),
                        format!("the rule matches its example {ex:?} (listed in not_match)"),
                    ));
                }
            }
            rules.push(rule);
        }
        Ok(Policy {
            path: None,
            default: raw.default.unwrap_or(Decision::Allow),
            rules,
        })
    }

    /// Judges a shell command string.
    pub fn check_command(&self, command: &str) -> Verdict {
        self.judge(&Subject::Command(command.to_owned())).verdict()
    }

    /// Judges an argv executed without a shell. `pattern` rules see the words joined by
    /// spaces.
    pub fn check_argv(&self, argv: &[String]) -> Verdict {
        self.judge(&Subject::Argv(argv.to_vec())).verdict()
    }

    /// Judges a command as the platform asked for it.
    pub fn check(&self, subject: &Subject) -> Verdict {
        self.judge(subject).verdict()
    }

    fn judge(&self, subject: &Subject) -> Judge<'_> {
        let mut j = Judge::new(self);
        match subject {
            Subject::Command(c) => j.string(c, 0),
            Subject::Argv(argv) => {
                j.patterns(&argv.join(" "));
                let words: Vec<Word> = argv
                    .iter()
                    .map(|a| Word {
                        text: a.clone(),
                        dynamic: false,
                    })
                    .collect();
                if words.is_empty() {
                    j.note(Decision::Prompt, None, "empty argv".into());
                } else {
                    j.simple(&words, 0);
                }
            }
        }
        j
    }

    /// The `argv = [..]` allow rules that make `subject` run from now on ("always allow"):
    /// one for each simple command (and each command it wraps) that no rule matches while
    /// the default is stricter than `allow`, word for word. Empty when the policy already
    /// allows it. An error says why no allow rule can do it: another rule (or a pattern)
    /// asks for more, and the strictest decision wins; or a word is only known at run time.
    pub fn allow_rules_for(&self, subject: &Subject) -> Result<Vec<Vec<String>>, String> {
        let j = self.judge(subject);
        let unmatched = if self.default > Decision::Allow {
            j.unmatched.clone()
        } else {
            Vec::new()
        };
        if j.verdict().decision == Decision::Allow {
            return Ok(Vec::new());
        }
        let mut words: Vec<Vec<String>> = Vec::new();
        for w in unmatched {
            if !words.contains(&w) {
                words.push(w);
            }
        }
        let mut trial = self.clone();
        trial.rules.extend(words.iter().map(|w| Rule {
            line: 0,
            decision: Decision::Allow,
            justification: None,
            matcher: Matcher::Argv(w.clone()),
        }));
        let v = trial.check(subject);
        if v.decision != Decision::Allow {
            let because = match (v.rule_line, &v.rule) {
                (Some(l), Some(r)) => format!("line {l} ({r}) decides {}", v.decision),
                _ => format!("it stays {}", v.decision),
            };
            return Err(format!(
                "no allow rule can make this command run: {because}, and the strictest decision wins ({})",
                v.reason
            ));
        }
        Ok(words)
    }
}

/// A command as the platform asked for it: a shell string or an argv run without a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// `command`: judged as a shell string.
    Command(String),
    /// `argv`: judged word for word.
    Argv(Vec<String>),
}

impl Subject {
    /// The command as shown to the local user: the string, or the argv joined by spaces.
    pub fn shown(&self) -> String {
        match self {
            Subject::Command(c) => c.clone(),
            Subject::Argv(a) => a.join(" "),
        }
    }
}

/// Collects the contributions for one command.
struct Judge<'a> {
    policy: &'a Policy,
    best: Option<(Decision, Option<&'a Rule>, String)>,
    /// Every argv (all words known now) that no program/prefix/argv rule matched.
    unmatched: Vec<Vec<String>>,
}

impl<'a> Judge<'a> {
    fn new(policy: &'a Policy) -> Judge<'a> {
        Judge {
            policy,
            best: None,
            unmatched: Vec::new(),
        }
    }

    fn note(&mut self, d: Decision, rule: Option<&'a Rule>, reason: String) {
        let stricter = match &self.best {
            None => true,
            Some((b, _, _)) => d > *b,
        };
        if stricter {
            self.best = Some((d, rule, reason));
        }
    }

    fn patterns(&mut self, s: &str) {
        let policy = self.policy;
        for r in &policy.rules {
            if let Matcher::Pattern(re) = &r.matcher
                && re.is_match(s)
            {
                self.note(
                    r.decision,
                    Some(r),
                    format!("{} matches the command", r.describe()),
                );
            }
        }
    }

    fn string(&mut self, s: &str, depth: usize) {
        self.patterns(s);
        match shell::split_at_depth(s, depth) {
            Ok(cmds) => {
                if cmds.is_empty() {
                    self.note(self.policy.default, None, "no command (default)".into());
                }
                for SimpleCommand { argv } in cmds {
                    self.simple(&argv, depth);
                }
            }
            Err(e) => self.note(
                Decision::Prompt,
                None,
                format!("the command cannot be judged: {e}"),
            ),
        }
    }

    /// One simple command and every command it wraps.
    fn simple(&mut self, argv: &[Word], depth: usize) {
        let mut rest = argv;
        let mut guard = 0;
        while let Some(first) = rest.first() {
            guard += 1;
            if guard > 32 {
                self.note(Decision::Prompt, None, "too many nested wrappers".into());
                return;
            }
            self.one(rest);
            if first.dynamic {
                return;
            }
            let name = program_name(&first.text);
            // `sh -c STRING`: the string is a command of its own.
            if SHELLS.contains(&name) {
                if let Some(pos) = rest
                    .iter()
                    .position(|w| w.text == "-c" || is_c_cluster(&w.text))
                {
                    match rest.get(pos + 1) {
                        Some(w) if !w.dynamic && depth < 8 => self.string(&w.text, depth + 1),
                        Some(_) | None => self.note(
                            Decision::Prompt,
                            None,
                            format!("{name} -c with a string only known at run time"),
                        ),
                    }
                }
                return;
            }
            if name == "find" {
                // find -exec / -execdir / -ok / -okdir COMMAND ... ; (or +) runs COMMAND.
                let mut i = 1;
                while i < rest.len() {
                    if ["-exec", "-execdir", "-ok", "-okdir"].contains(&rest[i].text.as_str()) {
                        let end = rest[i + 1..]
                            .iter()
                            .position(|w| w.text == ";" || w.text == "+")
                            .map_or(rest.len(), |n| i + 1 + n);
                        if end > i + 1 {
                            self.simple(&rest[i + 1..end], depth);
                        }
                        i = end;
                    }
                    i += 1;
                }
                return;
            }
            if name == "eval" {
                let s: Vec<&str> = rest[1..].iter().map(|w| w.text.as_str()).collect();
                if rest[1..].iter().any(|w| w.dynamic) || depth >= 8 {
                    self.note(
                        Decision::Prompt,
                        None,
                        "eval of a string only known at run time".into(),
                    );
                } else {
                    self.string(&s.join(" "), depth + 1);
                }
                return;
            }
            let Some((_, takes_value)) = WRAPPERS.iter().find(|(w, _)| *w == name) else {
                return;
            };
            // Skip the wrapper, its options (and their values), env's assignments and the
            // one operand before the command of timeout (the duration) and flock (the file).
            let mut i = 1;
            let mut operands = usize::from(name == "timeout" || name == "flock");
            while let Some(w) = rest.get(i) {
                let t = w.text.as_str();
                if t == "--" {
                    i += 1;
                    break;
                }
                if t.starts_with('-') && t.len() > 1 {
                    i += if takes_value.contains(&t) { 2 } else { 1 };
                } else if name == "env" && t.contains('=') {
                    i += 1;
                } else if operands > 0 {
                    operands -= 1;
                    i += 1;
                } else {
                    break;
                }
            }
            rest = rest.get(i..).unwrap_or(&[]);
        }
    }

    /// One argv (no unwrapping): every program/prefix rule that matches, else the default.
    fn one(&mut self, argv: &[Word]) {
        let policy = self.policy;
        let mut matched = false;
        let shown = argv
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if argv.first().is_some_and(|w| w.dynamic) {
            self.note(
                Decision::Prompt,
                None,
                format!("the program of `{shown}` is only known at run time"),
            );
        }
        for r in &policy.rules {
            match argv_hit(&r.matcher, argv) {
                Hit::Yes => {
                    matched = true;
                    self.note(
                        r.decision,
                        Some(r),
                        format!("`{shown}` matches {}", r.describe()),
                    );
                }
                Hit::Maybe if r.decision > Decision::Allow => {
                    matched = true;
                    self.note(
                        Decision::Prompt,
                        Some(r),
                        format!(
                            "`{shown}` may match {} (a word is only known at run time)",
                            r.describe()
                        ),
                    );
                }
                Hit::Maybe | Hit::No => {}
            }
        }
        if !matched {
            if argv.iter().all(|w| !w.dynamic) {
                self.unmatched
                    .push(argv.iter().map(|w| w.text.clone()).collect());
            }
            self.note(
                policy.default,
                None,
                format!("`{shown}` matches no rule (default)"),
            );
        }
    }

    fn verdict(&self) -> Verdict {
        let (decision, rule, reason) =
            self.best
                .clone()
                .unwrap_or((self.policy.default, None, "no command (default)".into()));
        Verdict {
            decision,
            rule_line: rule.map(|r| r.line),
            rule: rule.map(Rule::describe),
            justification: rule.and_then(|r| r.justification.clone()),
            reason,
        }
    }
}

/// `-c` combined with other single-letter options (`-ec`, `-lc`).
fn is_c_cluster(t: &str) -> bool {
    t.len() > 2
        && t.starts_with('-')
        && !t.starts_with("--")
        && t[1..].bytes().all(|c| c.is_ascii_alphabetic())
        && t.contains('c')
}

/// The last path component of a program word.
fn program_name(t: &str) -> &str {
    t.rsplit(['/', '\\']).next().unwrap_or(t)
}

fn argv_hit(m: &Matcher, argv: &[Word]) -> Hit {
    match m {
        Matcher::Pattern(_) => Hit::No,
        Matcher::Program(p) => match argv.first() {
            Some(w) if w.dynamic => Hit::Maybe,
            Some(w) if program_name(&w.text) == p => Hit::Yes,
            _ => Hit::No,
        },
        Matcher::Prefix(words) | Matcher::Argv(words) => {
            let exact = matches!(m, Matcher::Argv(_));
            if argv.len() < words.len() || (exact && argv.len() != words.len()) {
                return Hit::No;
            }
            let mut hit = Hit::Yes;
            for (i, (w, want)) in argv.iter().zip(words).enumerate() {
                // `prefix` compares the program by its name (`/bin/rm` is `rm`); `argv`
                // compares every word as written (`ls` is not `./ls`).
                let text = if i == 0 && !exact {
                    program_name(&w.text)
                } else {
                    w.text.as_str()
                };
                if w.dynamic {
                    hit = Hit::Maybe;
                } else if text != want {
                    return Hit::No;
                }
            }
            hit
        }
    }
}

/// Whether `rule` alone matches the command string `ex` (for the file's examples).
fn rule_hit(rule: &Rule, ex: &str) -> Hit {
    let one = Policy {
        path: None,
        default: Decision::Allow,
        rules: vec![Rule {
            decision: Decision::Forbid,
            ..rule.clone()
        }],
    };
    let v = one.check_command(ex);
    match (v.decision, v.rule_line) {
        (Decision::Forbid, Some(_)) => Hit::Yes,
        (Decision::Prompt, Some(_)) => Hit::Maybe,
        _ => Hit::No,
    }
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(offset)
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

/// The line of the `[[rule]]` header of a rule whose table starts at `offset` (the span of
/// an array-of-tables element starts at its header or at its first key, depending on the
/// parser; search back for the header).
fn header_line(text: &str, offset: usize) -> usize {
    let before = text.get(..offset.min(text.len())).unwrap_or("");
    let here = text.get(offset.min(text.len())..).unwrap_or("");
    if here.trim_start().starts_with("[[") {
        return line_of(text, offset + (here.len() - here.trim_start().len()));
    }
    match before.rfind("[[") {
        Some(i) => line_of(text, i),
        None => line_of(text, offset),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
