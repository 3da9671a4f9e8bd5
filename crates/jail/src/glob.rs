//! FILE_LIST glob matching (JAIL_FILES_EXEC.md 9.3): `*`, `?`, `[set]` with ranges and `!`,
//! no escapes, anchored, on whole characters of the entry name only.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Star,
    Any,
    Lit(char),
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

/// A compiled glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    toks: Vec<Tok>,
    never: bool,
    fold: bool,
}

impl Glob {
    /// Compiles `pattern`. With `case_insensitive`, pattern and names are lower-cased
    /// before matching (9.3). `windows` makes `\` a path separator (matches nothing).
    pub fn new(pattern: &str, case_insensitive: bool, windows: bool) -> Glob {
        let pattern = if case_insensitive {
            pattern.to_lowercase()
        } else {
            pattern.to_owned()
        };
        let never = pattern.contains('/') || (windows && pattern.contains('\\'));
        let chars: Vec<char> = pattern.chars().collect();
        let mut toks = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => toks.push(Tok::Star),
                '?' => toks.push(Tok::Any),
                '[' => match parse_set(&chars, i + 1) {
                    Some((tok, next)) => {
                        toks.push(tok);
                        i = next;
                        continue;
                    }
                    None => toks.push(Tok::Lit('[')),
                },
                c => toks.push(Tok::Lit(c)),
            }
            i += 1;
        }
        Glob {
            toks,
            never,
            fold: case_insensitive,
        }
    }

    /// Whether the entry name matches.
    pub fn matches(&self, name: &str) -> bool {
        if self.never {
            return false;
        }
        let name: Vec<char> = if self.fold {
            name.to_lowercase().chars().collect()
        } else {
            name.chars().collect()
        };
        match_from(&self.toks, &name)
    }
}

/// Parses a set starting after `[`; `None` when unterminated (then `[` is literal).
fn parse_set(chars: &[char], mut i: usize) -> Option<(Tok, usize)> {
    let mut negated = false;
    if chars.get(i) == Some(&'!') {
        negated = true;
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Tok::Set { negated, items }, i + 1));
        }
        first = false;
        if chars.get(i + 1) == Some(&'-')
            && let Some(&hi) = chars.get(i + 2)
            && hi != ']'
        {
            items.push((c, hi));
            i += 3;
            continue;
        }
        items.push((c, c));
        i += 1;
    }
}

fn tok_matches(t: &Tok, c: char) -> bool {
    match t {
        Tok::Any => true,
        Tok::Lit(l) => *l == c,
        Tok::Set { negated, items } => {
            items.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negated
        }
        Tok::Star => false,
    }
}

/// Iterative wildcard matching with single-star backtracking (linear in practice).
fn match_from(toks: &[Tok], name: &[char]) -> bool {
    let (mut t, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match toks.get(t) {
            Some(Tok::Star) => {
                star = Some((t, n));
                t += 1;
            }
            Some(tok) if tok_matches(tok, name[n]) => {
                t += 1;
                n += 1;
            }
            _ => match star {
                Some((st, sn)) => {
                    t = st + 1;
                    n = sn + 1;
                    star = Some((st, sn + 1));
                }
                None => return false,
            },
        }
    }
    toks[t..].iter().all(|x| *x == Tok::Star)
}

#[cfg(test)]
#[path = "glob_tests.rs"]
mod tests;
