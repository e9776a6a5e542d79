//! Classifying a finished attempt: success, failure, timeout, signal, likely sandbox denial, or
//! a sandbox that could not be set up. Pure: the retry decision matches on
//! the [`Verdict`] value, never on output text downstream of this function.
//!
//! Output is the command's own and can say anything, so a "likely sandbox denial" — the only
//! verdict that can lead to an unsandboxed retry — needs evidence that fits the policy: a
//! denial message naming a path the sandbox does not let the command write, or a network
//! failure while the network is off. "Operation not permitted" alone, or an exit status of
//! 128+SIGSYS (cordon's filter answers with errors, it never kills), is just a failure.
//! A sandbox that could not be set up (the helper's exit 125 and its one line) is an error of
//! its own, never a reason to run without the sandbox.

use std::path::{Path, PathBuf};

use cordon_sandbox_linux::CORDON_MESSAGE_PREFIX;
use serde::Serialize;

use crate::launch::SandboxKind;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
    TimedOut,
    /// The kernel stopped the command at this resource limit (the cgroup's OOM kill or
    /// refused forks, the tree's CPU time, SIGXCPU, SIGXFSZ).
    LimitExceeded(cordon_policies::LimitKey),
}

/// The limit the kernel says stopped a command that did not succeed: the cgroup's evidence
/// (an OOM kill, a refused fork, the CPU watch), else the signal of a per-process limit
/// (SIGXCPU, SIGXFSZ), also as 128 + N, the status a shell or the helper reports for a child
/// that such a signal ended. `limits` are those the command was given.
pub(crate) fn limit_reached(
    limits: &cordon_policies::Limits,
    exit: ExitKind,
    cgroup: Option<&crate::limits::Held>,
) -> Option<cordon_policies::LimitKey> {
    let signal = match exit {
        ExitKind::Code(0) | ExitKind::TimedOut | ExitKind::LimitExceeded(_) => return None,
        ExitKind::Signal(signal) => Some(signal),
        // A shell, and the helper, report a child's signal so.
        ExitKind::Code(code) => code.checked_sub(128),
    };
    #[cfg(target_os = "linux")]
    if let Some(key) = cgroup.and_then(crate::limits::CommandCgroup::exceeded) {
        return Some(key);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cgroup;
    match signal {
        Some(libc::SIGXCPU) if limits.cpu.is_some() => Some(cordon_policies::LimitKey::Cpu),
        Some(libc::SIGXFSZ) if limits.file_size.is_some() => {
            Some(cordon_policies::LimitKey::FileSize)
        }
        Some(_) | None => None,
    }
}

/// The status `cordon exec` exits with when the command exceeded a resource limit.
pub const EXIT_LIMIT_EXCEEDED: i32 = 122;

impl ExitKind {
    /// What a raw wait status (as `waitpid` gives it) says: the exit code, or the signal.
    pub fn from_wait_status(raw: i32) -> ExitKind {
        if libc::WIFSIGNALED(raw) {
            ExitKind::Signal(libc::WTERMSIG(raw))
        } else {
            ExitKind::Code(libc::WEXITSTATUS(raw))
        }
    }

    /// How a process on the other end of a remote link ended, as this side classifies it.
    pub fn from_remote(exit: crate::resolved::ProcessExit) -> ExitKind {
        match exit {
            crate::resolved::ProcessExit::Code { code } => ExitKind::Code(code),
            crate::resolved::ProcessExit::Signal { signal } => ExitKind::Signal(signal),
        }
    }

    /// The shell convention: the code, 128+N for signal N, 124 for a timeout.
    pub fn shell_status(self) -> i32 {
        match self {
            ExitKind::Code(code) => code,
            ExitKind::Signal(signal) => 128 + signal,
            ExitKind::TimedOut => 124,
            ExitKind::LimitExceeded(_) => EXIT_LIMIT_EXCEEDED,
        }
    }
}

/// What an attempt's result means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Success,
    Failure,
    /// The sandbox probably stopped the command (see [`classify`]).
    LikelySandboxDenied,
    /// The sandbox could not be set up, so the command never ran.
    SandboxSetupFailed,
    Timeout,
    Signal,
    /// A resource limit stopped the command: never a denial, never retried.
    LimitExceeded,
    /// A transactional run failed renaming a directory that existed before it, which a write
    /// layer cannot do (`EXDEV`): neither a denial nor the command's fault. A re-run with
    /// direct writes, still sandboxed, may be offered.
    RenamedExistingDirectory,
}

