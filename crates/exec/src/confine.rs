//! Linux confinement of one command: built in the daemon, applied in the child.
//!
//! [`Confinement::prepare`] turns a [`SandboxPolicy`] into kernel objects while errors can
//! still be reported: the private temporary directory, a Landlock ruleset (an open
//! descriptor holding every rule of [`crate::sandbox::fs_rules`]), the seccomp program and
//! the user-namespace maps. `install` adds a `pre_exec` hook that only *applies* them,
//! after the session / parent-death / `fchdir` setup of `supervise.rs`:
//!
//! 1. network `deny` with namespaces: `unshare(CLONE_NEWUSER | CLONE_NEWNET)`, write
//!    `setgroups`, `uid_map`, `gid_map` (the same uid and gid inside), bring `lo` up, set
//!    the parent-death signal again;
//! 2. `PR_SET_NO_NEW_PRIVS`;
//! 3. `landlock_restrict_self` on the prepared ruleset;
//! 4. the seccomp filter (last: it refuses `socket(2)` calls that step 1 needs).
//!
//! Every step is a raw system call on data prepared in the parent: no allocation, no lock.
//! Any failure returns the errno to `std`, whose child `_exit`s: the command never runs
//! unconfined (STYLE.md item 21).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::OnceLock;

use landlock::ABI;
use landlock::Access;
use landlock::AccessFs;
use landlock::AccessNet;
use landlock::BitFlags;
use landlock::PathBeneath;
use landlock::PathFd;
use landlock::Ruleset;
use landlock::RulesetAttr;
use landlock::RulesetCreatedAttr;
use landlock::Scope;

use crate::sandbox::FsAccess;
use crate::sandbox::NetMechanism;
use crate::sandbox::NetworkMode;
use crate::sandbox::SandboxMode;
use crate::sandbox::SandboxPolicy;

/// The oldest Landlock ABI the file-system sandbox accepts: 3 (Linux 6.2), the first that
/// controls `truncate(2)`. Older kernels would let a command empty any file it can open.
pub const MIN_LANDLOCK_ABI: i32 = 3;

/// The newest Landlock ABI whose rights this build asks for (best effort below it).
const BEST_ABI: ABI = ABI::V9;

/// What this kernel offers, probed once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version, 0 when Landlock is missing or disabled.
    pub landlock_abi: i32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether this user can create a user and network namespace.
    pub user_namespaces: bool,
}

impl Support {
    /// Whether `shell_sandbox` other than `off` can be enforced.
    pub fn file_system(&self) -> bool {
        self.landlock_abi >= MIN_LANDLOCK_ABI
    }

    /// How `shell_network = "deny"` would be enforced, or `None` if it cannot be.
    pub fn network(&self) -> Option<NetMechanism> {
        if !self.seccomp {
            None
        } else if self.user_namespaces {
            Some(NetMechanism::Namespace)
        } else {
            Some(NetMechanism::Seccomp)
        }
    }
}

/// Probes the kernel (cached): Landlock's ABI, seccomp, and whether a child can enter a
/// new user and network namespace (a real attempt in a throw-away child).
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| Support {
        landlock_abi: landlock_abi(),
        seccomp: seccomp_available(),
        user_namespaces: probe_user_namespaces(),
    })
}

fn landlock_abi() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
    // returns the ABI version (or -1); no memory is passed.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer; it fails with EINVAL without seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

fn probe_user_namespaces() -> bool {
    use std::os::unix::process::CommandExt;
    let maps = match NsMaps::current() {
        Ok(m) => Arc::new(m),
        Err(_) => return false,
    };
    // The program is never executed: the child enters the namespaces in the hook and
    // exits 0 there, or returns the error (std makes `spawn` fail with it).
    let mut cmd = std::process::Command::new("shim-exec-userns-probe");
    cmd.env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let m = maps.clone();
    // SAFETY: the hook runs in the forked child and only makes async-signal-safe system
    // calls on data prepared before the fork (see `enter_namespaces`).
    unsafe {
        cmd.pre_exec(move || {
            enter_namespaces(&m)?;
            libc::_exit(0)
        });
    }
    match cmd.spawn() {
        Ok(mut child) => child.wait().is_ok_and(|s| s.success()),
        Err(_) => false,
    }
}

/// Why a command's confinement could not be prepared (the command is refused).
#[derive(Debug, thiserror::Error)]
#[error("cannot confine the command: {0}")]
pub struct SandboxError(pub String);

fn err(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError(format!("{what}: {e}"))
}

