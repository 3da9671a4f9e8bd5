//! "Always allow": the running daemon's policy, and the rules an approval answered with
//! `autogpt-shim approve --always ID` appends to the policy file.
//!
//! The file's text is kept as it is (comments, order, spacing); the new rules are appended
//! after it, each with a comment saying when and by whom, and an `argv = [..]` matcher: the
//! approved command's words exactly, so that an approved `rm -rf build` does not also allow
//! `rm -rf build /`. The new text is checked like any policy file (every rule's examples
//! too, including the new rule's `match` example) before it replaces the file in one
//! rename; then the daemon uses it at once.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::RwLock;

use crate::policy::Decision;
use crate::policy::Policy;
use crate::policy::PolicyError;
use crate::policy::Subject;

/// The policy a running daemon judges commands with; "always allow" replaces it.
#[derive(Debug)]
pub struct SharedPolicy {
    /// The configured `command_policy_file` (`None`: everything is allowed, and "always
    /// allow" has nowhere to write).
    pub path: Option<PathBuf>,
    current: RwLock<Arc<Policy>>,
    /// Held while the file is rewritten, so that two answers do not lose each other's rule.
    writing: Mutex<()>,
}

/// What "always allow" wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amended {
    /// The policy file.
    pub file: PathBuf,
    /// The new rules: the line of each `[[rule]]` header and the rule as written
    /// (`argv = ["git", "push"]`). Empty when the file already allows the command.
    pub rules: Vec<(usize, String)>,
}

/// Why "always allow" wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmendError {
    /// No `command_policy_file` is configured.
    #[error(
        "no command_policy_file is configured, so there is no file to write the rule to\nhint: set command_policy_file (or AUTOGPT_SHIM_COMMAND_POLICY_FILE) and restart the daemon, or approve the command once with `autogpt-shim approve ID`"
    )]
    NoFile,
    /// The file on disk cannot be used now (it was edited since the daemon loaded it).
    #[error(
        "the policy file cannot be used as it is now: {0}\nhint: fix it; the daemon still uses the version it loaded"
    )]
    Invalid(PolicyError),
    /// No allow rule can make this command run.
    #[error(
        "{0}\nhint: approve it once with `autogpt-shim approve ID`, or change that rule in the policy file"
    )]
    NotAllowable(String),
    /// Reading or replacing the file failed.
    #[error("cannot write the policy file {0}")]
    Io(String),
}

impl SharedPolicy {
    /// The daemon's policy, loaded from `policy.path` (or allow-all).
    pub fn new(policy: Policy) -> SharedPolicy {
        SharedPolicy {
            path: policy.path.clone(),
            current: RwLock::new(Arc::new(policy)),
            writing: Mutex::new(()),
        }
    }

    /// The policy to judge the next command with.
    pub fn current(&self) -> Arc<Policy> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Appends the allow rules that make `subject` run from now on to the policy file
    /// ([`Policy::allow_rules_for`], judged against the file as it is on disk now), and
    /// uses the new file at once. `note` goes into the comment above the rules. Blocking
    /// (file I/O).
    pub fn always_allow(&self, subject: &Subject, note: &str) -> Result<Amended, AmendError> {
        let Some(path) = &self.path else {
            return Err(AmendError::NoFile);
        };
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let name = path.display().to_string();
        let io = |e: std::io::Error| AmendError::Io(format!("{name}: {e}"));
        let text = std::fs::read_to_string(path).map_err(io)?;
        let on_disk = Policy::parse(&text, &name).map_err(AmendError::Invalid)?;
        let argvs = on_disk
            .allow_rules_for(subject)
            .map_err(AmendError::NotAllowable)?;
        let new_text = with_allow_rules(&text, &argvs, note);
        // The new text is checked like any policy file: every example, the new ones too.
        let mut policy = Policy::parse(&new_text, &name)
            .map_err(|e| AmendError::Io(format!("{name}: the amended file would not load: {e}")))?;
        if policy.check(subject).decision != Decision::Allow {
            return Err(AmendError::Io(format!(
                "{name}: the amended file would still not allow the command"
            )));
        }
        policy.path = Some(path.clone());
        let rules: Vec<(usize, String)> = policy.rules[on_disk.rules.len()..]
            .iter()
            .map(|r| (r.line, r.describe()))
            .collect();
        if !argvs.is_empty() {
            replace_file(path, &text, &new_text).map_err(io)?;
        }
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
        Ok(Amended {
            file: path.clone(),
            rules,
        })
    }
}

/// `text` with one `argv = [..]` allow rule per argv appended, under a comment `note`.
pub fn with_allow_rules(text: &str, argvs: &[Vec<String>], note: &str) -> String {
    let mut out = text.to_owned();
    if argvs.is_empty() {
        return out;
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let note: String = note
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    for argv in argvs {
        let words: Vec<String> = argv.iter().map(|w| toml_string(w)).collect();
        let example = example_for(argv)
            .map(|e| format!("match = [{}]\n", toml_string(&e)))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n# {note}\n[[rule]]\ndecision = \"allow\"\nargv = [{}]\n{example}",
            words.join(", "),
        ));
    }
    out
}

/// A command string the rule `argv = argv` matches, to check it at every load: the words
/// quoted, or, when the shell would read the first word as a keyword or an assignment
/// (`if`, `a=b`, which only a wrapper such as `sudo` runs as a program), after `command`.
/// `None` when neither matches (the rule is then written without an example).
fn example_for(argv: &[String]) -> Option<String> {
    let quoted = argv
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    let rule = super::Rule {
        line: 0,
        decision: Decision::Allow,
        justification: None,
        matcher: super::Matcher::Argv(argv.to_vec()),
    };
    [quoted.clone(), format!("command {quoted}")]
        .into_iter()
        .find(|ex| super::rule_hit(&rule, ex) == super::Hit::Yes)
}

/// A TOML basic string (JSON's escapes are a subset of TOML's).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A word as a shell would need it typed: bare when it is plain, else in single quotes.
fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Replaces the file behind `path` (through a symlink, the link stays) with `new` in one
/// rename, keeping its permissions; refuses when its text is no longer `old` (edited
/// meanwhile), so that an edit is never lost.
fn replace_file(path: &Path, old: &str, new: &str) -> std::io::Result<()> {
    let real = std::fs::canonicalize(path)?;
    let dir = real
        .parent()
        .ok_or_else(|| std::io::Error::other("the file has no directory"))?;
    let perms = std::fs::metadata(&real)?.permissions();
    let mut tmp = tempfile::Builder::new()
        .prefix(".policy-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(new.as_bytes())?;
    tmp.as_file().set_permissions(perms)?;
    tmp.as_file().sync_all()?;
    if std::fs::read_to_string(&real)? != old {
        return Err(std::io::Error::other(
            "it was changed while the rule was being added; try again",
        ));
    }
    tmp.persist(&real).map_err(|e| e.error)?;
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
#[path = "amend_tests.rs"]
mod tests;