/// What the sandbox allowed, to judge whether a denial message fits it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DenialContext {
    /// Where the command ran (relative paths in messages are taken from here).
    pub cwd: PathBuf,
    /// Canonical writable roots.
    pub writable_roots: Vec<PathBuf>,
    /// Paths kept read-only although they may lie inside a root.
    pub protected: Vec<PathBuf>,
    /// Paths replaced by empty stand-ins.
    pub hidden: Vec<PathBuf>,
    /// Entries of the home directories that are not on the allow-list of what sandboxed
    /// commands may read there.
    pub home_hidden: Vec<PathBuf>,
    pub network: bool,
    /// The user's home directory (canonical), which advice never suggests making writable.
    pub home: Option<PathBuf>,
    /// The directories cordon's own executables lie in, likewise.
    pub own_dirs: Vec<PathBuf>,
    /// How a write the sandbox refuses outside the roots fails.
    pub write_refusal: WriteRefusal,
    /// The read-only policy: nothing is writable, and `--add-dir` does not apply.
    pub read_only: bool,
    /// The TCP ports the host listens on at loopback (read when the network is off): a
    /// connection the command could not make to one of them is the sandbox's doing.
    pub host_loopback_ports: Vec<u16>,
}

/// How the sandbox refuses a write outside the writable roots, so that a failed *read* (a
/// file the user may not read, a process the sandbox's own `/proc` keeps apart) is not taken
/// for one — an unsandboxed retry of a read would show what the sandbox kept back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteRefusal {
    /// The mount view makes everything outside the roots a read-only mount: `EROFS` ("Read-only
    /// file system"), or `EPERM` for attribute changes. `EACCES` alone is a read failure.
    ReadOnlyMounts,
    /// Landlock alone (no mount view) or Seatbelt: `EACCES` or `EPERM` too.
    #[default]
    AnyDenial,
}

/// One finished attempt.
#[derive(Debug, Clone, Copy)]
pub struct Finished<'a> {
    pub sandbox: SandboxKind,
    pub exit: ExitKind,
    pub stdout: &'a str,
    pub stderr: &'a str,
}

/// Messages that a blocked write or syscall produces.
const DENIAL_MARKERS: &[&str] =
    &["operation not permitted", "permission denied", "read-only file system"];

/// What replacing or renaming a mount point gives: a protected or hidden path is one inside
/// the sandbox (`git config` renaming over `.git/config`).
const BUSY_MARKER: &str = "device or resource busy";

/// Messages that a blocked network produces (with the network off, sockets fail with EPERM and
/// name resolution cannot reach a server).
const NETWORK_MARKERS: &[&str] = &[
    "operation not permitted",
    "network is unreachable",
    "could not resolve",
    "temporary failure in name resolution",
    "name or service not known",
    // macOS: getaddrinfo's EAI_NONAME under a Seatbelt profile without network.
    "nodename nor servname provided",
    "failed to connect",
    "connection refused",
    "econnrefused",
    "couldn't connect",
    // Node (npm, npx, yarn) and Go: getaddrinfo's EAI_AGAIN and ENOTFOUND, Go's resolver.
    "eai_again",
    "enotfound",
    "no such host",
];
const NETWORK_WORDS: &[&str] = &[
    "socket",
    "connect",
    "network",
    "resolve",
    "host",
    "http",
    "dns",
    "tcp",
    "udp",
    "fetch",
    "servname",
    "getaddrinfo",
    "lookup",
    "registry",
];

