//! The FILE_* operations on Windows (JAIL_FILES_EXEC.md 6-11), on the handles and pinned
//! parent directories that [`JailRoot::resolve`] verified.

use std::fs::File;
use std::fs::Metadata;
use std::io::Write as _;
use std::os::windows::fs::FileExt;
use std::os::windows::fs::FileTypeExt;
use std::os::windows::fs::MetadataExt;
use std::os::windows::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;

use base64::Engine;
use windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_READONLY;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
use windows_sys::Win32::Storage::FileSystem::FILE_GENERIC_READ;
use windows_sys::Win32::Storage::FileSystem::FILE_READ_ATTRIBUTES;

use super::Ctx;
use super::JailRoot;
use super::MAX_BYTES_READ_BYTES;
use super::MAX_TEXT_READ_BYTES;
use super::Open;
use super::Resolved;
use super::eq_ci;
use super::is_exists;
use super::is_missing;
use super::map_io;
use super::open_path;
use super::pin_dir;
use super::sys;
use super::verbatim_of;
use crate::error::JailError;
use crate::glob::Glob;
use crate::lexical::Component;
use crate::mime::mime_for_name;
use crate::types::ContentEncoding;
use crate::types::DeleteOptions;
use crate::types::DeleteResult;
use crate::types::ListEntry;
use crate::types::ListOptions;
use crate::types::ListResult;
use crate::types::MoveOptions;
use crate::types::MoveResult;
use crate::types::ReadFormat;
use crate::types::ReadOptions;
use crate::types::ReadResult;
use crate::types::StatInfo;
use crate::types::WriteOptions;
use crate::types::WriteResult;

/// Entries examined before giving up with `truncated: true` (9.1 step 7).
const MAX_EXAMINED: usize = 100_000;

fn epoch(t: std::io::Result<SystemTime>) -> f64 {
    match t.map(|t| t.duration_since(SystemTime::UNIX_EPOCH)) {
        Ok(Ok(d)) => d.as_secs_f64(),
        Ok(Err(e)) => -e.duration().as_secs_f64(),
        Err(_) => 0.0,
    }
}

fn is_link(meta: &Metadata) -> bool {
    meta.file_type().is_symlink()
}

fn is_readonly(meta: &Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_READONLY != 0
}

/// 16 unpredictable hex digits.
fn random_hex() -> String {
    use std::hash::BuildHasher;
    use std::hash::Hasher;
    use std::sync::atomic::AtomicU64;
    use std::sync::atomic::Ordering;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(d) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    format!("{:016x}", h.finish())
}

fn last(rel: &[String]) -> &str {
    rel.last().map_or("", String::as_str)
}

/// Removes an entry by name without following it: links as links, a directory only when
/// empty (`recursive` = false) or with everything below it (10.2: links are removed as
/// entries, never followed; each subdirectory is pinned before it is emptied).
fn remove_entry(
    path: &Path,
    meta: &Metadata,
    recursive: bool,
    shown: &str,
) -> Result<(), JailError> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        let r = if ft.is_symlink_dir() {
            std::fs::remove_dir(path)
        } else {
            std::fs::remove_file(path)
        };
        return r.map_err(|e| map_io(&e, shown, Ctx::Other));
    }
    if !ft.is_dir() {
        return std::fs::remove_file(path).map_err(|e| map_io(&e, shown, Ctx::Other));
    }
    if recursive {
        let pin = pin_dir(path).map_err(|e| map_io(&e, shown, Ctx::Other))?;
        let pmeta = pin.metadata().map_err(|e| map_io(&e, shown, Ctx::Other))?;
        if is_link(&pmeta) || !pmeta.is_dir() {
            return Err(JailError::internal("directory changed", shown));
        }
        let entries = std::fs::read_dir(path).map_err(|e| map_io(&e, shown, Ctx::Other))?;
        for entry in entries {
            let entry = entry.map_err(|e| map_io(&e, shown, Ctx::Other))?;
            let child = entry.path();
            let cmeta =
                std::fs::symlink_metadata(&child).map_err(|e| map_io(&e, shown, Ctx::Other))?;
            remove_entry(&child, &cmeta, true, shown)?;
        }
        drop(pin);
    }
    std::fs::remove_dir(path).map_err(|e| map_io(&e, shown, Ctx::Rmdir))
}

