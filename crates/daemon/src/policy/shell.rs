//! Splits a POSIX shell command string into the simple commands it would run, so that the
//! command policy can judge each one (`a; rm -rf /` is two commands, `$(curl x)` runs
//! `curl`).
//!
//! Conservative by design: what it does not understand (`case`, function definitions, an
//! unterminated quote or substitution, arithmetic holding a substitution) is an
//! [`Unparsed`] error, which the policy answers with `prompt`. Words that the shell would
//! expand at run time (`$X`, `$(..)`, globs are not expansions here) are marked
//! [`Word::dynamic`]: the policy cannot know their value.

/// One word of a simple command after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text with quotes and backslashes removed; expansions are kept as written.
    pub text: String,
    /// Whether the shell would expand part of it at run time (`$X`, `${X}`, `$(..)`, backticks).
    pub dynamic: bool,
}

/// One simple command: its words after leading assignments and redirections are removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words; never empty.
    pub argv: Vec<Word>,
}

/// Why a string could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unparsed(pub String);

/// How deeply substitutions and `sh -c` strings may nest before the string is refused.
const MAX_DEPTH: usize = 16;

/// Splits `src` into its simple commands, including those inside subshells, groups and
/// command or process substitutions (also inside double quotes and unquoted here-documents).
pub fn split(src: &str) -> Result<Vec<SimpleCommand>, Unparsed> {
    split_at_depth(src, 0)
}

pub(super) fn split_at_depth(src: &str, depth: usize) -> Result<Vec<SimpleCommand>, Unparsed> {
    if depth > MAX_DEPTH {
        return Err(Unparsed("substitutions nested too deeply".into()));
    }
    let mut p = Parser {
        s: src.as_bytes(),
        src,
        i: 0,
        depth,
        out: Vec::new(),
        heredocs: Vec::new(),
    };
    p.commands(None)?;
    Ok(p.out)
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    depth: usize,
    out: Vec<SimpleCommand>,
    /// Here-documents whose bodies start after the current line: (delimiter, strip tabs,
    /// body expands).
    heredocs: Vec<(String, bool, bool)>,
}

/// What ended a word list.
#[derive(PartialEq, Eq)]
enum End {
    /// `;`, `&`, `&&`, `|`, `||`, `|&` or a newline: another command may follow.
    Separator,
    /// The closing `)` the caller waits for.
    Close,
    /// End of input.
    Eof,
}