/// The tool a network failure comes from, when its output or the host it names says so: the
/// preset that gives that tool its registry, the narrowest way to let it through.
const PRESET_HINTS: &[(&str, &[&str])] = &[
    ("npm", &["npm", "npx", "yarn", "registry.npmjs.org", "registry.yarnpkg.com"]),
    ("pip", &["pip", "pip3", "pypi.org", "files.pythonhosted.org"]),
    ("cargo", &["cargo", "crates.io", "static.crates.io", "index.crates.io"]),
];

/// Classifies an attempt. A likely denial needs a sandbox, a failing status other than
/// 126/127 (not executable, not found), and at least one [`is_denial_evidence`] line.
///
/// Unlike Codex, exit status 2 is not ruled out: POSIX shells (dash, Debian's `sh`) exit 2 when
/// a redirection fails, so `sh -c 'echo x > /etc/f'` under a read-only sandbox ends with 2 and
/// "Read-only file system" — the most common denial of all.
pub fn classify(finished: Finished<'_>, context: &DenialContext) -> Verdict {
    let Finished { sandbox, exit, stdout, stderr } = finished;
    let sandboxed = sandbox != SandboxKind::None;
    match exit {
        ExitKind::TimedOut => Verdict::Timeout,
        ExitKind::LimitExceeded(_) => Verdict::LimitExceeded,
        ExitKind::Code(0) => Verdict::Success,
        ExitKind::Signal(_) => Verdict::Signal,
        ExitKind::Code(code)
            if sandboxed && is_setup_status(sandbox, code) && is_setup_failure(sandbox, stderr) =>
        {
            Verdict::SandboxSetupFailed
        }
        ExitKind::Code(126 | 127) => Verdict::Failure,
        ExitKind::Code(_) if sandboxed && !explain_output(stdout, stderr, context).is_empty() => {
            Verdict::LikelySandboxDenied
        }
        ExitKind::Code(_) => Verdict::Failure,
    }
}

/// Whether a failed transactional attempt's output says a rename crossed devices: through a
/// write layer, that is a directory that existed before the run being renamed (`git mv dir
/// new`; `mv` copies instead).
pub fn renamed_existing_directory(stdout: &str, stderr: &str) -> bool {
    [stdout, stderr].iter().any(|text| text.contains("Invalid cross-device link"))
}

/// How an attempt ended in the shell's terms. `sandbox-exec` reports a command it could not
/// start as exit 71 with `sandbox-exec: execvp() of 'CMD' failed: REASON`, where the Linux
/// helper (and every shell) exits 127 for a command that is not there and 126 for one that
/// cannot be run; read as it is, a typo on macOS would be "a sandbox that could not be set up".
pub fn command_exit(sandbox: SandboxKind, exit: ExitKind, stderr: &str) -> ExitKind {
    if sandbox != SandboxKind::Seatbelt || exit != ExitKind::Code(71) {
        return exit;
    }
    let reason = stderr.lines().find_map(|line| {
        let rest = line.strip_prefix(SEATBELT_PREFIX)?.strip_prefix("execvp() of ")?;
        rest.rsplit_once(" failed: ").map(|(_, reason)| reason)
    });
    match reason {
        None => exit,
        Some("No such file or directory") => ExitKind::Code(127),
        Some(_) => ExitKind::Code(126),
    }
}

/// The helper's refusal is one line `cordon: sandbox: <what>: <why>` (cordon passes
/// `--caller cordon`; `codex-linux-sandbox: …` when called directly) and exit 125;
/// `sandbox-exec` names itself the same way. (A command that imitates it only loses the
/// offer of an unsandboxed retry.)
fn is_setup_failure(sandbox: SandboxKind, stderr: &str) -> bool {
    let prefixes: &[&str] = match sandbox {
        SandboxKind::Linux => &[CORDON_MESSAGE_PREFIX, HELPER_PREFIX],
        SandboxKind::Seatbelt => &[SEATBELT_PREFIX],
        SandboxKind::None => return false,
    };
    stderr.lines().any(|line| prefixes.iter().any(|p| line.starts_with(p)))
}