/// The contents of `/proc/self/{uid,gid}_map` for "the same id inside".
#[derive(Debug)]
struct NsMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl NsMaps {
    fn current() -> io::Result<NsMaps> {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(NsMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }
}

/// Everything one command's confinement needs, prepared in the parent.
#[derive(Debug)]
pub struct Confinement {
    mode: SandboxMode,
    network: NetworkMode,
    tmpdir: Option<tempfile::TempDir>,
    ruleset: Option<Arc<OwnedFd>>,
    seccomp: Option<&'static [libc::sock_filter]>,
    namespaces: Option<&'static SharedNs>,
}

/// The user and network namespace every `deny` command joins: made once per daemon (a new
/// network namespace costs milliseconds to create and tear down; joining one costs
/// microseconds). The open namespace descriptors keep it alive; no process stays in it.
/// Commands running at the same time share its loopback interface.
#[derive(Debug)]
struct SharedNs {
    user: OwnedFd,
    net: OwnedFd,
}

fn shared_ns() -> Result<&'static SharedNs, SandboxError> {
    static NS: OnceLock<Result<SharedNs, String>> = OnceLock::new();
    match NS.get_or_init(|| make_shared_ns().map_err(|e| e.to_string())) {
        Ok(ns) => Ok(ns),
        Err(e) => Err(SandboxError(format!("network namespace: {e}"))),
    }
}

/// A throw-away child enters new namespaces, says so through a pipe and waits; the daemon
/// opens `/proc/PID/ns/{user,net}` and lets it exit.
fn make_shared_ns() -> io::Result<SharedNs> {
    use std::io::Read as _;
    use std::os::unix::process::CommandExt;
    let maps = NsMaps::current()?;
    let (mut ready_r, ready_w) = std::io::pipe()?;
    let (hold_r, hold_w) = std::io::pipe()?;
    let (ready_fd, hold_fd, hold_w_fd) =
        (ready_w.as_raw_fd(), hold_r.as_raw_fd(), hold_w.as_raw_fd());
    let mut cmd = std::process::Command::new("shim-exec-netns-holder");
    cmd.env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the hook runs in the forked child, never returns to Rust code that owns the
    // descriptors it closes, and only makes async-signal-safe system calls on data
    // prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            libc::close(hold_w_fd);
            enter_namespaces(&maps)?;
            if libc::dup2(hold_fd, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::write(ready_fd, b"x".as_ptr().cast(), 1);
            // Every other descriptor, std's exec-error pipe included (so that `spawn`
            // returns although this child never execs).
            libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32);
            let mut b = 0u8;
            // Blocks until the daemon closes its end.
            libc::read(0, (&raw mut b).cast(), 1);
            libc::_exit(0)
        });
    }
    let child = cmd.spawn();
    drop(ready_w);
    drop(hold_r);
    let mut child = child?;
    let mut b = [0u8; 1];
    let got = ready_r.read(&mut b);
    let pid = child.id();
    let opened = match got {
        Ok(1) => {
            let open = |what: &str| -> io::Result<OwnedFd> {
                Ok(std::fs::File::open(format!("/proc/{pid}/ns/{what}"))?.into())
            };
            open("user").and_then(|user| {
                Ok(SharedNs {
                    user,
                    net: open("net")?,
                })
            })
        }
        _ => Err(io::Error::other("the namespace holder failed")),
    };
    drop(hold_w);
    let _ = child.wait();
    opened
}

