//! FILE_LIST (9).

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::fd::BorrowedFd;
use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::error::JailError;
use crate::error::OsCtx;
use crate::error::map_os;
use crate::glob::Glob;
use crate::lexical::PathOs;
use crate::root::JailRoot;
use crate::sys;
use crate::types::ListEntry;
use crate::types::ListOptions;
use crate::types::ListResult;
use crate::walk::Mode;
use crate::walk::Target;
use crate::walk::Want;

/// Entries examined before giving up with `truncated: true` (9.1 step 7).
const MAX_EXAMINED: usize = 100_000;

struct Lister<'a> {
    jail: &'a JailRoot,
    glob: Option<Glob>,
    opts: &'a ListOptions,
    out: Vec<ListEntry>,
    examined: usize,
    truncated: bool,
}

impl JailRoot {
    /// FILE_LIST: lists a directory inside the root (9).
    pub fn list(&self, wire: &str, opts: &ListOptions) -> Result<ListResult, JailError> {
        let path = self.parse(wire)?;
        if opts.max_entries == 0 {
            return Err(JailError::Internal("max_entries must be at least 1".into()));
        }
        let r = self.resolve(
            &path,
            Mode {
                follow_final: true,
                want: Want::Dir,
                need_parent: false,
            },
        )?;
        let (meta, fd, open_err) = match &r.target {
            Target::Missing { .. } => return Err(JailError::not_found(wire)),
            Target::Existing { meta, fd, open_err } => (meta, fd, open_err),
        };
        if !meta.is_dir() {
            return Err(JailError::internal("not a directory", wire));
        }
        if let Some(e) = open_err {
            return Err(map_os(*e, wire, OsCtx::Other));
        }
        let Some(fd) = fd else {
            return Err(JailError::internal("cannot open directory", wire));
        };
        let fold = sys::dir_is_case_insensitive(fd.as_fd());
        let glob = opts
            .glob
            .as_deref()
            .map(|g| Glob::new(g, fold, PathOs::host() == PathOs::Windows));
        let mut l = Lister {
            jail: self,
            glob,
            opts,
            out: Vec::new(),
            examined: 0,
            truncated: false,
        };
        let names = sys::read_names(fd.as_fd()).map_err(|e| map_os(e, wire, OsCtx::Other))?;
        // Directory-level pre-order without recursion: a directory's entries are reported,
        // then its subdirectories are visited in name order (a stack of pending ones).
        let mut pending: Vec<(Rc<OwnedFd>, OsString, Vec<OsString>)> = Vec::new();
        let base = Rc::new(
            fd.try_clone()
                .map_err(|e| JailError::Internal(e.to_string()))?,
        );
        let subdirs = l.dir(base.as_fd(), &r.rel, names);
        push_subdirs(&mut pending, &base, &r.rel, subdirs);
        while let Some((parent, name, rel)) = pending.pop() {
            if l.done() {
                break;
            }
            let Ok(sfd) = sys::open_dir_nofollow(parent.as_fd(), &name) else {
                continue;
            };
            let Ok(names) = sys::read_names(sfd.as_fd()) else {
                continue;
            };
            let sfd = Rc::new(sfd);
            let subdirs = l.dir(sfd.as_fd(), &rel, names);
            push_subdirs(&mut pending, &sfd, &rel, subdirs);
        }
        Ok(ListResult {
            entries: l.out,
            truncated: l.truncated,
            path: self.display(&r.rel),
        })
    }
}

impl Lister<'_> {
    fn done(&self) -> bool {
        self.truncated
    }

    /// Reports the entries of one directory; returns its subdirectories to visit.
    fn dir(&mut self, fd: BorrowedFd<'_>, rel: &[OsString], names: Vec<OsString>) -> Vec<OsString> {
        // Names that are not valid UTF-8 are omitted (9.2).
        let mut names: Vec<(String, OsString)> = names
            .into_iter()
            .filter_map(|n| n.to_str().map(|s| (s.to_owned(), n.clone())))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        let mut subdirs = Vec::new();
        for (name, os) in names {
            if self.done() {
                return subdirs;
            }
            if name.starts_with('.') && !self.opts.include_hidden {
                continue;
            }
            self.examined += 1;
            if self.examined > MAX_EXAMINED {
                self.truncated = true;
                return subdirs;
            }
            let Ok(meta) = sys::lstat_at(fd, &os) else {
                continue;
            };
            if meta.is_dir() && self.opts.recursive {
                subdirs.push(os.clone());
            }
            if !self.glob.as_ref().is_none_or(|g| g.matches(&name)) {
                continue;
            }
            if self.out.len() >= self.opts.max_entries {
                self.truncated = true;
                return subdirs;
            }
            let mut erel = rel.to_vec();
            erel.push(os.clone());
            let (is_file, is_dir) = if meta.is_link() {
                match self.jail.resolve_from(fd, rel, &os, Want::Meta) {
                    Ok(r) => match r.meta() {
                        Some(m) => (m.is_file(), m.is_dir()),
                        None => (false, false),
                    },
                    Err(_) => (false, false),
                }
            } else {
                (meta.is_file(), meta.is_dir())
            };
            self.out.push(ListEntry {
                name,
                path: self.jail.display(&erel),
                is_file,
                is_dir,
                is_symlink: meta.is_link(),
                size_bytes: meta.size,
                mtime: meta.mtime,
            });
        }
        subdirs
    }
}

/// Queues `subdirs` of `dir` so that they pop in name order.
fn push_subdirs(
    pending: &mut Vec<(Rc<OwnedFd>, OsString, Vec<OsString>)>,
    dir: &Rc<OwnedFd>,
    rel: &[OsString],
    subdirs: Vec<OsString>,
) {
    for sub in subdirs.into_iter().rev() {
        let mut srel = rel.to_vec();
        srel.push(sub.clone());
        pending.push((Rc::clone(dir), sub, srel));
    }
}