/// The statuses a sandbox that could not be set up exits with: the helper's 125; for
/// `sandbox-exec` also 65 (`EX_DATAERR`: the profile did not compile) and 71 (`EX_OSERR`:
/// `sandbox_apply` refused, e.g. when already inside a sandbox).
fn is_setup_status(sandbox: SandboxKind, code: i32) -> bool {
    match sandbox {
        SandboxKind::Linux => code == 125,
        SandboxKind::Seatbelt => matches!(code, 65 | 71 | 125),
        SandboxKind::None => false,
    }
}

const HELPER_PREFIX: &str = "codex-linux-sandbox: ";
const SEATBELT_PREFIX: &str = "sandbox-exec: ";

/// The first line that shows the helper could not set the sandbox up, for messages.
pub fn setup_failure_line(stderr: &str) -> Option<&str> {
    stderr.lines().find(|line| {
        [CORDON_MESSAGE_PREFIX, HELPER_PREFIX, SEATBELT_PREFIX].iter().any(|p| line.starts_with(p))
    })
}

/// Whether one output line is evidence of a sandbox denial under `context`: a denial message
/// that names a path the sandbox does not let the command write, or a network failure with the
/// network off.
pub fn is_denial_evidence(line: &str, context: &DenialContext) -> bool {
    explain(line, context).is_some()
}

/// What would let a write outside the writable roots through, as advice may name it: never a
/// root that would hand a sandboxed command code that runs later (a home directory or one above
/// it, a git dir, a system directory, cordon's own install directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Allow {
    /// `--add-dir DIR`.
    AddDir { dir: PathBuf },
    /// The policy is read-only: `-s workspace-write` (with `--add-dir DIR` when `dir` is not
    /// the workspace).
    WorkspaceWrite { dir: PathBuf },
    /// The path lies in the git dir of the repository at `root`: run from the repository root
    /// (`-C ROOT`), whose git files other than config and hooks are then writable.
    RepositoryRoot { root: PathBuf },
    /// Only outside the sandbox (`-a on-failure` and the retry question); `why` completes
    /// "it is".
    OutsideTheSandbox { why: String },
    /// The path is a package manager's own cache (`~/.npm`, `~/.cache/pip`,
    /// `~/.cargo/registry`): `--preset NAME` gives the client a cache of its own that only
    /// sandboxed runs write. The user's cache is never offered as a root: it is code that runs
    /// later outside the sandbox.
    Preset { preset: String },
}

/// What would allow a write to `path`, outside every root (see [`Allow`]).
fn allow_for(path: &Path, context: &DenialContext) -> Allow {
    if let Some(preset) =
        context.home.as_deref().and_then(|home| cordon_policies::preset_for_cache_path(path, home))
    {
        return Allow::Preset { preset: preset.name().to_owned() };
    }
    let components: Vec<_> = path.components().collect();
    let repository = components
        .iter()
        .position(|c| c.as_os_str() == ".git")
        .map(|at| -> PathBuf { components[..at].iter().collect() });
    // The directory that would become a root: the repository's for a git file.
    let dir = match &repository {
        Some(root) => root.clone(),
        None => path.parent().unwrap_or(path).to_path_buf(),
    };
    if let Some(why) = never_a_root(&dir, context) {
        return Allow::OutsideTheSandbox { why: why.to_owned() };
    }
    if context.read_only {
        // The workspace becomes writable with the mode; another directory needs naming too.
        let dir = if dir.starts_with(&context.cwd) { PathBuf::new() } else { dir };
        return Allow::WorkspaceWrite { dir };
    }
    match repository {
        Some(root) => Allow::RepositoryRoot { root },
        None => Allow::AddDir { dir },
    }
}