const KEYWORDS_BEFORE_COMMAND: &[&str] = &[
    "if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!", "{", "}",
];

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at(&self, lit: &str) -> bool {
        self.s[self.i..].starts_with(lit.as_bytes())
    }

    /// Commands until end of input or, with `close`, the matching `)`.
    fn commands(&mut self, close: Option<u8>) -> Result<(), Unparsed> {
        loop {
            match self.command()? {
                End::Separator => {}
                End::Close if close.is_some() => return Ok(()),
                End::Close => return Err(Unparsed("unbalanced ')'".into())),
                End::Eof if close.is_some() => {
                    return Err(Unparsed("unterminated '(' or '$('".into()));
                }
                End::Eof => return Ok(()),
            }
        }
    }

    /// One simple command (or a keyword / subshell at command position) up to its end.
    fn command(&mut self) -> Result<End, Unparsed> {
        let mut argv: Vec<Word> = Vec::new();
        let mut in_for_header = false;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                self.finish(argv);
                return Ok(End::Eof);
            };
            match c {
                b'\n' => {
                    self.i += 1;
                    self.finish(argv);
                    self.read_heredoc_bodies()?;
                    return Ok(End::Separator);
                }
                b';' | b'&' | b'|' => {
                    if self.at(";;") {
                        return Err(Unparsed("'case' is not supported".into()));
                    }
                    if self.at("&>") {
                        self.i += 2;
                        if self.peek() == Some(b'>') {
                            self.i += 1;
                        }
                        self.redirect_target()?;
                        continue;
                    }
                    self.i += 1;
                    // `&&`, `||` and `|&` are one operator each.
                    let doubled = self.peek() == Some(c) && c != b';';
                    if doubled || (c == b'|' && self.peek() == Some(b'&')) {
                        self.i += 1;
                    }
                    self.finish(argv);
                    return Ok(End::Separator);
                }
                b'(' => {
                    if !argv.is_empty() {
                        if self.at("()") {
                            return Err(Unparsed("function definitions are not supported".into()));
                        }
                        return Err(Unparsed("unexpected '('".into()));
                    }
                    if self.at("((") {
                        return Err(Unparsed("arithmetic commands are not supported".into()));
                    }
                    self.i += 1;
                    self.commands(Some(b')'))?;
                }
                b')' => {
                    self.i += 1;
                    self.finish(argv);
                    return Ok(End::Close);
                }
                b'#' if argv.is_empty() || self.s[self.i - 1].is_ascii_whitespace() => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.i += 1;
                    }
                }
                _ => {
                    if self.redirection()? {
                        continue;
                    }
                    let w = self.word()?;
                    if argv.is_empty() {
                        if in_for_header {
                            if w.text == "do" {
                                in_for_header = false;
                            }
                            continue;
                        }
                        if is_assignment(&w.text) {
                            continue;
                        }
                        match w.text.as_str() {
                            "case" | "function" | "coproc" | "select" => {
                                return Err(Unparsed(format!("'{}' is not supported", w.text)));
                            }
                            "for" => {
                                in_for_header = true;
                                continue;
                            }
                            k if KEYWORDS_BEFORE_COMMAND.contains(&k) => continue,
                            _ => {}
                        }
                    }
                    argv.push(w);
                }
            }
        }
    }

    fn finish(&mut self, argv: Vec<Word>) {
        if !argv.is_empty() {
            self.out.push(SimpleCommand { argv });
        }
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            if c == b' ' || c == b'\t' || c == b'\r' {
                self.i += 1;
            } else if self.at("\\\n") {
                self.i += 2;
            } else {
                break;
            }
        }
    }

    /// A redirection operator (with an optional fd number) and its target; `false` if none.
    fn redirection(&mut self) -> Result<bool, Unparsed> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let Some(c) = self.peek() else {
            self.i = start;
            return Ok(false);
        };
        if c != b'<' && c != b'>' {
            self.i = start;
            return Ok(false);
        }
        if self.at("<(") || self.at(">(") {
            // Process substitution: a command list, then the word it stands for.
            self.i = start;
            return Ok(false);
        }
        if self.at("<<<") {
            self.i += 3;
            self.redirect_target()?;
            return Ok(true);
        }
        if self.at("<<") {
            self.i += 2;
            let strip = self.peek() == Some(b'-');
            if strip {
                self.i += 1;
            }
            self.skip_blanks();
            let raw_start = self.i;
            let w = self.word()?;
            let quoted = self.src[raw_start..self.i].contains(['\'', '"', '\\']);
            if w.text.is_empty() {
                return Err(Unparsed("here-document without a delimiter".into()));
            }
            self.heredocs.push((w.text, strip, !quoted));
            return Ok(true);
        }
        self.i += 1;
        if matches!(self.peek(), Some(b'>' | b'&' | b'|')) {
            self.i += 1;
        }
        self.redirect_target()?;
        Ok(true)
    }

    fn redirect_target(&mut self) -> Result<(), Unparsed> {
        self.skip_blanks();
        match self.peek() {
            None | Some(b'\n' | b';' | b'&' | b'|' | b')') => {
                Err(Unparsed("redirection without a target".into()))
            }
            _ => self.word().map(|_| ()),
        }
    }

    /// After a newline: the bodies of pending here-documents, line by line.
    fn read_heredoc_bodies(&mut self) -> Result<(), Unparsed> {
        for (delim, strip, expands) in std::mem::take(&mut self.heredocs) {
            loop {
                if self.i >= self.s.len() {
                    return Err(Unparsed(format!("here-document '{delim}' is not closed")));
                }
                let end = self.s[self.i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.s.len(), |n| self.i + n);
                let line = &self.src[self.i..end];
                self.i = (end + 1).min(self.s.len());
                let candidate = if strip {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if candidate == delim {
                    break;
                }
                if expands && (line.contains("$(") || line.contains('`')) {
                    // The body expands: its substitutions run. Scan it like a double-quoted
                    // string.
                    let mut inner = Parser {
                        s: line.as_bytes(),
                        src: line,
                        i: 0,
                        depth: self.depth,
                        out: Vec::new(),
                        heredocs: Vec::new(),
                    };
                    while inner.i < inner.s.len() {
                        inner.dquoted_char(&mut String::new(), &mut false, false)?;
                    }
                    self.out.append(&mut inner.out);
                }
            }
        }
        Ok(())
    }

    /// One word, quote removal done, substitutions inside it split into `self.out`.
    fn word(&mut self) -> Result<Word, Unparsed> {
        let mut text = String::new();
        let mut dynamic = false;
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b')' => break,
                b'(' => {
                    return Err(Unparsed("unexpected '(' inside a word".into()));
                }
                b'<' | b'>' => {
                    if self.at("<(") || self.at(">(") {
                        self.i += 2;
                        self.nested(b')')?;
                        dynamic = true;
                        text.push_str("<(..)");
                        continue;
                    }
                    break;
                }
                b'\'' => {
                    self.i += 1;
                    let Some(n) = self.s[self.i..].iter().position(|&c| c == b'\'') else {
                        return Err(Unparsed("unterminated single quote".into()));
                    };
                    text.push_str(&self.src[self.i..self.i + n]);
                    self.i += n + 1;
                }
                b'"' => {
                    self.i += 1;
                    loop {
                        match self.peek() {
                            None => return Err(Unparsed("unterminated double quote".into())),
                            Some(b'"') => {
                                self.i += 1;
                                break;
                            }
                            Some(_) => self.dquoted_char(&mut text, &mut dynamic, true)?,
                        }
                    }
                }
                b'\\' => {
                    self.i += 1;
                    match self.peek() {
                        None => {}
                        Some(b'\n') => self.i += 1,
                        Some(_) => self.push_char(&mut text),
                    }
                }
                b'$' | b'`' => self.dollar(&mut text, &mut dynamic)?,
                _ => self.push_char(&mut text),
            }
        }
        Ok(Word { text, dynamic })
    }

    /// One character (or escape, or substitution) inside double quotes.
    fn dquoted_char(
        &mut self,
        text: &mut String,
        dynamic: &mut bool,
        in_quotes: bool,
    ) -> Result<(), Unparsed> {
        match self.peek() {
            Some(b'\\') => {
                self.i += 1;
                match self.peek() {
                    Some(b'$' | b'`' | b'"' | b'\\') if in_quotes => self.push_char(text),
                    Some(b'\n') => self.i += 1,
                    Some(_) => {
                        text.push('\\');
                        self.push_char(text);
                    }
                    None => text.push('\\'),
                }
                Ok(())
            }
            Some(b'$' | b'`') => self.dollar(text, dynamic),
            Some(_) => {
                self.push_char(text);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// `$...` or a backtick: parameter expansions mark the word dynamic; command
    /// substitutions are split too.
    fn dollar(&mut self, text: &mut String, dynamic: &mut bool) -> Result<(), Unparsed> {
        if self.peek() == Some(b'`') {
            self.i += 1;
            let mut inner = String::new();
            loop {
                match self.peek() {
                    None => return Err(Unparsed("unterminated backquote".into())),
                    Some(b'`') => break,
                    Some(b'\\') if matches!(self.s.get(self.i + 1), Some(b'`' | b'\\' | b'$')) => {
                        inner.push(char::from(self.s[self.i + 1]));
                        self.i += 2;
                    }
                    Some(_) => {
                        let ch_start = self.i;
                        self.skip_char();
                        inner.push_str(&self.src[ch_start..self.i]);
                    }
                }
            }
            self.i += 1;
            let mut cmds = split_at_depth(&inner, self.depth + 1)?;
            self.out.append(&mut cmds);
            *dynamic = true;
            text.push_str("`..`");
            return Ok(());
        }
        // At '$'.
        if self.at("$((") {
            let start = self.i;
            let Some(n) = self.src[self.i..].find("))") else {
                return Err(Unparsed("unterminated arithmetic expansion".into()));
            };
            let body = &self.src[self.i + 3..self.i + n];
            if body.contains("$(") || body.contains('`') {
                return Err(Unparsed(
                    "substitutions inside arithmetic are not supported".into(),
                ));
            }
            self.i += n + 2;
            *dynamic = true;
            text.push_str(&self.src[start..self.i]);
            return Ok(());
        }
        if self.at("$(") {
            self.i += 2;
            self.nested(b')')?;
            *dynamic = true;
            text.push_str("$(..)");
            return Ok(());
        }
        if self.at("${") {
            let start = self.i;
            let Some(n) = self.src[self.i..].find('}') else {
                return Err(Unparsed("unterminated '${'".into()));
            };
            let body = &self.src[self.i + 2..self.i + n];
            if body.contains("$(") || body.contains('`') {
                return Err(Unparsed(
                    "substitutions inside '${..}' are not supported".into(),
                ));
            }
            self.i += n + 1;
            *dynamic = true;
            text.push_str(&self.src[start..self.i]);
            return Ok(());
        }
        let next = self.s.get(self.i + 1).copied();
        match next {
            Some(c) if c.is_ascii_alphanumeric() || b"_@*#?$!-".contains(&c) => {
                let start = self.i;
                self.i += 1;
                if c.is_ascii_alphabetic() || c == b'_' {
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    {
                        self.i += 1;
                    }
                } else {
                    self.i += 1;
                }
                *dynamic = true;
                text.push_str(&self.src[start..self.i]);
            }
            Some(b'\'') => {
                // $'..' ANSI-C quoting: escapes we do not interpret.
                return Err(Unparsed("$'..' quoting is not supported".into()));
            }
            _ => {
                self.push_char(text);
            }
        }
        Ok(())
    }

    /// A nested command list up to the matching `close`, split into `self.out`.
    fn nested(&mut self, close: u8) -> Result<(), Unparsed> {
        let mut inner = Parser {
            s: self.s,
            src: self.src,
            i: self.i,
            depth: self.depth + 1,
            out: Vec::new(),
            heredocs: Vec::new(),
        };
        if inner.depth > MAX_DEPTH {
            return Err(Unparsed("substitutions nested too deeply".into()));
        }
        inner.commands(Some(close))?;
        self.i = inner.i;
        self.out.append(&mut inner.out);
        Ok(())
    }

    fn push_char(&mut self, text: &mut String) {
        let start = self.i;
        self.skip_char();
        text.push_str(&self.src[start..self.i]);
    }

    fn skip_char(&mut self) {
        self.i += 1;
        while self.i < self.s.len() && !self.src.is_char_boundary(self.i) {
            self.i += 1;
        }
    }
}

/// `NAME=value` at command position: an assignment, not a command.
fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name
                    .bytes()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        }
        None => false,
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
