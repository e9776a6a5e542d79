//! Shared helpers: running cordon, probing kernel features, skipping with a reason.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

pub const CORDON: &str = env!("CARGO_BIN_EXE_cordon");

/// This platform's sandbox as cordon names it: `--json` attempts, `CORDON_SANDBOX`, messages.
pub const SANDBOX: &str = if cfg!(target_os = "macos") { "seatbelt" } else { "linux" };

/// The platform word of `cordon sandbox PLATFORM`.
pub const PLATFORM: &str = if cfg!(target_os = "macos") { "macos" } else { "linux" };

/// Skips the test with a printed reason; with `CORDON_TEST_REQUIRE_SANDBOX=1` a skip fails.
macro_rules! skip_unless {
    ($cond:expr, $($reason:tt)*) => {
        if !$cond {
            let reason = format!($($reason)*);
            if std::env::var_os("CORDON_TEST_REQUIRE_SANDBOX").is_some_and(|v| v == "1") {
                panic!("CORDON_TEST_REQUIRE_SANDBOX=1 but this test must skip: {reason}");
            }
            eprintln!("SKIPPED: {reason}");
            return;
        }
    };
}
pub(crate) use skip_unless;

/// The kernel features the suite depends on, read once from `cordon doctor --json` (on macOS:
/// whether `/usr/bin/sandbox-exec` is there; the Linux fields stay 0 and false).
pub struct Features {
    pub landlock_abi: i64,
    pub seccomp: bool,
    pub mount_view: bool,
    pub seatbelt: bool,
}

impl Features {
    /// Whether this platform's sandbox can run a command: Landlock (at least `abi`) and
    /// seccomp on Linux, Seatbelt on macOS.
    pub fn sandbox_at(&self, abi: i64) -> bool {
        if cfg!(target_os = "macos") {
            self.seatbelt
        } else {
            self.landlock_abi >= abi && self.seccomp
        }
    }

    /// Whether hidden and protected paths are enforced here: by the mount view on Linux, by
    /// the Seatbelt profile on macOS.
    pub fn path_rules(&self) -> bool {
        cfg!(target_os = "macos") || self.mount_view
    }

    /// The flags of a run without the mount view: `--no-mount-view`, and below Landlock ABI 3
    /// (which cannot refuse truncating files outside the roots; the mount view would)
    /// `--best-effort` to accept that one gap — what Landlock hides stays enforced.
    #[cfg(target_os = "linux")]
    pub fn no_mount_view(&self) -> &'static [&'static str] {
        if self.landlock_abi >= 3 {
            &["--no-mount-view"]
        } else {
            &["--no-mount-view", "--best-effort"]
        }
    }

    /// Why [`Features::sandbox_at`] is false.
    pub fn missing(&self, abi: i64) -> String {
        if cfg!(target_os = "macos") {
            "needs /usr/bin/sandbox-exec".to_owned()
        } else {
            format!(
                "needs Landlock ABI {abi} and seccomp (kernel has ABI {}, seccomp {})",
                self.landlock_abi, self.seccomp
            )
        }
    }
}

pub fn features() -> &'static Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    FEATURES.get_or_init(|| {
        let out = Command::new(CORDON).args(["doctor", "--json"]).output().unwrap();
        // 1: the default policy cannot be enforced here (the JSON says why).
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "doctor failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Features {
            landlock_abi: v["kernel"]["landlock_abi"].as_i64().unwrap_or(0),
            seccomp: v["kernel"]["seccomp_filter"].as_bool().unwrap_or(false),
            mount_view: v["kernel"]["mount_view"] == true,
            seatbelt: cfg!(target_os = "macos") && Path::new("/usr/bin/sandbox-exec").exists(),
        }
    })
}

/// Skips unless this platform's sandbox is available: Landlock (at least `abi`) and seccomp on
/// Linux, Seatbelt on macOS.
macro_rules! require_sandbox {
    ($abi:expr) => {
        let f = $crate::suite::util::features();
        $crate::suite::util::skip_unless!(f.sandbox_at($abi), "{}", f.missing($abi));
    };
}
pub(crate) use require_sandbox;