/// Why `dir` must never be offered as a writable root, if so: what lies there (or above it)
/// runs code later outside any sandbox.
fn never_a_root(dir: &Path, context: &DenialContext) -> Option<&'static str> {
    let home = context.home.as_deref();
    if home.is_some_and(|home| home.starts_with(dir)) {
        return Some(
            "your home directory, or above it (start-up files there run outside any sandbox \
             later)",
        );
    }
    if context.own_dirs.iter().any(|own| own.starts_with(dir) || dir.starts_with(own)) {
        return Some("where cordon itself is installed");
    }
    let start_up = home.is_some_and(|home| {
        cordon_policies::home_start_up_paths(home)
            .any(|path| path.starts_with(dir) || dir.starts_with(&path))
    });
    if start_up {
        return Some("a start-up directory of your home (code there runs later)");
    }
    // Inside the user's own home (and not a start-up directory, above): an ordinary place.
    if home.is_some_and(|home| dir.starts_with(home)) {
        return None;
    }
    const SYSTEM: [&str; 23] = [
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/etc",
        "/boot",
        "/proc",
        "/sys",
        "/dev",
        "/run",
        "/var/run",
        "/var/lib",
        "/var/cache",
        "/var/log",
        "/var/spool",
        "/var/mail",
        "/snap",
        "/opt",
        "/root",
        "/home",
    ];
    if dir == Path::new("/") || SYSTEM.iter().any(|system| dir.starts_with(system)) {
        return Some("a system directory, or another user's home");
    }
    None
}

/// What the sandbox blocked, as far as one output line and the policy tell (a heuristic: the
/// line is the command's own output), and the knob that would allow it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Blocked {
    /// A write outside every writable root, and what would allow it.
    OutsideRoots { path: PathBuf, allow: Allow },
    /// A write to a protected path inside a root (`.git/hooks`, `.cordon`, …).
    Protected { path: PathBuf },
    /// An access to a hidden path (`~/.ssh`, …).
    Hidden { path: PathBuf },
    /// A read in an entry of the home directory that is not on the allow-list.
    NotOnHomeList { path: PathBuf, entry: PathBuf },
    /// The network, which the policy turns off, with the narrowest way to let the command
    /// through: a preset for a package manager it recognises, else the host it names.
    Network { preset: Option<&'static str>, host: Option<String> },
    /// A write refused as "Read-only file system" to a relative path that, taken from where
    /// the command started, lies inside a writable root: the command had moved (a `cd` inside
    /// a script), so where it wrote cannot be told.
    Unlocated { path: PathBuf },
}

impl Blocked {
    /// One line: what was blocked and what would allow it.
    pub fn advice(&self) -> String {
        match self {
            Blocked::OutsideRoots { path, allow } => match allow {
                Allow::AddDir { dir } => format!(
                    "{} lies outside the writable roots: allow it with --add-dir {} (config \
                     sandbox_workspace_write.writable_roots), or run it outside the sandbox \
                     with -a on-failure and answer the retry question",
                    path.display(),
                    dir.display()
                ),
                Allow::RepositoryRoot { root } => format!(
                    "{} is git's own file of the repository at {}, outside the writable roots: \
                     run from the repository root (-C {}), which keeps its config and hooks \
                     read-only",
                    path.display(),
                    root.display(),
                    root.display()
                ),
                Allow::WorkspaceWrite { dir } => format!(
                    "{} lies outside what the sandbox lets the command write: the sandbox is \
                     read-only; -s workspace-write lets the command write its workspace{}",
                    path.display(),
                    if context_free_is_cwd(dir) {
                        String::new()
                    } else {
                        format!(" (and --add-dir {} for this directory)", dir.display())
                    }
                ),
                Allow::Preset { preset } => format!(
                    "{} is in {preset}'s own cache, outside the writable roots: run with \
                     --preset {preset} (in workspace-write), which gives {preset} a cache only \
                     sandboxed runs write and allows its registry (docs/presets.md)",
                    path.display()
                ),
                Allow::OutsideTheSandbox { why } => format!(
                    "{} lies outside the writable roots, in {why}: not a directory to open to \
                     sandboxed commands; run it outside the sandbox with -a on-failure and \
                     answer the retry question",
                    path.display()
                ),
            },
            Blocked::Protected { path } => format!(
                "{} is a protected path, read-only inside the sandbox by design (it could plant \
                 code that runs outside it); change it yourself, or narrow protected_paths in \
                 the config",
                path.display()
            ),
            Blocked::Hidden { path } => format!(
                "{} is hidden from sandboxed commands (a credential store); --unhide {} shows \
                 it",
                path.display(),
                path.display()
            ),
            Blocked::NotOnHomeList { path, entry } => format!(
                "{} lies in {}, which is not on the list of home entries sandboxed commands may \
                 read (docs/secrets.md); --unhide {} shows it (config home_readable), config \
                 home_allow_list = false turns the list off",
                path.display(),
                entry.display(),
                entry.display()
            ),
            Blocked::Network { preset, host } => {
                let mut ways = Vec::new();
                if let Some(preset) = preset {
                    ways.push(format!(
                        "--preset {preset} lets {preset} reach its registry (config presets = \
                         [\"{preset}\"] keeps it for every run)"
                    ));
                }
                if let Some(host) = host {
                    ways.push(format!("--allow-domain {host} lets it reach that host alone"));
                }
                ways.push(
                    "--network opens the whole network (config \
                     sandbox_workspace_write.network_access = true)"
                        .to_owned(),
                );
                format!("the network is off in the sandbox: {}", ways.join("; or "))
            }
            Blocked::Unlocated { path } => format!(
                "{} was refused as a read-only file system, but cordon cannot tell where it is \
                 (a relative path after the command changed directory): it lies outside the \
                 writable roots; name the directory with --add-dir DIR, or run it outside the \
                 sandbox with -a on-failure and answer the retry question",
                path.display()
            ),
        }
    }
}