impl JailRoot {
    /// FILE_READ: reads a window of a regular file inside the root (6).
    pub fn read(&self, wire: &str, opts: &ReadOptions) -> Result<ReadResult, JailError> {
        let path = self.parse(wire)?;
        if opts.length == Some(0) {
            return Err(JailError::Internal("length must be greater than 0".into()));
        }
        let r = self.resolve(
            &path,
            Open {
                access: FILE_GENERIC_READ,
                follow: true,
            },
        )?;
        let Resolved::Existing {
            file, meta, rel, ..
        } = r
        else {
            return Err(JailError::not_found(wire));
        };
        if meta.is_dir() {
            return Err(JailError::internal("is a directory, not a file", wire));
        }
        if !meta.is_file() {
            return Err(JailError::internal("not a regular file", wire));
        }
        let budget = match opts.format {
            ReadFormat::Text => MAX_TEXT_READ_BYTES,
            ReadFormat::Bytes => MAX_BYTES_READ_BYTES,
        };
        let limit = budget.min(self.max_file_size());
        let size = meta.len();
        let requested = opts.length.unwrap_or(size.saturating_sub(opts.offset));
        if requested > limit {
            return Err(JailError::TooLarge {
                size: requested,
                limit,
            });
        }
        let want = requested.min(size.saturating_sub(opts.offset));
        let want = usize::try_from(want).map_err(|_| JailError::Internal("too large".into()))?;
        let mut data = vec![0u8; want];
        let mut got = 0usize;
        while got < want {
            match file.seek_read(&mut data[got..], opts.offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(map_io(&e, wire, Ctx::Existing)),
            }
        }
        data.truncate(got);
        let n = data.len() as u64;
        let (content, encoding) = match opts.format {
            ReadFormat::Text => (
                String::from_utf8_lossy(&data).into_owned(),
                ContentEncoding::Utf8,
            ),
            ReadFormat::Bytes => (
                base64::engine::general_purpose::STANDARD.encode(&data),
                ContentEncoding::Base64,
            ),
        };
        Ok(ReadResult {
            content,
            encoding,
            size_bytes: n,
            truncated: opts.offset.saturating_add(n) < size,
            path: self.display(&rel),
        })
    }