impl Confinement {
    /// Builds the confinement of `policy` for one command: creates the private temporary
    /// directory (removed when this value is dropped) and every kernel object. Fails if a
    /// requested mechanism is missing; never degrades silently.
    pub fn prepare(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
        let sup = support();
        let mut c = Confinement {
            mode: policy.mode,
            network: policy.network,
            tmpdir: None,
            ruleset: None,
            seccomp: None,
            namespaces: None,
        };
        let deny = policy.network == NetworkMode::Deny;
        let mechanism = if deny {
            let m = sup
                .network()
                .ok_or_else(|| SandboxError("seccomp is not available".into()))?;
            // A policy may ask for the fallback explicitly (tests); the namespace needs
            // kernel support.
            Some(match (policy.net_mechanism, m) {
                (NetMechanism::Namespace, NetMechanism::Namespace) => NetMechanism::Namespace,
                _ => NetMechanism::Seccomp,
            })
        } else {
            None
        };
        if policy.mode.confines() {
            if !sup.file_system() {
                return Err(SandboxError(format!(
                    "Landlock ABI {} is below the minimum {MIN_LANDLOCK_ABI}",
                    sup.landlock_abi
                )));
            }
            let mut built = folder_ruleset(policy, mechanism, None)?;
            let tmp = match crate::private_tmp::create_in(&built.tmp_root) {
                Ok(t) => t,
                // The folder's directory went (a /tmp cleaner, a clean stop): a new one, and
                // a ruleset that grants it.
                Err(_) => {
                    built = folder_ruleset(policy, mechanism, Some(&built.tmp_root))?;
                    crate::private_tmp::create_in(&built.tmp_root)
                        .map_err(|e| err("private temporary directory", e))?
                }
            };
            c.ruleset = Some(built.ruleset);
            c.tmpdir = Some(tmp);
        } else if mechanism == Some(NetMechanism::Seccomp) && sup.landlock_abi >= 4 {
            c.ruleset = Some(Arc::new(build_ruleset(
                std::iter::empty(),
                mechanism,
                false,
            )?));
        }
        match mechanism {
            Some(NetMechanism::Namespace) => {
                c.namespaces = Some(shared_ns()?);
                c.seccomp = Some(seccomp_program(false)?);
            }
            // (`mechanism` above is never Seatbelt, the macOS mechanism.)
            Some(NetMechanism::Seccomp | NetMechanism::Seatbelt) => {
                c.seccomp = Some(seccomp_program(true)?)
            }
            None => {}
        }
        Ok(c)
    }

    /// The private temporary directory (given to the command as `TMPDIR`), if any.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.tmpdir.as_ref().map(tempfile::TempDir::path)
    }

    /// The program and argument vector to execute for `program` / `argv`: unchanged on
    /// Linux, where the confinement is applied in the child before `execve`.
    pub fn command(
        &self,
        program: std::ffi::OsString,
        argv: Vec<std::ffi::OsString>,
    ) -> (std::ffi::OsString, Vec<std::ffi::OsString>) {
        (program, argv)
    }

    /// The file-system mode applied.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The network mode applied.
    pub fn network(&self) -> NetworkMode {
        self.network
    }
}

/// The policy with canonical paths (rules compare paths; symlinked homes, `/tmp` ...).
/// Listed paths that do not exist are dropped.
fn canonical_policy(p: &SandboxPolicy) -> SandboxPolicy {
    let canon = |x: &PathBuf| std::fs::canonicalize(x).ok();
    SandboxPolicy {
        folder: canon(&p.folder).unwrap_or_else(|| p.folder.clone()),
        home: p.home.as_ref().and_then(canon),
        writable: p.writable.iter().filter_map(canon).collect(),
        readable: p.readable.iter().filter_map(canon).collect(),
        ..p.clone()
    }
}

/// The canonical paths of the entries of `dir`, itself canonical: only symlinks need
/// resolving (a crowded `/tmp` has thousands of entries, and this runs whenever it changes).
fn list_canonical(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| match e.file_type() {
            Ok(t) if !t.is_symlink() => Some(e.path()),
            _ => std::fs::canonicalize(e.path()).ok(),
        })
        .collect()
}

fn access_of(a: FsAccess, is_dir: bool) -> BitFlags<AccessFs> {
    let all = AccessFs::from_all(BEST_ABI);
    let set = match a {
        FsAccess::Read => AccessFs::from_read(BEST_ABI),
        FsAccess::Write => all,
        FsAccess::Device => {
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev
        }
    };
    if is_dir {
        set
    } else {
        set & AccessFs::from_file(BEST_ABI)
    }
}

/// One opened rule: an `O_PATH` descriptor and the rights beneath it.
type OpenedRule = (PathFd, BitFlags<AccessFs>);

/// What a cached ruleset was built from: the canonical policy and the modification times
/// of the directories listed to hide the home (a new entry in `/tmp` changes it).
type CacheKey = (SandboxPolicy, Vec<(PathBuf, i64, i64)>);

/// A ruleset built for one policy: every rule of [`crate::sandbox::fs_rules`], with write
/// access to the policy's own directory of command temporary directories
/// (`private_tmp.rs`) in place of one command's.
#[derive(Clone)]
struct Built {
    ruleset: Arc<OwnedFd>,
    tmp_root: PathBuf,
}

/// How many policies (chat folders, network modes) keep a built ruleset.
const CACHED_POLICIES: usize = 8;