/// When a line (lowercase) names a loopback address: the port it names, if any
/// (`127.0.0.1:5432`, `localhost:8080`, `[::1]:6379`, `port 5432`, `port=5432`).
fn loopback_port(lower: &str) -> Option<Option<u16>> {
    const PLACES: [&str; 4] = ["127.0.0.1", "localhost", "[::1]", "::1"];
    // wget's spelling: `localhost (localhost)|127.0.0.1|:8080`.
    let lower = &lower.replace("|:", ":").replace('|', " ");
    if !PLACES.iter().any(|place| lower.contains(place)) {
        return None;
    }
    let digits = |rest: &str| {
        let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        rest[..end].parse::<u16>().ok()
    };
    let after = |marker: &str| {
        lower.match_indices(marker).find_map(|(at, _)| digits(&lower[at + marker.len()..]))
    };
    let port = PLACES
        .iter()
        .find_map(|place| after(&format!("{place}:")))
        .or_else(|| after("port "))
        .or_else(|| after("port="));
    Some(port)
}

/// [`Blocked::Network`] for a line (lowercase) that says the network failed: the package
/// manager it comes from (`npm error …`, its registry's host), and the host it names.
fn network_blocked(lower: &str) -> Blocked {
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let preset = PRESET_HINTS
        .iter()
        .find(|(_, hints)| hints.iter().any(|hint| words.contains(hint)))
        .map(|(preset, _)| *preset);
    Blocked::Network { preset, host: named_host(lower) }
}

/// The host a network failure names: in a URL (`https://HOST/…`), or after `host:`,
/// `EAI_AGAIN`, `ENOTFOUND` or `lookup` — a name with a dot and an alphabetic top-level label.
fn named_host(lower: &str) -> Option<String> {
    let is_host = |word: &str| {
        let label = word.rsplit('.').next().unwrap_or_default();
        word.contains('.')
            && !word.starts_with('.')
            && label.len() >= 2
            && label.chars().all(|c| c.is_ascii_alphabetic())
    };
    let token = |rest: &str| -> Option<String> {
        let word: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
            .collect();
        is_host(&word).then_some(word)
    };
    let in_url = lower.split_once("://").and_then(|(_, after)| token(after));
    in_url.or_else(|| {
        ["host:", "eai_again", "enotfound", "lookup"]
            .iter()
            .find_map(|marker| lower.split_once(marker).and_then(|(_, after)| token(after)))
    })
}

/// Whether an advice's directory is the workspace itself (an empty path stands for it).
fn context_free_is_cwd(dir: &Path) -> bool {
    dir.as_os_str().is_empty()
}