/// Skips unless the sandbox and the mount view are available to the test user.
#[cfg(target_os = "linux")]
macro_rules! require_mount_view {
    () => {
        $crate::suite::util::require_sandbox!(1);
        $crate::suite::util::skip_unless!(
            $crate::suite::util::features().mount_view,
            "this kernel refuses the mount view to the test user"
        );
    };
}
#[cfg(target_os = "linux")]
pub(crate) use require_mount_view;

/// Why a write layer (`--writes transaction`) cannot be mounted here, if it cannot: the first
/// line cordon gives when a transactional `true` is refused with 125.
#[cfg(target_os = "linux")]
pub fn write_layer_missing() -> Option<String> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    MISSING
        .get_or_init(|| {
            let ws = scratch();
            let home = scratch();
            let out = Command::new(CORDON)
                .args(["exec", "-a", "never", "--writes", "transaction", "-C"])
                .arg(ws.path())
                .args(["--", "true"])
                .env("CORDON_HOME", home.path().join(".cordon"))
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.code() == Some(125) && stderr.contains("write layer"))
                .then(|| stderr.lines().next().unwrap_or_default().to_owned())
        })
        .clone()
}

/// Skips unless the sandbox, the mount view and a write layer are available to the test user.
#[cfg(target_os = "linux")]
macro_rules! require_write_layer {
    () => {
        $crate::suite::util::require_mount_view!();
        let missing = $crate::suite::util::write_layer_missing();
        $crate::suite::util::skip_unless!(missing.is_none(), "{}", missing.unwrap_or_default());
    };
}
#[cfg(target_os = "linux")]
pub(crate) use require_write_layer;

/// A helper program under `tests/helpers/`.
pub fn helper_program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/helpers").join(name)
}

pub fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" }
}

/// A scratch directory outside `/tmp` (which is a writable root by default), in `/var/tmp` so
/// that uid 65534 can reach it wherever the build tree is. Its path is canonical (on macOS
/// `/var` is a symbolic link to `/private/var`, and cordon names canonical paths).
pub fn scratch() -> tempfile::TempDir {
    let base =
        if Path::new("/var/tmp").is_dir() { "/var/tmp" } else { env!("CARGO_TARGET_TMPDIR") };
    let base = std::fs::canonicalize(base).unwrap();
    let dir = tempfile::Builder::new().prefix("cordon-e2e-").tempdir_in(base).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// Output with readable accessors.
pub struct Run {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        assert!(
            self.ok(),
            "expected success, got {:?}\nstdout: {}\nstderr: {}",
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "cordon panicked: {stderr}");
        Run {
            code: out.status.code(),
            signal: out.status.signal(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        }
    }
}

/// Who runs cordon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// The user the suite runs as: root on Linux (CI, so that the unprivileged variant can be
    /// started), the runner's own unprivileged user on macOS.
    Root,
    /// uid 65534 through `setpriv` (Linux only).
    Nobody,
}

/// Every user a privilege-sensitive test runs as. On macOS the suite itself is unprivileged
/// and there is no `setpriv`.
#[cfg(target_os = "linux")]
pub const USERS: [User; 2] = [User::Root, User::Nobody];
#[cfg(not(target_os = "linux"))]
pub const USERS: [User; 1] = [User::Root];