/// The ruleset of `policy`. Listing `/` (and `/tmp` when the home is below it), opening
/// every entry and adding it as a rule costs about 0.3 ms even for a small `/` (and
/// milliseconds for a crowded one), so it is built once and kept until the policy or one
/// of the listed directories changes; a command then only makes its directory in
/// `tmp_root`. `stale` is a `tmp_root` that can no longer be used: a new one is made and
/// the ruleset built again.
fn folder_ruleset(
    policy: &SandboxPolicy,
    mechanism: Option<NetMechanism>,
    stale: Option<&Path>,
) -> Result<Built, SandboxError> {
    static CACHE: std::sync::Mutex<Vec<(CacheKey, Built)>> = std::sync::Mutex::new(Vec::new());
    let canonical = canonical_policy(policy);
    let mut listed: Vec<(PathBuf, i64, i64)> = Vec::new();
    let dev = PathBuf::from("/dev");
    for h in canonical.home.iter().chain(std::iter::once(&dev)) {
        for dir in h.ancestors().skip(1) {
            let (sec, nsec) = std::fs::metadata(dir).map_or((0, 0), |m| {
                use std::os::unix::fs::MetadataExt;
                (m.mtime(), m.mtime_nsec())
            });
            listed.push((dir.to_owned(), sec, nsec));
        }
    }
    let key = (canonical, listed);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let found = cache.iter().position(|(k, _)| k.0 == key.0);
    let mut reuse_root = None;
    if let Some(i) = found {
        let (k, b) = cache.remove(i);
        if stale != Some(b.tmp_root.as_path()) {
            if k == key {
                // Most recently used last.
                cache.push((k, b.clone()));
                return Ok(b);
            }
            // Only a listed directory changed: the rules are made again, in the same place.
            reuse_root = Some(b.tmp_root);
        }
    }
    let tmp_root = match reuse_root {
        Some(r) => r,
        None => crate::private_tmp::folder_root()
            .and_then(std::fs::canonicalize)
            .map_err(|e| err("private temporary directory", e))?,
    };
    let mut opened = Vec::new();
    for r in crate::sandbox::fs_rules(&key.0, &tmp_root, &list_canonical) {
        let Ok(fd) = PathFd::new(&r.path) else {
            // A device or listed path that does not exist here grants nothing.
            continue;
        };
        let is_dir = std::fs::metadata(&r.path).is_ok_and(|m| m.is_dir());
        opened.push((fd, access_of(r.access, is_dir)));
    }
    let ruleset = Arc::new(build_ruleset(opened.iter(), mechanism, true)?);
    if cache.len() >= CACHED_POLICIES {
        let (_, evicted) = cache.remove(0);
        // Removed only when empty: a command of that policy may still be running in it.
        let _ = std::fs::remove_dir(&evicted.tmp_root);
    }
    let built = Built { ruleset, tmp_root };
    cache.push((key, built.clone()));
    Ok(built)
}

fn build_ruleset<'a>(
    rules: impl Iterator<Item = &'a OpenedRule>,
    mechanism: Option<NetMechanism>,
    file_system: bool,
) -> Result<OwnedFd, SandboxError> {
    let e = |x: landlock::RulesetError| err("Landlock ruleset", x);
    let mut rs = Ruleset::default();
    if file_system {
        rs = rs.handle_access(AccessFs::from_all(BEST_ABI)).map_err(e)?;
        // Signals to processes outside the sandbox (the daemon, the user's programs).
        rs = rs.scope(Scope::Signal).map_err(e)?;
    }
    if mechanism.is_some() {
        rs = rs.scope(Scope::AbstractUnixSocket).map_err(e)?;
    }
    if mechanism == Some(NetMechanism::Seccomp) {
        rs = rs
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(e)?;
    }
    let mut created = rs.create().map_err(e)?;
    for (fd, access) in rules {
        use std::os::fd::AsFd;
        created = created
            .add_rule(PathBeneath::new(fd.as_fd(), *access))
            .map_err(e)?;
    }
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| SandboxError("Landlock is not enabled in this kernel".into()))
}

fn target_arch() -> Result<seccompiler::TargetArch, SandboxError> {
    if cfg!(target_arch = "x86_64") {
        Ok(seccompiler::TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(seccompiler::TargetArch::aarch64)
    } else if cfg!(target_arch = "riscv64") {
        Ok(seccompiler::TargetArch::riscv64)
    } else {
        Err(SandboxError(
            "no seccomp filter for this architecture".into(),
        ))
    }
}

/// The seccomp program of `shell_network = "deny"` (built once per variant):
/// `socket(AF_UNIX, ...)` (paths are not namespaced) and `io_uring_setup` (it can create
/// sockets past the filter) fail with `EPERM`; with `all_sockets` (no namespace), every
/// `socket(2)` does. `socketpair(2)` stays allowed: it reaches nothing outside.
fn seccomp_program(all_sockets: bool) -> Result<&'static [libc::sock_filter], SandboxError> {
    static UNIX_ONLY: OnceLock<Result<Vec<libc::sock_filter>, String>> = OnceLock::new();
    static ALL: OnceLock<Result<Vec<libc::sock_filter>, String>> = OnceLock::new();
    let cell = if all_sockets { &ALL } else { &UNIX_ONLY };
    let prog = cell.get_or_init(|| compile_seccomp(all_sockets).map_err(|e| e.0));
    match prog {
        Ok(p) => Ok(p.as_slice()),
        Err(e) => Err(SandboxError(e.clone())),
    }
}