/// Everything the output says the sandbox blocked (at most five, no repeats). Beyond single
/// lines: a denial line that names no path is matched with the paths of the three lines
/// before it (tools that print the path and the error apart: cargo's "Caused by:", npm's
/// `path` line); with the network off, "Operation not permitted" anywhere in output that also
/// talks about sockets or connections (a Python traceback puts them on different lines).
pub fn explain_output(stdout: &str, stderr: &str, context: &DenialContext) -> Vec<Blocked> {
    let mut blocked = Vec::new();
    for text in [stderr, stdout] {
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let before = &lines[at.saturating_sub(3)..at];
            let Some(what) = explain_with(line, before, context) else { continue };
            if !blocked.contains(&what) && blocked.len() < 5 {
                blocked.push(what);
            }
        }
    }
    if !context.network && !blocked.iter().any(|b| matches!(b, Blocked::Network { .. })) {
        let lines = || stderr.lines().chain(stdout.lines());
        let lower = |line: &str| line.to_lowercase();
        let eperm = lines().any(|l| lower(l).contains("operation not permitted"));
        let talks_network = lines().any(|l| {
            let l = lower(l);
            ["socket", "connect", "getaddrinfo"].iter().any(|w| l.contains(w))
        });
        if eperm && talks_network {
            blocked.push(Blocked::Network { preset: None, host: None });
        }
    }
    blocked
}

/// What one output line says the sandbox blocked, when it fits the policy.
pub fn explain(line: &str, context: &DenialContext) -> Option<Blocked> {
    explain_with(line, &[], context)
}

/// [`explain`], taking the paths of the lines `before` when `line` names none.
fn explain_with(line: &str, before: &[&str], context: &DenialContext) -> Option<Blocked> {
    let lower = line.to_lowercase();
    if !context.network
        && NETWORK_MARKERS.iter().any(|m| lower.contains(m))
        && NETWORK_WORDS.iter().any(|w| lower.contains(w))
    {
        // A loopback address: the command's own, in a network namespace of its own. A port
        // nothing on the host listens on is the command's own outcome (its server did not
        // start); one the host serves is out of the sandbox's reach, and can be forwarded.
        if let Some(port) = loopback_port(&lower).filter(|_| !lower.contains("not permitted")) {
            return port.filter(|port| context.host_loopback_ports.contains(port)).map(|port| {
                Blocked::Network { preset: None, host: Some(format!("127.0.0.1:{port}")) }
            });
        }
        // Refused, with no address named (Python's `[Errno 111] Connection refused`): the
        // sandbox never refuses that way (outside addresses are unreachable from its
        // namespace; without one seccomp says "not permitted"), so it is something on the
        // command's own loopback that was not listening.
        if lower.contains("connection refused") || lower.contains("econnrefused") {
            return None;
        }
        return Some(network_blocked(&lower));
    }
    // pip without retries says only that its index offered nothing: with the network off, that
    // is the index it could not reach.
    if !context.network && lower.contains("(from versions: none)") {
        return Some(Blocked::Network { preset: Some("pip"), host: named_host(&lower) });
    }
    let busy = lower.contains(BUSY_MARKER);
    // Node's and libuv's spelling (`EROFS: read-only file system, open '…'`) as a word of its
    // own: inside a name (`numberOfSamples`) it is no error at all.
    let erofs = line.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| word == "EROFS");
    if !busy && !erofs && !DENIAL_MARKERS.iter().any(|m| lower.contains(m)) {
        return None;
    }
    let mut candidates = mentioned_paths(line, &context.cwd);
    if candidates.is_empty() {
        candidates = before.iter().rev().flat_map(|l| mentioned_paths(l, &context.cwd)).collect();
    }
    let read_only_fs = lower.contains("read-only file system") || erofs;
    let found: Vec<Blocked> = candidates
        .into_iter()
        .filter_map(|Mentioned { path, relative }| {
            if path == Path::new("/dev/null") {
                None
            } else if context.hidden.iter().any(|p| path.starts_with(p)) {
                Some(Blocked::Hidden { path })
            } else if let Some(entry) = context.home_hidden.iter().find(|p| path.starts_with(p)) {
                Some(Blocked::NotOnHomeList { entry: entry.clone(), path })
            } else if busy {
                // Only a mount point the sandbox made is evidence; a busy device is not.
                let protected = context.protected.iter().any(|p| path.starts_with(p));
                protected.then_some(Blocked::Protected { path })
            } else if !context.writable_roots.iter().any(|root| path.starts_with(root)) {
                let only_access_denied =
                    !read_only_fs && !lower.contains("operation not permitted");
                if context.write_refusal == WriteRefusal::ReadOnlyMounts && only_access_denied {
                    return None;
                }
                let allow = allow_for(&path, context);
                Some(Blocked::OutsideRoots { path, allow })
            } else if context.protected.iter().any(|p| path.starts_with(p)) {
                Some(Blocked::Protected { path })
            } else if relative.is_some() && read_only_fs {
                // Inside a writable root nothing is a read-only file system but the protected
                // paths: the command wrote from somewhere else than where it started.
                relative.map(|path| Blocked::Unlocated { path })
            } else {
                None
            }
        })
        .collect();
    // A path that can be placed wins over one that cannot (`mv 'x' to '/elsewhere/x'`).
    let placed = found.iter().find(|b| !matches!(b, Blocked::Unlocated { .. })).cloned();
    placed.or_else(|| found.into_iter().next())
}