/// A copy of the binary that uid 65534 can execute (the build tree may sit under a 0700 home).
/// One copy per build, named after the binary's size and modification time and shared by every
/// test process: the kernel matrix reruns failed tests one process each, and a copy per
/// process once filled the VM's /tmp.
pub fn cordon_for(user: User) -> PathBuf {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    match user {
        User::Root => PathBuf::from(CORDON),
        User::Nobody => COPY
            .get_or_init(|| {
                let meta = std::fs::metadata(CORDON).unwrap();
                let modified = meta.modified().unwrap();
                let stamp = modified.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
                // Outside /tmp, a writable root by default: cordon keeps its own executable
                // read-only when it lies in one, and refuses to run without the mount view then.
                let base = if Path::new("/var/tmp").is_dir() {
                    PathBuf::from("/var/tmp")
                } else {
                    std::env::temp_dir()
                };
                let dir = base.join(format!("cordon-e2e-bin-{}-{stamp}", meta.len()));
                let path = dir.join("cordon");
                if std::fs::metadata(&path).is_ok_and(|m| m.len() == meta.len()) {
                    return path;
                }
                // The copies of earlier builds go: one copy, of this build, is all the suite
                // leaves behind.
                let earlier = std::fs::read_dir(&base).into_iter().flatten().flatten();
                for entry in earlier {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    if name.starts_with("cordon-e2e-bin-") && entry.path() != dir {
                        let _ = std::fs::remove_dir_all(entry.path());
                    }
                }
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
                // Copied under a name of this process's own, then renamed: a process that
                // looks meanwhile never runs a half-written binary.
                let partial = dir.join(format!("cordon.{}", std::process::id()));
                std::fs::copy(CORDON, &partial).unwrap();
                std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::rename(&partial, &path).unwrap();
                path
            })
            .clone(),
    }
}

/// The path of the binary copy uid 65534 runs.
pub fn nobody_binary() -> PathBuf {
    cordon_for(User::Nobody)
}

/// Whether the suite runs as root (it must for the unprivileged variants to make sense).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `cordon <args>` as `user`, stdin from /dev/null, with `HOME` pointing at `home` if given.
pub fn cordon_as(user: User, args: &[&str], home: Option<&Path>) -> Run {
    let mut cmd = cordon_command(user, args);
    if let Some(home) = home {
        cmd.env("HOME", home);
    }
    cmd.output().unwrap().into()
}

/// The `cordon <args>` command as `user`, stdin from /dev/null, for callers that set the
/// environment themselves.
pub fn cordon_command(user: User, args: &[&str]) -> Command {
    let mut cmd = command_as(user, cordon_for(user));
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// `program` run as `user`: itself for root, through `setpriv` for uid 65534 (no groups).
pub fn command_as(user: User, program: impl AsRef<OsStr>) -> Command {
    match user {
        User::Root => Command::new(program),
        User::Nobody => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(program);
            c
        }
    }
}

pub fn cordon(args: &[&str]) -> Run {
    cordon_as(User::Root, args, None)
}

/// Python that runs `argv[1:]` in a session of its own (macOS has no `setsid` command); a
/// macro so that [`SETSID`] can quote it with `concat!`.
macro_rules! setsid_py {
    () => {
        "import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])"
    };
}

/// `program args…` with no controlling terminal (a session of its own, like `setsid -w`), so
/// that `/dev/tty` cannot be opened and nothing can ask on a terminal; waits for it as usual.
/// util-linux's `setsid` on Linux; macOS has no such command, so Python does it there.
pub fn without_terminal(program: &str) -> Command {
    if cfg!(target_os = "linux") {
        let mut cmd = Command::new("setsid");
        cmd.args(["-w", program]);
        return cmd;
    }
    let mut cmd = Command::new(python());
    cmd.args(["-c", setsid_py!(), program]);
    cmd
}

/// Shell words that run the words after them in a session of their own (`setsid` is
/// util-linux's; macOS has none).
pub const SETSID: &str =
    if cfg!(target_os = "macos") { concat!("python3 -c '", setsid_py!(), "'") } else { "setsid" };

/// `cordon sandbox PLATFORM <flags> -C dir -- sh -c script`.
pub fn sandbox_sh(user: User, flags: &[&str], dir: &Path, script: &str) -> Run {
    let mut args = vec!["sandbox", PLATFORM];
    args.extend_from_slice(flags);
    let dir = dir.to_str().unwrap();
    args.extend_from_slice(&["-C", dir, "--", "sh", "-c", script]);
    cordon_as(user, &args, None)
}