fn compile_seccomp(all_sockets: bool) -> Result<Vec<libc::sock_filter>, SandboxError> {
    use seccompiler::SeccompAction;
    use seccompiler::SeccompCmpArgLen;
    use seccompiler::SeccompCmpOp;
    use seccompiler::SeccompCondition;
    use seccompiler::SeccompRule;
    let e = |x: seccompiler::BackendError| err("seccomp filter", x);
    let socket_rules = if all_sockets {
        Vec::new()
    } else {
        vec![
            SeccompRule::new(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    libc::AF_UNIX as u64,
                )
                .map_err(e)?,
            ])
            .map_err(e)?,
        ]
    };
    let mut rules = std::collections::BTreeMap::new();
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        // The x32 ABI shares the audit architecture; refuse its socket calls outright.
        const X32: i64 = 0x4000_0000;
        rules.insert(X32 | libc::SYS_socket, Vec::new());
        rules.insert(X32 | libc::SYS_io_uring_setup, Vec::new());
    }
    let filter = seccompiler::SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target_arch()?,
    )
    .map_err(e)?;
    let prog: seccompiler::BpfProgram = filter.try_into().map_err(e)?;
    Ok(prog
        .into_iter()
        .map(|f| libc::sock_filter {
            code: f.code,
            jt: f.jt,
            jf: f.jf,
            k: f.k,
        })
        .collect())
}

/// Adds the `pre_exec` hook that applies `c` in the child (after the hooks already
/// installed). `c` stays alive inside the command builder until the spawn returns.
pub(crate) fn install(cmd: &mut std::process::Command, c: Arc<Confinement>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and only makes async-signal-safe system
    // calls (unshare, open, write, close, socket, ioctl, prctl, syscall) on data prepared
    // before the fork and borrowed from `c`; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || apply(&c));
    }
}

/// In the child: applies every prepared part (see the module documentation). Also called
/// by the vfork path (`vfork.rs`) for confinements that do not join namespaces.
pub(crate) fn apply(c: &Confinement) -> io::Result<()> {
    if let Some(ns) = c.namespaces {
        // SAFETY: setns on descriptors owned by a static; the caller is a forked child, or a
        // vfork child (vfork.rs) with its own thread group and file-system information.
        unsafe {
            if libc::setns(ns.user.as_raw_fd(), libc::CLONE_NEWUSER) != 0
                || libc::setns(ns.net.as_raw_fd(), libc::CLONE_NEWNET) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    }
    if c.ruleset.is_none() && c.seccomp.is_none() {
        return Ok(());
    }
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some(fd) = &c.ruleset {
        // SAFETY: landlock_restrict_self(ruleset_fd, flags = 0) with a valid descriptor.
        let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    if let Some(prog) = c.seccomp {
        let len =
            u16::try_from(prog.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
        let fprog = libc::sock_fprog {
            len,
            filter: prog.as_ptr().cast_mut(),
        };
        // SAFETY: seccomp(SECCOMP_SET_MODE_FILTER, 0, &fprog): the kernel copies the
        // program, which lives in a static for the life of the process.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &fprog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Writes `data` to the file `path` (a procfs control file), async-signal-safe.
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated static path and a borrowed buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = if usize::try_from(n).ok() == Some(data.len()) {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
        libc::close(fd);
        result
    }
}

/// A new user and network namespace with the same uid and gid inside, and `lo` up.
fn enter_namespaces(ns: &NsMaps) -> io::Result<()> {
    // SAFETY: unshare with flag arguments; the caller is a single-threaded forked child.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    write_proc(c"/proc/self/setgroups", b"deny")?;
    write_proc(c"/proc/self/uid_map", &ns.uid_map)?;
    write_proc(c"/proc/self/gid_map", &ns.gid_map)?;
    loopback_up()
}

fn loopback_up() -> io::Result<()> {
    // SAFETY: socket/ioctl/close on a stack-owned, zero-initialised `ifreq`.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, b) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *b as libc::c_char;
        }
        let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr);
        if r == 0 {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr);
        }
        let result = if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
        libc::close(s);
        result
    }
}