/// A path a message names, made absolute; `relative` keeps how it was written when it was
/// not absolute.
struct Mentioned {
    path: PathBuf,
    relative: Option<PathBuf>,
}

/// Words of a message that look like paths, made absolute against `cwd`: words with a `/`
/// (`/etc/x`, `./a/b`, `src/x:`), and quoted words (`'out.txt'`, `"Cargo.lock"`) — bare
/// unquoted words are not taken, too many messages use plain words. The first field of a
/// `program: …: message` line is the program that speaks, never the path it failed on
/// (`/bin/sh: 1: cannot create /x/out: Read-only file system`).
fn mentioned_paths(line: &str, cwd: &Path) -> Vec<Mentioned> {
    let fields: Vec<&str> = line.split(": ").collect();
    let body = if fields.len() >= 3 && !fields[0].contains(' ') {
        &line[fields[0].len() + 2..]
    } else {
        line
    };
    let mut words: Vec<&str> = quoted(body);
    words.extend(
        body.split(|c: char| c.is_whitespace())
            .map(|word| word.trim_matches(|c: char| "'\"`‘’“”:,;()[]{}<>".contains(c)))
            .filter(|word| word.contains('/') && !word.contains("://")),
    );
    let mut seen = Vec::new();
    words
        .into_iter()
        .filter(|word| {
            !word.is_empty() && !word.contains("://") && !word.contains(char::is_whitespace)
        })
        .filter_map(|word| {
            let written = Path::new(word);
            let mentioned = Mentioned {
                path: cordon_policies::lexically_normal(&cwd.join(written)),
                relative: (!written.is_absolute()).then(|| written.to_path_buf()),
            };
            (!seen.contains(&mentioned.path)).then(|| {
                seen.push(mentioned.path.clone());
                mentioned
            })
        })
        .collect()
}

/// The text between matching quotes (`'…'`, `"…"`, `` `…' ``, `‘…’`, `“…”`).
fn quoted(text: &str) -> Vec<&str> {
    const PAIRS: [(char, char); 5] =
        [('\'', '\''), ('"', '"'), ('`', '\''), ('‘', '’'), ('“', '”')];
    let mut found = Vec::new();
    let mut rest = text;
    while let Some((at, open)) =
        rest.char_indices().find(|(_, c)| PAIRS.iter().any(|(o, _)| o == c))
    {
        let close = PAIRS.iter().find(|(o, _)| *o == open).map_or(open, |(_, c)| *c);
        let after = &rest[at + open.len_utf8()..];
        match after.find(close) {
            Some(end) => {
                found.push(&after[..end]);
                rest = &after[end + close.len_utf8()..];
            }
            None => break,
        }
    }
    found
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