    /// FILE_STAT (8). `Ok(None)` = `exists: false`.
    pub fn stat(&self, wire: &str, follow_symlinks: bool) -> Result<Option<StatInfo>, JailError> {
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: follow_symlinks,
            },
        )?;
        let Resolved::Existing {
            meta,
            rel,
            requested,
            ..
        } = r
        else {
            return Ok(None);
        };
        let is_symlink = if follow_symlinks {
            // `named_entry_is_link`: the entry the request names, not the target.
            open_path(&requested, FILE_READ_ATTRIBUTES, false)
                .and_then(|f| f.metadata())
                .is_ok_and(|m| is_link(&m))
        } else {
            is_link(&meta)
        };
        let link_itself = !follow_symlinks && is_link(&meta);
        let is_dir = meta.is_dir() && !link_itself;
        let is_file = meta.is_file() && !link_itself;
        let ro = is_readonly(&meta);
        let mode = match (is_dir, ro) {
            (true, true) => "0555",
            (true, false) => "0755",
            (false, true) => "0444",
            (false, false) => "0644",
        };
        Ok(Some(StatInfo {
            is_file,
            is_dir,
            is_symlink,
            size_bytes: meta.len(),
            mtime: epoch(meta.modified()),
            ctime: epoch(meta.created()),
            mode: mode.to_owned(),
            owner_uid: None,
            owner_gid: None,
            mime_type: if is_file {
                mime_for_name(last(&rel))
            } else {
                None
            },
            path: self.display(&rel),
        }))
    }

    /// Resolves `cwd` (followed, 4.6) to an opened directory inside the root and its
    /// display path; `None` means the root. Missing → `PATH_NOT_FOUND`, not a directory →
    /// `INTERNAL_ERROR`. The handle stays open while the command starts.
    pub fn open_dir(&self, wire: Option<&str>) -> Result<(cap_std::fs::Dir, String), JailError> {
        let wire_s = wire.unwrap_or(self.root_path.as_str());
        let path = self.parse(wire_s)?;
        let r = self.resolve(
            &path,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: true,
            },
        )?;
        let Resolved::Existing { meta, rel, .. } = r else {
            return Err(JailError::not_found(wire_s));
        };
        if !meta.is_dir() {
            return Err(JailError::internal("not a directory", wire_s));
        }
        // A readable directory handle (cap-std needs list access), checked to be the
        // same directory.
        let p = self.verbatim_rel(&rel);
        let dir = pin_dir(&p).map_err(|e| map_io(&e, wire_s, Ctx::Other))?;
        let fp = sys::final_path(&dir).map_err(|e| map_io(&e, wire_s, Ctx::Other))?;
        if self.rel_of(&fp).is_none() {
            return Err(JailError::outside(wire_s));
        }
        Ok((cap_std::fs::Dir::from_std_file(dir), self.display(&rel)))
    }

    /// FILE_WRITE (7): atomic replace through a temporary file in the verified parent.
    pub fn write(
        &self,
        wire: &str,
        content: &str,
        opts: &WriteOptions,
    ) -> Result<WriteResult, JailError> {
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: true,
            },
        )?;
        let (mut parent_rel, suffix, parent_pin) = match r {
            Resolved::Existing {
                file, meta, rel, ..
            } => {
                // The replace must not meet our own handle on the target.
                drop(file);
                if rel.is_empty() {
                    return Err(JailError::outside(wire));
                }
                if meta.is_dir() {
                    return Err(JailError::internal("is a directory", wire));
                }
                if !meta.is_file() {
                    return Err(JailError::internal("not a regular file", wire));
                }
                if is_readonly(&meta) {
                    return Err(JailError::internal("permission denied (read-only)", wire));
                }
                let mut parent_rel = rel;
                let name = parent_rel.pop().unwrap_or_default();
                let pin = pin_dir(&self.verbatim_rel(&parent_rel))
                    .map_err(|e| map_io(&e, wire, Ctx::Existing))?;
                (parent_rel, vec![name], pin)
            }
            Resolved::Missing {
                parent,
                parent_rel,
                suffix,
                through_file,
            } => {
                if through_file {
                    return Err(JailError::internal("a parent is not a directory", wire));
                }
                if suffix.len() > 1 && !opts.create_parents {
                    return Err(JailError::not_found(wire));
                }
                if suffix.len() == 1 {
                    // A dangling link at the final name: its target cannot be verified
                    // before it exists, so it is refused (fail closed, 7.2).
                    let at = self.verbatim_rel(&parent_rel).join(&suffix[0]);
                    if open_path(&at, FILE_READ_ATTRIBUTES, false).is_ok() {
                        return Err(JailError::outside(wire));
                    }
                }
                (parent_rel, suffix, parent)
            }
        };
        let data = match opts.encoding {
            ContentEncoding::Utf8 => content.as_bytes().to_vec(),
            ContentEncoding::Base64 => base64::engine::general_purpose::STANDARD
                .decode(content)
                .map_err(|e| JailError::Internal(format!("Bad base64: {e}")))?,
        };
        let limit = self.max_file_size();
        if data.len() as u64 > limit {
            return Err(JailError::TooLarge {
                size: data.len() as u64,
                limit,
            });
        }
        // 7.3: parents one at a time, each re-opened and verified before the next.
        let mut pin = parent_pin;
        let (dirs, leaf) = suffix.split_at(suffix.len().saturating_sub(1));
        for name in dirs {
            let p = self.verbatim_rel(&parent_rel).join(name);
            match std::fs::create_dir(&p) {
                Ok(()) => {}
                Err(e) if is_exists(&e) => {}
                Err(e) => return Err(map_io(&e, wire, Ctx::Other)),
            }
            let next = pin_dir(&p).map_err(|e| map_io(&e, wire, Ctx::Other))?;
            let meta = next.metadata().map_err(|e| map_io(&e, wire, Ctx::Other))?;
            let fp = sys::final_path(&next).map_err(|e| map_io(&e, wire, Ctx::Other))?;
            let mut want = parent_rel.clone();
            want.push(name.clone());
            let ok = self.rel_of(&fp).is_some_and(|rel| {
                rel.len() == want.len() && rel.iter().zip(&want).all(|(a, b)| eq_ci(a, b))
            });
            if !ok || is_link(&meta) || !meta.is_dir() {
                return Err(JailError::internal("created directory changed", wire));
            }
            parent_rel = want;
            pin = next;
        }
        let Some(leaf) = leaf.first() else {
            return Err(JailError::internal("no file name", wire));
        };
        let dir = self.verbatim_rel(&parent_rel);
        let tmp = dir.join(format!(".~agpt-{}.tmp", random_hex()));
        let written = (|| -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
                .open(&tmp)?;
            f.write_all(&data)?;
            f.sync_all()?;
            drop(f);
            sys::move_file(&tmp, &dir.join(leaf), true)
        })();
        drop(pin);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(map_io(&e, wire, Ctx::Existing));
        }
        let mut rel = parent_rel;
        rel.push(leaf.clone());
        Ok(WriteResult {
            path: self.display(&rel),
            size_bytes_written: data.len() as u64,
        })
    }

    /// FILE_LIST (9).
    pub fn list(&self, wire: &str, opts: &ListOptions) -> Result<ListResult, JailError> {
        let path = self.parse(wire)?;
        if opts.max_entries == 0 {
            return Err(JailError::Internal("max_entries must be at least 1".into()));
        }
        let r = self.resolve(
            &path,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: true,
            },
        )?;
        let Resolved::Existing {
            meta, rel, file, ..
        } = r
        else {
            return Err(JailError::not_found(wire));
        };
        if !meta.is_dir() {
            return Err(JailError::internal("not a directory", wire));
        }
        // NTFS directories are case-insensitive (J-CASE-1: insensitive unless known).
        let glob = opts.glob.as_deref().map(|g| Glob::new(g, true, true));
        let mut out = Vec::new();
        let mut truncated = false;
        let mut examined = 0usize;
        let mut pending: Vec<(Vec<String>, Option<File>)> = vec![(rel.clone(), Some(file))];
        'dirs: while let Some((drel, pin)) = pending.pop() {
            let dpath = self.verbatim_rel(&drel);
            let pin = match pin {
                Some(p) => p,
                None => match pin_dir(&dpath) {
                    Ok(p) => p,
                    Err(_) => continue,
                },
            };
            let Ok(rd) = std::fs::read_dir(&dpath) else {
                if drel == rel {
                    return Err(JailError::internal("cannot read directory", wire));
                }
                continue;
            };
            let mut names: Vec<(Vec<u16>, String, Metadata)> = rd
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let meta = e.metadata().ok()?;
                    Some((name.encode_utf16().collect(), name, meta))
                })
                .collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            let mut subdirs = Vec::new();
            for (_, name, emeta) in names {
                if name.starts_with('.') && !opts.include_hidden {
                    continue;
                }
                examined += 1;
                if examined > MAX_EXAMINED {
                    truncated = true;
                    break 'dirs;
                }
                let link = is_link(&emeta);
                let mut erel = drel.clone();
                erel.push(name.clone());
                if emeta.is_dir() && !link && opts.recursive {
                    subdirs.push(erel.clone());
                }
                if !glob.as_ref().is_none_or(|g| g.matches(&name)) {
                    continue;
                }
                if out.len() >= opts.max_entries {
                    truncated = true;
                    break 'dirs;
                }
                let (is_file, is_dir) = if link {
                    match open_path(&self.verbatim_rel(&erel), FILE_READ_ATTRIBUTES, true) {
                        Ok(f) => match (sys::final_path(&f), f.metadata()) {
                            (Ok(fp), Ok(m)) if self.rel_of(&fp).is_some() => {
                                (m.is_file(), m.is_dir())
                            }
                            _ => (false, false),
                        },
                        Err(_) => (false, false),
                    }
                } else {
                    (emeta.is_file(), emeta.is_dir())
                };
                out.push(ListEntry {
                    name,
                    path: self.display(&erel),
                    is_file,
                    is_dir,
                    is_symlink: link,
                    size_bytes: emeta.len(),
                    mtime: epoch(emeta.modified()),
                });
            }
            drop(pin);
            for s in subdirs.into_iter().rev() {
                pending.push((s, None));
            }
        }
        Ok(ListResult {
            entries: out,
            truncated,
            path: self.display(&rel),
        })
    }

    /// FILE_DELETE (10): removes the entry itself, never a link's target.
    pub fn delete(&self, wire: &str, opts: &DeleteOptions) -> Result<DeleteResult, JailError> {
        let path = self.parse(wire)?;
        let r = self.resolve(
            &path,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: false,
            },
        )?;
        let (meta, rel) = match r {
            Resolved::Missing { .. } if opts.missing_ok => {
                return Ok(DeleteResult {
                    path: None,
                    trashed_to: None,
                });
            }
            Resolved::Missing { .. } => return Err(JailError::not_found(wire)),
            Resolved::Existing { meta, rel, .. } => (meta, rel),
        };
        if rel.is_empty() {
            return Err(JailError::outside(wire));
        }
        let mut parent_rel = rel.clone();
        parent_rel.pop();
        let pin = pin_dir(&self.verbatim_rel(&parent_rel))
            .map_err(|e| map_io(&e, wire, Ctx::Existing))?;
        let target = self.verbatim_rel(&rel);
        let shown = self.display(&rel);
        if let Some(trash) = self.trash() {
            if meta.is_dir() && !is_link(&meta) && !opts.recursive {
                let empty = std::fs::read_dir(&target)
                    .map_err(|e| map_io(&e, wire, Ctx::Other))?
                    .next()
                    .is_none();
                if !empty {
                    return Err(JailError::NotEmpty {
                        path: wire.to_owned(),
                    });
                }
            }
            let stamp = jiff_free_stamp();
            let bucket = verbatim_of(trash).join(format!("{stamp}-{}", &random_hex()[..8]));
            std::fs::create_dir_all(&bucket)
                .map_err(|e| JailError::Internal(format!("trash: {e}")))?;
            let to = bucket.join(last(&rel));
            sys::move_file(&target, &to, false).map_err(|e| map_io(&e, wire, Ctx::Other))?;
            drop(pin);
            return Ok(DeleteResult {
                path: Some(shown),
                trashed_to: Some(sys::strip_verbatim(&to.to_string_lossy())),
            });
        }
        let res = remove_entry(&target, &meta, opts.recursive, wire).map_err(|e| match e {
            JailError::NotEmpty { .. } => JailError::NotEmpty {
                path: wire.to_owned(),
            },
            other => other,
        });
        drop(pin);
        res?;
        Ok(DeleteResult {
            path: Some(shown),
            trashed_to: None,
        })
    }

    /// FILE_MOVE (11): moves entries (links as links); `overwrite` replaces `dst` with a
    /// set-aside that is restored if the move fails.
    pub fn rename(
        &self,
        src: &str,
        dst: &str,
        opts: &MoveOptions,
    ) -> Result<MoveResult, JailError> {
        let sp = self.parse(src)?;
        let rs = self.resolve(
            &sp,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: false,
            },
        )?;
        let dp = self.parse(dst)?;
        let rd = self.resolve(
            &dp,
            Open {
                access: FILE_READ_ATTRIBUTES,
                follow: false,
            },
        )?;
        if matches!(&rs, Resolved::Existing { rel, .. } if rel.is_empty())
            || matches!(&rd, Resolved::Existing { rel, .. } if rel.is_empty())
        {
            return Err(JailError::outside(
                if matches!(&rs, Resolved::Existing { rel, .. } if rel.is_empty()) {
                    src
                } else {
                    dst
                },
            ));
        }
        let Resolved::Existing {
            file: sfile,
            meta: smeta,
            rel: srel,
            ..
        } = rs
        else {
            return Err(JailError::not_found(src));
        };
        let (drel, dexisting) = match rd {
            Resolved::Existing {
                file,
                meta,
                mut rel,
                ..
            } => {
                // The spelling the request asks for (a case-only rename, 11.1 step 5),
                // not the on-disk one of the final path.
                if let Some(Component::Name(n)) = dp.components().last()
                    && let Some(l) = rel.last_mut()
                    && eq_ci(n, l)
                {
                    *l = (*n).to_owned();
                }
                (rel, Some((file, meta)))
            }
            Resolved::Missing {
                parent_rel,
                suffix,
                through_file,
                ..
            } => {
                if through_file || suffix.len() != 1 {
                    return Err(JailError::not_found(dst));
                }
                let mut rel = parent_rel;
                rel.extend(suffix);
                (rel, None)
            }
        };
        let mut sparent = srel.clone();
        sparent.pop();
        let mut dparent = drel.clone();
        dparent.pop();
        let same_parent = sparent.len() == dparent.len()
            && sparent.iter().zip(&dparent).all(|(a, b)| eq_ci(a, b));
        let spath = self.verbatim_rel(&srel);
        let dpath = self.verbatim_rel(&drel);
        let result = MoveResult {
            src: self.display(&srel),
            dst: self.display(&drel),
        };
        let _spin =
            pin_dir(&self.verbatim_rel(&sparent)).map_err(|e| map_io(&e, src, Ctx::Existing))?;
        let _dpin = if same_parent {
            None
        } else {
            Some(
                pin_dir(&self.verbatim_rel(&dparent))
                    .map_err(|e| map_io(&e, dst, Ctx::Existing))?,
            )
        };
        if let Some((dfile, dmeta)) = &dexisting {
            let same =
                sys::identity(&sfile).ok().map(|x| x.0) == sys::identity(dfile).ok().map(|x| x.0);
            if same && same_parent && eq_ci(last(&srel), last(&drel)) {
                // 11.1 step 5: two spellings of one entry.
                if last(&srel) != last(&drel) {
                    // Through a temporary name: a direct case-only rename is a no-op on
                    // some filesystems (and under Wine).
                    drop(sfile);
                    drop(dexisting);
                    let tmp = self
                        .verbatim_rel(&sparent)
                        .join(format!(".~agpt-{}.tmp", random_hex()));
                    sys::move_file(&spath, &tmp, false)
                        .map_err(|e| map_io(&e, src, Ctx::Existing))?;
                    if let Err(e) = sys::move_file(&tmp, &dpath, false) {
                        let _ = sys::move_file(&tmp, &spath, false);
                        return Err(map_io(&e, src, Ctx::Existing));
                    }
                }
                return Ok(result);
            }
            if !opts.overwrite {
                return Err(JailError::Exists {
                    path: dst.to_owned(),
                });
            }
            if smeta.is_dir() && !is_link(&smeta) && is_below(&drel, &srel) {
                return Err(JailError::internal(
                    "cannot move a directory into itself",
                    dst,
                ));
            }
            let dmeta = dmeta.clone();
            let dmeta = &dmeta;
            drop(sfile);
            drop(dexisting);
            // A single replacing rename where Windows can do it (file over file, anything
            // over a file link), else set-aside (11.2).
            let dlink = is_link(dmeta);
            let simple = !(smeta.is_dir()
                || (dmeta.is_dir() && !dlink)
                || (dlink && dmeta.file_type().is_symlink_dir()));
            if simple && sys::move_file(&spath, &dpath, true).is_ok() {
                return Ok(result);
            }
            let aside = self
                .verbatim_rel(&dparent)
                .join(format!(".~agpt-{}.old", random_hex()));
            sys::move_file(&dpath, &aside, false).map_err(|e| map_io(&e, dst, Ctx::Other))?;
            if let Err(e) = sys::move_file(&spath, &dpath, false) {
                let _ = sys::move_file(&aside, &dpath, false);
                return Err(map_io(&e, src, Ctx::Existing));
            }
            let ameta =
                std::fs::symlink_metadata(&aside).map_err(|e| map_io(&e, dst, Ctx::Other))?;
            remove_entry(&aside, &ameta, true, dst)?;
            return Ok(result);
        }
        if smeta.is_dir() && !is_link(&smeta) && is_below(&drel, &srel) {
            return Err(JailError::internal(
                "cannot move a directory into itself",
                dst,
            ));
        }
        drop(sfile);
        sys::move_file(&spath, &dpath, false).map_err(|e| {
            if is_exists(&e) {
                JailError::Exists {
                    path: dst.to_owned(),
                }
            } else if is_missing(&e) {
                JailError::not_found(src)
            } else {
                map_io(&e, src, Ctx::Other)
            }
        })?;
        Ok(result)
    }
}

/// `a` lies strictly below `b` (names compared case-insensitively).
fn is_below(a: &[String], b: &[String]) -> bool {
    a.len() > b.len() && b.iter().zip(a).all(|(x, y)| eq_ci(x, y))
}

/// `yyyymmddThhmmssZ` (UTC) without a calendar crate: days-to-civil (H. Hinnant).
fn jiff_free_stamp() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}