/// `cordon sandbox PLATFORM <flags> -C dir -- python3 -c code` as `user`.
#[cfg(target_os = "linux")]
pub fn python_sandboxed(user: User, flags: &[&str], dir: &Path, code: &str) -> Run {
    let mut args = vec!["sandbox", PLATFORM];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["-C", dir.to_str().unwrap(), "--", python(), "-c", code]);
    cordon_as(user, &args, None)
}

/// Python that evaluates `call` (an expression using `libc`) and prints `ret R errno E`.
#[cfg(target_os = "linux")]
pub fn syscall_probe(call: &str) -> String {
    format!("{PY_LIBC}r = {call}\nprint('ret', r, 'errno', ctypes.get_errno())")
}

/// Asserts that a [`syscall_probe`] run saw the call fail with EPERM (the filter's answer).
#[cfg(target_os = "linux")]
#[track_caller]
pub fn assert_eperm(run: &Run, what: &str) {
    run.assert_ok();
    let expected = format!("ret -1 errno {}", libc::EPERM);
    assert!(run.stdout.contains(&expected), "{what}: {}{}", run.stdout, run.stderr);
}

/// How many processes have a command line matching the extended regex `pattern` (`pgrep -f`).
/// Anchor it (`^sleep 1.5$`): cordon's own command line often contains the same words.
pub fn processes_matching(pattern: &str) -> usize {
    let out = Command::new("pgrep").args(["-f", pattern]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// `CORDON_TEST_TIME_SCALE` (default 1): how many times slower than a normal machine this one
/// is. The kernel matrix sets it under software emulation (TCG), where everything takes 10-30
/// times longer; a test's wall-clock bounds are [`scaled`] by it.
pub fn time_scale() -> u32 {
    std::env::var("CORDON_TEST_TIME_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1)
}

/// `bound` multiplied by [`time_scale`].
pub fn scaled(bound: std::time::Duration) -> std::time::Duration {
    bound * time_scale()
}

/// [`processes_matching`], polled for up to 5 s until it reaches `expected` (processes a
/// command starts in the background may come up after the call that started them returned).
pub fn eventually_matching(pattern: &str, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + scaled(std::time::Duration::from_secs(5));
    loop {
        let found = processes_matching(pattern);
        if found >= expected || std::time::Instant::now() >= deadline {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `cordon sandbox PLATFORM <flags> -C dir -- argv` as root, stdin from /dev/null, for callers
/// that set the environment or redirect stdout themselves.
pub fn sandbox_command(flags: &[&str], dir: &Path, argv: &[&str]) -> Command {
    let mut cmd = Command::new(CORDON);
    cmd.args(["sandbox", PLATFORM])
        .args(flags)
        .arg("-C")
        .arg(dir)
        .arg("--")
        .args(argv)
        .stdin(Stdio::null());
    cmd
}

/// Runs the helper directly through the arg0 trick with a policy JSON.
#[cfg(target_os = "linux")]
pub fn helper(policy: &str, cwd: &Path, command: &[&str]) -> Run {
    helper_cmd(policy, cwd, &[], command).output().unwrap().into()
}

#[cfg(target_os = "linux")]
pub fn helper_cmd(policy: &str, cwd: &Path, extra: &[&str], command: &[&str]) -> Command {
    let mut cmd = Command::new(CORDON);
    std::os::unix::process::CommandExt::arg0(&mut cmd, "codex-linux-sandbox")
        .arg("--sandbox-policy-cwd")
        .arg(cwd)
        .arg("--sandbox-policy")
        .arg(policy)
        .args(extra)
        .arg("--")
        .args(command)
        .current_dir(cwd)
        .stdin(Stdio::null());
    cmd
}

/// A workspace-write policy whose only writable root is `root` (no /tmp, no $TMPDIR).
#[cfg(target_os = "linux")]
pub fn only_root_policy(root: &Path, network: bool) -> String {
    serde_json::json!({
        "type": "workspace-write",
        "writable_roots": [root],
        "network_access": network,
        "exclude_tmpdir_env_var": true,
        "exclude_slash_tmp": true,
    })
    .to_string()
}

/// Runs a Python snippet inside the sandbox (helper, arg0 trick) under `policy`.
#[cfg(target_os = "linux")]
pub fn python_in(policy: &str, cwd: &Path, code: &str) -> Run {
    helper(policy, cwd, &[python(), "-c", code])
}

/// Prefix for Python snippets: `libc` through ctypes with errno.
#[cfg(target_os = "linux")]
pub const PY_LIBC: &str =
    "import ctypes, os, sys, socket, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n";

/// What [`fake_home`]'s private key file holds.
pub const FAKE_KEY: &str = "FAKE-PRIVATE-KEY-cordon-e2e";

/// A scratch HOME (owned by uid 65534, so both users can read it outside the sandbox) holding
/// `.ssh/id_ed25519` with [`FAKE_KEY`]. Returns the directory and the key's path.
pub fn fake_home() -> (tempfile::TempDir, PathBuf) {
    let home = scratch();
    let ssh = home.path().join(".ssh");
    std::fs::create_dir(&ssh).unwrap();
    let key = ssh.join("id_ed25519");
    std::fs::write(&key, FAKE_KEY).unwrap();
    chown_nobody(home.path());
    (home, key)
}

/// Makes a directory tree owned by uid/gid 65534 (for the unprivileged variants, which need
/// root to start: a suite that does not run as root has none and leaves the tree alone).
pub fn chown_nobody(path: &Path) {
    if !is_root() {
        return;
    }
    let status = Command::new("chown").args(["-R", "65534:65534"]).arg(path).status().unwrap();
    assert!(status.success());
}

#[cfg(target_os = "linux")]
pub fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// A Python wrapper that installs a seccomp filter making each `(syscall number, errno)` fail,
/// then execs `argv` (with `argv[0]` as given): simulates kernels without a feature.
#[cfg(target_os = "linux")]
pub fn under_filter(deny: &[(i64, i32)], program: &Path, argv: &[&OsStr]) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(helper_program("under_filter.py")).arg(deny.len().to_string());
    for (nr, errno) in deny {
        cmd.arg(nr.to_string()).arg(errno.to_string());
    }
    cmd.arg(program).args(argv).stdin(Stdio::null());
    cmd
}

/// Whether Python's `pyte` VT emulator is there (`.ci/run` installs it).
pub fn pyte_available() -> bool {
    Command::new(python())
        .args(["-c", "import pyte"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Skips (fatal under `CORDON_TEST_REQUIRE_SANDBOX=1`) without pyte: a test cannot judge what a
/// screen shows without an emulator.
macro_rules! require_pyte {
    () => {
        $crate::suite::util::skip_unless!(
            $crate::suite::util::pyte_available(),
            "needs Python's pyte VT emulator ({} -m pip install pyte)",
            $crate::suite::util::python()
        );
    };
}
pub(crate) use require_pyte;

/// A Python program that connects to each socket path in its argv and prints `PATH connected`
/// or `PATH refused ERRNO`.
#[cfg(target_os = "linux")]
pub const CONNECT_ALL: &str = r#"
import socket, sys
for path in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.close()
        print(path, "connected")
    except OSError as error:
        print(path, "refused", error.errno)
"#;

/// A shell command line running [`CONNECT_ALL`] on `paths`.
#[cfg(target_os = "linux")]
pub fn connect_all_line(paths: &[&Path]) -> String {
    let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''"));
    let mut words = vec![quote(python()), "-c".to_owned(), quote(CONNECT_ALL)];
    words.extend(paths.iter().map(|path| quote(&path.to_string_lossy())));
    words.join(" ")
}
