//! The helper's command line, Codex-compatible, and the argv builder the orchestrator uses.
//!
//! The helper's flags are parsed by a short loop rather than clap: the helper runs once per
//! sandboxed command and its whole budget is about one extra `execve` (see the crate docs), and
//! these are a few fixed flags with no help text to render.
//!
//! `--user-view JSON` is cordon's own flag (Codex does not pass it): the caller's HOME, TMPDIR,
//! XDG_RUNTIME_DIR, SSH_AUTH_SOCK, uid and CORDON_HOME, from which hidden paths and the
//! `$TMPDIR` writable root are computed. The helper's own environment is the *command's*, which
//! the environment policy may have emptied (`inherit = none`) or rewritten (`set.TMPDIR`); a
//! secret must stay hidden and a directory must stay read-only whatever that policy says.

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use cordon_policies::{
    EnvSnapshot, MountViewRequirement, SandboxPolicy, SandboxRequest, Strictness, TreeLimits,
};

use crate::error::HelperError;

/// The name the helper personality answers to (`argv[0]`).
pub const HELPER_ARG0: &str = "codex-linux-sandbox";

/// Whether the command dies with the helper's parent (`PR_SET_PDEATHSIG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParentDeath {
    /// The command outlives its parent like any process (the Codex-compatible default).
    #[default]
    Ignore,
    /// SIGKILL when the parent dies (`--die-with-parent`): what the orchestrator and the
    /// executor's PTY sessions ask for, so nothing they started outlives them.
    Kill,
}

/// Who called the helper: decides the name its messages carry. `cordon exec` passes
/// `--caller cordon`, so a user who typed `cordon` reads `cordon: sandbox: …`, never the name of
/// a program they did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Caller {
    /// Run as `codex-linux-sandbox` by a person or by Codex.
    #[default]
    Direct,
    /// Run by cordon's own front end (`exec`, `sandbox`, the executor, the MCP server).
    Cordon,
}

/// The start of a setup-failure line when cordon called the helper (see [`Caller`]).
pub const CORDON_MESSAGE_PREFIX: &str = "cordon: sandbox: ";

impl Caller {
    /// What the helper's messages start with, up to and including `": "`.
    pub fn message_prefix(self) -> &'static str {
        match self {
            Caller::Direct => "codex-linux-sandbox: ",
            Caller::Cordon => CORDON_MESSAGE_PREFIX,
        }
    }

    /// The caller named before `--` in `args`, looked at before anything is parsed so even a
    /// usage error carries the right name.
    pub fn of(args: &[OsString]) -> Caller {
        let mut before = args.iter().take_while(|a| *a != "--");
        while let Some(arg) = before.next() {
            if arg == "--caller=cordon"
                || (arg == "--caller" && before.next().is_some_and(|v| v == "cordon"))
            {
                return Caller::Cordon;
            }
        }
        Caller::Direct
    }
}

/// Where the helper takes the user's HOME, TMPDIR, etc. from (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UserView {
    /// Its own environment: a direct, Codex-style call, where that environment is the caller's.
    #[default]
    OwnEnvironment,
    /// Given with `--user-view JSON` (absent fields are unset, never looked up).
    Given(Box<EnvSnapshot>),
}

/// A directory by its device and inode numbers (`st_dev`, `st_ino`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirIdentity {
    pub dev: u64,
    pub ino: u64,
}

impl std::str::FromStr for DirIdentity {
    type Err = HelperError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid =
            || HelperError::Usage(format!("--command-cwd-identity {text:?}: not DEV:INO"));
        let (dev, ino) = text.split_once(':').ok_or_else(invalid)?;
        Ok(DirIdentity {
            dev: dev.parse().map_err(|_| invalid())?,
            ino: ino.parse().map_err(|_| invalid())?,
        })
    }
}

impl std::fmt::Display for DirIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.dev, self.ino)
    }
}

/// A parsed helper invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperArgs {
    /// What to enforce: the policy, the directory its roots are resolved against, and how
    /// strictly (`--request JSON`, or Codex's `--sandbox-policy-cwd`/`--sandbox-policy` with
    /// `--best-effort`, `--require-mount-view`, `--no-mount-view`).
    pub request: SandboxRequest,
    /// Where the command runs; the helper's own cwd when absent.
    pub command_cwd: Option<PathBuf>,
    /// `--command-cwd-identity DEV:INO`: the directory the caller showed for approval. The
    /// helper enters `command_cwd` by path and refuses to run the command anywhere else (the
    /// path may have been swapped for a symlink since).
    pub command_cwd_identity: Option<DirIdentity>,
    pub parent_death: ParentDeath,
    pub user_view: UserView,
    /// `--proxy-fd N`: an inherited descriptor, this process's end of a socketpair whose
    /// other end cordon's network proxy holds, for a policy with a domain allow-list. The
    /// helper hands the proxy a listening socket on `127.0.0.1` inside the command's network
    /// namespace through it. A descriptor rather than a path: no other process, sandboxed or
    /// not, can reach a socketpair, so none can hand the proxy a listener of its own.
    pub proxy_fd: Option<RawFd>,
    pub caller: Caller,
    /// `--tree-limits-in-cgroup`: the caller put this process in a cgroup that holds the
    /// request's memory and pids limits (and its CPU total), so the helper sets only the
    /// per-process ones. Without it the helper holds them with rlimits where best effort
    /// allows, else refuses (exit 125).
    pub tree_limits: TreeLimits,
    /// `--writes-to DIR`: the command's writes to its writable roots (but `/tmp` and
    /// `$TMPDIR`) land in a write layer kept in DIR, a directory of the caller's outside every
    /// writable root, instead of in the roots; the caller applies them after the run
    /// (`crate::write_layer`). Without it the command writes the roots directly.
    pub writes_to: Option<PathBuf>,
    /// `--temporary-in DIR` (with `--writes-to`): `/tmp` and `$TMPDIR` get write layers too,
    /// whose upper directories live on in DIR (one per directory, kept across runs) and are
    /// never applied: what the command writes there is its own, the host's are only read.
    pub temporary_in: Option<PathBuf>,
    /// The command and its arguments (never empty).
    pub command: Vec<OsString>,
    /// Not a flag: the repositories of the writable roots, found by a caller that runs the
    /// helper in its own forked child and walked them a moment before (for its watch of what
    /// the command plants). Without it the helper walks them itself.
    #[cfg(target_os = "linux")]
    pub walked: Option<std::sync::Arc<crate::repositories::RepositoryWalk>>,
    /// Not a flag: how the front end keeps a transaction's state, for a request that asks the
    /// helper for a transaction of its own. Without it such a request is refused.
    #[cfg(target_os = "linux")]
    pub transactions: Option<crate::own_transaction::TransactionHooks>,
}

/// The helper's `--help`.
pub const HELPER_USAGE: &str = "\
usage: codex-linux-sandbox --sandbox-policy-cwd DIR --permission-profile JSON [--command-cwd DIR]
           [--best-effort] [--require-mount-view | --no-mount-view] [--die-with-parent]
           [--writes auto|transaction|direct] [--user-view JSON] [--proxy-fd N]
           [--caller cordon] -- CMD [ARG...]
       codex-linux-sandbox --sandbox-policy-cwd DIR --sandbox-policy JSON [--command-cwd DIR]
           [--best-effort] [--require-mount-view | --no-mount-view] [--die-with-parent]
           [--writes auto|transaction|direct] [--user-view JSON] [--proxy-fd N]
           [--caller cordon] -- CMD [ARG...]
       codex-linux-sandbox --request JSON [--command-cwd DIR] [--die-with-parent]
           [--user-view JSON] [--proxy-fd N] [--caller cordon] [--tree-limits-in-cgroup]
           [--writes-to DIR [--temporary-in DIR]] -- CMD [ARG...]

Confines itself (mount view, Landlock, capabilities, seccomp, no_new_privs) under the policy,
then execs CMD. --permission-profile is the policy as Codex 0.169 passes it (its permission
profile: file-system entries with read, write or deny access, and the network); --sandbox-policy
the older Codex policy JSON. With a domain allow-list in the policy (`network_domains`) CMD gets a network
namespace with only loopback, and HTTP(S)_PROXY/ALL_PROXY pointing at a port there whose
listening socket is handed to the proxy over the inherited UNIX socket on descriptor N
(--proxy-fd), which is closed before CMD runs. A drop-in for OpenAI Codex's helper:
--use-bwrap-sandbox, --apply-seccomp-then-exec, --no-proc and --use-legacy-landlock are accepted;
--file-system-sandbox-policy/--network-sandbox-policy are checked against --sandbox-policy
(deny entries are refused); --managed-network, --allow-network-for-proxy, --proxy-route-spec,
--inherit-pid-namespace and --verify-fd-mount are refused, and so is a permission profile that
restricts reads or that cordon cannot otherwise enforce as Codex means it (docs/linux-sandbox.md).

--writes transaction: CMD's writes to its writable roots land in a layer of their own (its /tmp
and $TMPDIR are its workspace's, kept in $CORDON_HOME), and before the helper exits they reach
the roots through cordon's write gate, which holds back what git, a shell or a tool would later
run code from (named on stderr; `cordon held` lists it); 125 where this machine cannot make the
layer. --writes auto: that where it can, else direct writes and a line saying why. The default,
direct: CMD writes its roots as it runs (docs/transactions.md).

--request is cordon's whole sandbox request in one JSON object, {\"policy\": POLICY,
\"policy_cwd\": DIR, \"strictness\": \"fail_closed\"|\"best_effort\", \"mount_view\":
\"auto\"|\"required\"|\"off\", \"limits\": {\"memory\": BYTES, \"pids\": N, \"cpu\": SECONDS,
\"file-size\": BYTES, \"open-files\": N}, \"writes\": \"direct\"|\"auto\"|\"transaction\"} (the last four
optional); an unknown field is an error (exit 125). It replaces --sandbox-policy-cwd,
--sandbox-policy, --best-effort, --writes and the mount-view flags, which cannot be given with
it.

--user-view, --proxy-fd and --caller are cordon's own: cordon passes them when it runs the
helper (--caller cordon makes messages start `cordon: sandbox:`). So is --writes-to DIR: the
command's writes to its writable roots (but /tmp and $TMPDIR) land in a write layer (an overlay
whose upper directory is in DIR, which must lie outside every writable root) and reach the
roots only when the caller applies them after the run; it needs the mount view (else 125), and
cannot be given with a transaction of the helper's own (--writes). With
--temporary-in DIR, /tmp and $TMPDIR get write layers too, whose upper directories stay in DIR
across runs and are never applied: the command reads the host's files there and writes its own
copy. So is
--command-cwd-identity DEV:INO: the command runs in --command-cwd only if that path still leads
to the directory with these device and inode numbers (the one shown for approval), else 125.
--tree-limits-in-cgroup says the caller holds the memory and pids limits in a cgroup; without
it they are refused (125) unless best effort, which sets RLIMIT_DATA and RLIMIT_NPROC.

Exit status: CMD's own once it runs; 125 the sandbox could not be set up (one line on
stderr says why); 126 CMD not executable; 127 CMD not found.
";

/// What the helper was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Run(Box<HelperArgs>),
    Help,
    Version,
}

/// `--help`/`-h` and `--version`/`-V` before `--` answer instead of running; anything else is
/// [`parse_helper_args`].
pub fn parse_invocation(args: Vec<OsString>) -> Result<Invocation, HelperError> {
    let before_separator = args.iter().take_while(|a| *a != "--");
    for arg in before_separator {
        match arg.to_str() {
            Some("--help" | "-h") => return Ok(Invocation::Help),
            Some("--version" | "-V") => return Ok(Invocation::Version),
            _ => {}
        }
    }
    parse_helper_args(args).map(|args| Invocation::Run(Box::new(args)))
}

/// Parses the helper's arguments (without `argv[0]`).
pub fn parse_helper_args(
    args: impl IntoIterator<Item = OsString>,
) -> Result<HelperArgs, HelperError> {
    let mut args = args.into_iter();
    let mut policy_cwd: Option<PathBuf> = None;
    let mut policy_json: Option<OsString> = None;
    let mut profile_json: Option<OsString> = None;
    let mut command_cwd: Option<PathBuf> = None;
    let mut command_cwd_identity: Option<DirIdentity> = None;
    let mut strictness = Strictness::FailClosed;
    let mut mount_view = MountViewRequirement::WhenAvailable;
    let mut writes = cordon_policies::WriteChoice::Direct;
    let mut request_json: Option<OsString> = None;
    // The Codex-compatible flags that `--request` replaces, as given.
    let mut request_flags: Vec<String> = Vec::new();
    let mut parent_death = ParentDeath::Ignore;
    let mut user_view_json: Option<OsString> = None;
    let mut proxy_fd: Option<RawFd> = None;
    let mut caller = Caller::Direct;
    let mut tree_limits = TreeLimits::None;
    let mut writes_to: Option<PathBuf> = None;
    let mut temporary_in: Option<PathBuf> = None;
    let mut split_policies = SplitPolicies::default();
    let mut saw_separator = false;
    let mut given: Vec<String> = Vec::new();

    while let Some(arg) = args.next() {
        if arg == "--" {
            saw_separator = true;
            break;
        }
        // `--flag=value` splits at the first `=`, on bytes: the value keeps every byte it has.
        let bytes = arg.as_bytes();
        let (flag, inline_value) = match bytes.iter().position(|b| *b == b'=') {
            Some(at) if bytes.starts_with(b"--") => (
                String::from_utf8_lossy(&bytes[..at]).into_owned(),
                Some(OsStr::from_bytes(&bytes[at + 1..]).to_owned()),
            ),
            _ => (arg.to_string_lossy().into_owned(), None),
        };
        // A switch takes no value: `--best-effort=false` is not a way to say no.
        if inline_value.is_some() && SWITCHES.contains(&flag.as_str()) {
            return Err(HelperError::Usage(format!("{flag} takes no value")));
        }
        let mut value = |name: &str| -> Result<OsString, HelperError> {
            match inline_value.clone() {
                Some(v) => Ok(v),
                None => {
                    args.next().ok_or_else(|| HelperError::Usage(format!("{name} needs a value")))
                }
            }
        };
        // A flag given twice is an error, never "the last one wins": a caller that appends
        // its own policy to another's must not replace it in silence.
        if !SWITCHES.contains(&flag.as_str()) && given.contains(&flag) {
            return Err(HelperError::Usage(format!("{flag} is given twice")));
        }
        given.push(flag.clone());
        if LEGACY_REQUEST_FLAGS.contains(&flag.as_str()) {
            request_flags.push(flag.clone());
        }
        match flag.as_str() {
            "--request" => request_json = Some(value(&flag)?),
            "--sandbox-policy-cwd" => policy_cwd = Some(PathBuf::from(value(&flag)?)),
            "--sandbox-policy" => policy_json = Some(value(&flag)?),
            // Codex 0.169's one policy flag (its permission profile JSON).
            "--permission-profile" => profile_json = Some(value(&flag)?),
            "--command-cwd" => command_cwd = Some(PathBuf::from(value(&flag)?)),
            "--command-cwd-identity" => {
                command_cwd_identity = Some(value(&flag)?.to_string_lossy().parse()?);
            }
            "--best-effort" => strictness = Strictness::BestEffort,
            "--require-mount-view" => mount_view = MountViewRequirement::Required,
            "--no-mount-view" => mount_view = MountViewRequirement::Disabled,
            "--writes" => writes = parse_writes(&value(&flag)?)?,
            "--die-with-parent" => parent_death = ParentDeath::Kill,
            "--tree-limits-in-cgroup" => tree_limits = TreeLimits::Cgroup,
            "--user-view" => user_view_json = Some(value(&flag)?),
            "--proxy-fd" => proxy_fd = Some(parse_proxy_fd(&value(&flag)?)?),
            "--writes-to" => writes_to = Some(absolute_dir(&flag, value(&flag)?)?),
            "--temporary-in" => temporary_in = Some(absolute_dir(&flag, value(&flag)?)?),
            "--caller" => match value(&flag)?.to_str() {
                Some("cordon") => caller = Caller::Cordon,
                _ => return Err(HelperError::Usage("--caller takes only `cordon`".into())),
            },
            // Codex passes this to ask its helper for a bubblewrap mount view; cordon's helper
            // builds its own mount view whenever the kernel allows, so it is accepted as is.
            "--use-bwrap-sandbox" => {}
            // Codex's bubblewrap mode: the inner stage that applies seccomp then execs, and the
            // retry without a fresh /proc. cordon's helper always applies seccomp itself and
            // mounts no /proc of its own, so both mean what they mean there already.
            "--apply-seccomp-then-exec" | "--no-proc" => {}
            // Newer Codex asks for its legacy Landlock-only pipeline with this; cordon's helper
            // has one pipeline, which enforces at least as much.
            "--use-legacy-landlock" => {}
            // Newer Codex passes the policy twice: the legacy JSON (`--sandbox-policy`, which
            // this helper enforces) and a split form. The split form is checked, not ignored:
            // what only it could say (deny entries) is refused below rather than dropped.
            "--file-system-sandbox-policy" => split_policies.file_system = Some(value(&flag)?),
            "--network-sandbox-policy" => split_policies.network = Some(value(&flag)?),
            // Codex's managed-proxy routing: its own bridge protocol, which cordon does not
            // speak. Refused by name rather than run with the network in some other state.
            "--allow-network-for-proxy" | "--proxy-route-spec" => {
                return Err(HelperError::Usage(format!(
                    "{flag} (Codex's managed-proxy routing) is not supported; cordon's own \
                     domain allow-list proxy is `network_domains` in the policy with \
                     --proxy-fd"
                )));
            }
            "--managed-network" => {
                return Err(HelperError::Usage(
                    "--managed-network (Codex's managed-proxy routing) is not supported; cordon's \
                     own domain allow-list proxy is `network_domains` in the policy with --proxy-fd"
                        .into(),
                ));
            }
            // Codex's helper would run the command in its caller's PID namespace, so it could
            // see and signal the caller's processes: not taken without being asked by name.
            "--inherit-pid-namespace" => {
                return Err(HelperError::Usage(
                    "--inherit-pid-namespace is refused: cordon's helper gives every command a PID \
                     namespace of its own (its own --no-pid-namespace turns that off, by that name)"
                        .into(),
                ));
            }
            // Flags of the inner stage of Codex's own helper, which only it passes to itself.
            "--verify-fd-mount" => {
                return Err(HelperError::Usage(format!(
                    "{flag} belongs to the inner stage of Codex's own helper; cordon's helper has \
                     no such stage"
                )));
            }
            other => return Err(HelperError::Usage(format!("unknown argument {other:?}"))),
        }
        if let (Some(_), Some(flag)) = (&request_json, request_flags.first()) {
            return Err(HelperError::Usage(format!(
                "--request holds the whole sandbox request; {flag} cannot be given with it"
            )));
        }
    }
    if !saw_separator {
        return Err(HelperError::Usage("missing `--` before the command".into()));
    }
    let command: Vec<OsString> = args.collect();
    if command.is_empty() {
        return Err(HelperError::Usage("no command after `--`".into()));
    }
    let user_view = match user_view_json {
        None => UserView::OwnEnvironment,
        Some(json) => {
            let json = json
                .to_str()
                .ok_or_else(|| HelperError::Usage("--user-view is not valid UTF-8".into()))?;
            let view = serde_json::from_str(json)
                .map_err(|e| HelperError::Usage(format!("--user-view: invalid JSON: {e}")))?;
            UserView::Given(Box::new(view))
        }
    };
    let request = match request_json {
        Some(json) => {
            let json = json
                .to_str()
                .ok_or_else(|| HelperError::Usage("--request is not valid UTF-8".into()))?;
            SandboxRequest::from_json(json)
                .map_err(|e| HelperError::Usage(format!("--request: {e}")))?
        }
        None => {
            let policy_cwd = policy_cwd.ok_or_else(|| {
                HelperError::Usage("--sandbox-policy-cwd (or --request) is required".into())
            })?;
            let policy = match (policy_json, profile_json) {
                (Some(_), Some(_)) => {
                    return Err(HelperError::Usage(
                        "--sandbox-policy and --permission-profile each give the whole policy; \
                         pass one"
                            .into(),
                    ));
                }
                (None, None) => {
                    return Err(HelperError::Usage(
                        "--permission-profile or --sandbox-policy (or --request) is required"
                            .into(),
                    ));
                }
                (None, Some(profile)) => {
                    if split_policies.file_system.is_some() || split_policies.network.is_some() {
                        return Err(HelperError::Usage(
                            "--file-system-sandbox-policy and --network-sandbox-policy go with \
                             --sandbox-policy, not --permission-profile"
                                .into(),
                        ));
                    }
                    let profile = profile.to_str().ok_or_else(|| {
                        HelperError::Usage("--permission-profile is not valid UTF-8".into())
                    })?;
                    if !policy_cwd.is_absolute() {
                        return Err(HelperError::Usage(format!(
                            "{} must be an absolute path",
                            policy_cwd.display()
                        )));
                    }
                    // `$TMPDIR` as the caller sees it: a `tmpdir` entry names it.
                    let tmpdir = match &user_view {
                        UserView::Given(view) => view.tmpdir.clone(),
                        UserView::OwnEnvironment => std::env::var_os("TMPDIR").map(PathBuf::from),
                    };
                    let policy = cordon_policies::policy_from_permission_profile(
                        profile,
                        &policy_cwd,
                        tmpdir.as_deref(),
                    )
                    .map_err(HelperError::Profile)?;
                    refuse_linked_read_entries(&policy, &policy_cwd, tmpdir.as_deref())?;
                    policy
                }
                (Some(policy_json), None) => {
                    let policy_json = policy_json.to_str().ok_or_else(|| {
                        HelperError::Usage("--sandbox-policy is not valid UTF-8".into())
                    })?;
                    let policy =
                        SandboxPolicy::from_json(policy_json).map_err(HelperError::Policy)?;
                    split_policies.check(&policy)?;
                    policy
                }
            };
            SandboxRequest {
                policy,
                policy_cwd,
                strictness,
                mount_view,
                limits: cordon_policies::Limits::default(),
                home_reads: cordon_policies::HomeReading::default(),
                writes,
            }
        }
    };
    for cwd in std::iter::once(&request.policy_cwd).chain(command_cwd.as_ref()) {
        if !cwd.is_absolute() {
            return Err(HelperError::Usage(format!("{} must be an absolute path", cwd.display())));
        }
    }
    if temporary_in.is_some() && writes_to.is_none() {
        return Err(HelperError::Usage("--temporary-in needs --writes-to".into()));
    }
    // The caller's own write layers, or the helper's transaction: never both.
    if writes_to.is_some() && !request.writes.is_direct() {
        return Err(HelperError::Usage(
            "--writes-to names the caller's own write layers; it cannot be given with a \
             transaction of the helper's (--writes or the request's `writes`)"
                .into(),
        ));
    }
    Ok(HelperArgs {
        request,
        command_cwd,
        command_cwd_identity,
        parent_death,
        user_view,
        proxy_fd,
        caller,
        tree_limits,
        writes_to,
        temporary_in,
        command,
        #[cfg(target_os = "linux")]
        walked: None,
        #[cfg(target_os = "linux")]
        transactions: None,
    })
}

/// `--writes MODE`: `transaction`, `auto` or `direct`.
fn parse_writes(value: &OsStr) -> Result<cordon_policies::WriteChoice, HelperError> {
    match value.to_str() {
        Some("transaction") => Ok(cordon_policies::WriteChoice::Transaction),
        Some("auto") => Ok(cordon_policies::WriteChoice::Auto),
        Some("direct") => Ok(cordon_policies::WriteChoice::Direct),
        _ => Err(HelperError::Usage("--writes takes `transaction`, `auto` or `direct`".into())),
    }
}

/// A read-only entry of a permission profile reached through a symbolic link inside a place the
/// command may write: the link's target would be kept read-only, but the command could replace
/// the link itself with a directory of its own under the name the profile meant to keep.
/// Refused (exit 125), as Codex's own helper refuses it.
fn refuse_linked_read_entries(
    policy: &SandboxPolicy,
    policy_cwd: &std::path::Path,
    tmpdir: Option<&std::path::Path>,
) -> Result<(), HelperError> {
    let SandboxPolicy::WorkspaceWrite(ww) = policy else { return Ok(()) };
    let mut writable: Vec<PathBuf> = ww.writable_roots.clone();
    writable.extend((!ww.exclude_policy_cwd).then(|| policy_cwd.to_path_buf()));
    writable.extend((!ww.exclude_slash_tmp).then(|| PathBuf::from("/tmp")));
    writable
        .extend(tmpdir.filter(|_| !ww.exclude_tmpdir_env_var).map(std::path::Path::to_path_buf));
    let entries = ww.protected_paths.iter().flatten().map(std::path::Path::new);
    for entry in entries.filter(|entry| entry.is_absolute()) {
        for place in writable.iter().filter(|place| entry.starts_with(place) && *place != entry) {
            let Ok(below) = entry.strip_prefix(place) else { continue };
            let mut path = place.clone();
            for component in below.components() {
                path.push(component);
                if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(HelperError::Usage(format!(
                        "--permission-profile: the read-only entry {} goes through the symbolic \
                         link {}, which the command could replace; name the place it leads to",
                        entry.display(),
                        path.display()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The flags that take no value.
const SWITCHES: &[&str] = &[
    "--best-effort",
    "--tree-limits-in-cgroup",
    "--require-mount-view",
    "--no-mount-view",
    "--die-with-parent",
    "--use-bwrap-sandbox",
    "--apply-seccomp-then-exec",
    "--no-proc",
    "--use-legacy-landlock",
];

/// The Codex-compatible flags that say what `--request` says, so cannot be given with it.
const LEGACY_REQUEST_FLAGS: &[&str] = &[
    "--writes",
    "--sandbox-policy-cwd",
    "--sandbox-policy",
    "--permission-profile",
    "--best-effort",
    "--require-mount-view",
    "--no-mount-view",
    "--file-system-sandbox-policy",
    "--network-sandbox-policy",
];

/// `--proxy-fd`'s value: a descriptor number above stderr (0-2 are the command's stdio).
fn parse_proxy_fd(value: &OsStr) -> Result<RawFd, HelperError> {
    value.to_str().and_then(|text| text.parse::<RawFd>().ok()).filter(|fd| *fd > 2).ok_or_else(
        || {
            HelperError::Usage(format!(
                "--proxy-fd takes a descriptor number above 2, not {}",
                value.to_string_lossy()
            ))
        },
    )
}

/// Codex's split policies (`--file-system-sandbox-policy`, `--network-sandbox-policy`), passed
/// by newer Codex next to the legacy `--sandbox-policy` that this helper enforces. They must not
/// ask for more than the legacy one can say: deny entries, or a network setting that disagrees,
/// are a usage error (exit 125), never silently dropped.
#[derive(Debug, Default)]
struct SplitPolicies {
    file_system: Option<OsString>,
    network: Option<OsString>,
}

impl SplitPolicies {
    fn check(&self, legacy: &SandboxPolicy) -> Result<(), HelperError> {
        let json = |value: &OsString, flag: &str| -> Result<serde_json::Value, HelperError> {
            let text = value
                .to_str()
                .ok_or_else(|| HelperError::Usage(format!("{flag} is not valid UTF-8")))?;
            serde_json::from_str(text)
                .map_err(|e| HelperError::Usage(format!("{flag}: invalid JSON: {e}")))
        };
        if let Some(value) = &self.file_system {
            let policy = json(value, "--file-system-sandbox-policy")?;
            let entries = policy.get("entries").and_then(|e| e.as_array());
            let denies = entries.into_iter().flatten().any(|entry| {
                matches!(entry.get("access").and_then(|a| a.as_str()), Some("deny" | "none"))
            });
            if denies {
                return Err(HelperError::Usage(
                    "--file-system-sandbox-policy has deny entries, which this helper cannot \
                     enforce from --sandbox-policy; use hidden_paths in the policy instead"
                        .into(),
                ));
            }
        }
        if let Some(value) = &self.network {
            let network = json(value, "--network-sandbox-policy")?;
            let enabled = match network.as_str() {
                Some("enabled") => true,
                Some("restricted") => false,
                _ => {
                    return Err(HelperError::Usage(format!(
                        "--network-sandbox-policy: expected \"enabled\" or \"restricted\", got \
                         {network}"
                    )));
                }
            };
            if enabled != legacy.has_network_access() {
                return Err(HelperError::Usage(
                    "--network-sandbox-policy and --sandbox-policy disagree about the network"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// Builds the helper's argv (after `argv[0]`) for a command: what the orchestrator and
/// `cordon sandbox linux` pass to `codex-linux-sandbox`.
pub fn helper_argv(invocation: &HelperArgs) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["--request".into(), invocation.request.to_json().into()];
    if let Some(cwd) = &invocation.command_cwd {
        argv.push("--command-cwd".into());
        argv.push(cwd.clone().into());
    }
    if let Some(identity) = invocation.command_cwd_identity {
        argv.push("--command-cwd-identity".into());
        argv.push(identity.to_string().into());
    }
    match invocation.parent_death {
        ParentDeath::Ignore => {}
        ParentDeath::Kill => argv.push("--die-with-parent".into()),
    }
    match &invocation.user_view {
        UserView::OwnEnvironment => {}
        UserView::Given(view) => {
            argv.push("--user-view".into());
            // Fails only for a path that is not UTF-8; the empty value then makes the helper
            // refuse (exit 125) rather than run with its own, possibly filtered, environment.
            argv.push(serde_json::to_string(view).unwrap_or_default().into());
        }
    }
    if let Some(fd) = invocation.proxy_fd {
        argv.push("--proxy-fd".into());
        argv.push(fd.to_string().into());
    }
    match invocation.caller {
        Caller::Direct => {}
        Caller::Cordon => argv.extend(["--caller".into(), "cordon".into()]),
    }
    match invocation.tree_limits {
        TreeLimits::None => {}
        TreeLimits::Cgroup => argv.push("--tree-limits-in-cgroup".into()),
    }
    if let Some(dir) = &invocation.writes_to {
        argv.push("--writes-to".into());
        argv.push(dir.clone().into());
    }
    if let Some(dir) = &invocation.temporary_in {
        argv.push("--temporary-in".into());
        argv.push(dir.clone().into());
    }
    argv.push("--".into());
    argv.extend(invocation.command.iter().cloned());
    argv
}

/// A directory flag's value, which must be an absolute path.
fn absolute_dir(flag: &str, value: OsString) -> Result<PathBuf, HelperError> {
    let dir = PathBuf::from(value);
    if !dir.is_absolute() {
        return Err(HelperError::Usage(format!(
            "{flag} {}: must be an absolute path",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Whether `argv0` names the helper personality (its file name is `codex-linux-sandbox`).
pub fn is_helper_arg0(argv0: &OsStr) -> bool {
    std::path::Path::new(argv0).file_name().is_some_and(|name| name == HELPER_ARG0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn codex_style_arguments_parse_and_round_trip() {
        let parsed = parse_helper_args(os(&[
            "--sandbox-policy-cwd",
            "/w",
            "--sandbox-policy={\"type\":\"read-only\"}",
            "--command-cwd",
            "/w/sub",
            "--best-effort",
            "--die-with-parent",
            "--user-view",
            r#"{"home":"/home/u","tmpdir":"/var/tmp/u","uid":1000,"cordon_home":"/home/u/.cordon"}"#,
            "--",
            "ls",
            "--",
            "-l",
        ]))
        .unwrap();
        let UserView::Given(view) = &parsed.user_view else { panic!("no user view") };
        assert_eq!(view.tmpdir, Some(PathBuf::from("/var/tmp/u")));
        assert_eq!(view.runtime_dir, None);
        assert_eq!(parsed.command, os(&["ls", "--", "-l"]));
        assert_eq!(parsed.command_cwd, Some(PathBuf::from("/w/sub")));
        assert_eq!(parsed.request.strictness, Strictness::BestEffort);
        assert_eq!(parsed.parent_death, ParentDeath::Kill);
        assert_eq!(parsed.proxy_fd, None);
        assert_eq!(parse_helper_args(helper_argv(&parsed)).unwrap(), parsed);
        let with_proxy = HelperArgs { proxy_fd: Some(7), ..parsed.clone() };
        let argv = helper_argv(&with_proxy);
        assert!(argv.windows(2).any(|pair| pair == ["--proxy-fd", "7"]), "{argv:?}");
        assert_eq!(parse_helper_args(argv).unwrap(), with_proxy);
        let own = HelperArgs { user_view: UserView::OwnEnvironment, ..parsed };
        assert_eq!(parse_helper_args(helper_argv(&own)).unwrap(), own);
        let from_cordon = HelperArgs { caller: Caller::Cordon, ..own };
        let argv = helper_argv(&from_cordon);
        assert_eq!(Caller::of(&argv), Caller::Cordon);
        assert_eq!(parse_helper_args(argv).unwrap(), from_cordon);
    }

    #[test]
    fn the_request_travels_whole_and_excludes_the_flags_it_replaces() {
        let request = SandboxRequest {
            policy: SandboxPolicy::from_json(r#"{"type":"read-only"}"#).unwrap(),
            policy_cwd: PathBuf::from("/w"),
            strictness: Strictness::BestEffort,
            mount_view: MountViewRequirement::Disabled,
            limits: cordon_policies::Limits { open_files: Some(64), ..Default::default() },
            home_reads: cordon_policies::HomeReading::Everything,
            writes: cordon_policies::WriteChoice::Direct,
        };
        let json = request.to_json();
        let parsed = parse_helper_args(os(&["--request", &json, "--", "ls"])).unwrap();
        assert_eq!(parsed.request, request);
        let argv = helper_argv(&parsed);
        assert_eq!(argv[..2], os(&["--request", &json]));
        for flag in LEGACY_REQUEST_FLAGS {
            let error = parse_helper_args(os(&["--request", &json, flag, "x", "--", "ls"]))
                .unwrap_err()
                .to_string();
            assert!(error.contains(flag), "{flag}: {error}");
        }
        let unknown = r#"{"policy":{"type":"read-only"},"policy_cwd":"/w","cpu":1}"#;
        let error =
            parse_helper_args(os(&["--request", unknown, "--", "ls"])).unwrap_err().to_string();
        assert!(error.contains("--request") && error.contains("cpu"), "{error}");
        let relative = r#"{"policy":{"type":"read-only"},"policy_cwd":"w"}"#;
        assert!(parse_helper_args(os(&["--request", relative, "--", "ls"])).is_err());
    }

    #[test]
    fn an_inline_value_keeps_its_bytes_and_a_switch_takes_none() {
        use std::os::unix::ffi::OsStringExt;
        let mut inline = b"--sandbox-policy-cwd=/w/".to_vec();
        inline.push(0xff);
        let policy = r#"--sandbox-policy={"type":"read-only"}"#;
        let parsed = parse_helper_args(vec![
            OsString::from_vec(inline),
            OsString::from(policy),
            OsString::from("--"),
            OsString::from("ls"),
        ])
        .unwrap();
        assert_eq!(parsed.request.policy_cwd.as_os_str().as_bytes(), b"/w/\xff");
        for switch in SWITCHES {
            let error = parse_helper_args(os(&[&format!("{switch}=false"), policy, "--", "ls"]))
                .unwrap_err()
                .to_string();
            assert!(error.contains("takes no value"), "{switch}: {error}");
        }
    }

    #[test]
    fn the_caller_names_the_messages_and_only_before_the_separator() {
        assert_eq!(Caller::of(&os(&["--caller", "cordon", "--", "ls"])), Caller::Cordon);
        assert_eq!(Caller::of(&os(&["--caller=cordon", "--", "ls"])), Caller::Cordon);
        assert_eq!(Caller::of(&os(&["--", "--caller", "cordon"])), Caller::Direct);
        assert_eq!(Caller::of(&os(&["--caller", "codex", "--", "ls"])), Caller::Direct);
        assert_eq!(Caller::Direct.message_prefix(), "codex-linux-sandbox: ");
        assert_eq!(Caller::Cordon.message_prefix(), "cordon: sandbox: ");
    }

    #[test]
    fn malformed_invocations_are_usage_errors() {
        let policy = r#"{"type":"read-only"}"#;
        for bad in [
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", policy, "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", policy, "--"]),
            os(&["--sandbox-policy-cwd", "rel", "--sandbox-policy", policy, "--", "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", "{", "--", "ls"]),
            os(&["--sandbox-policy", policy, "--", "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--", "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", policy, "--what", "--", "ls"]),
            os(&["--sandbox-policy-cwd"]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--proxy-fd",
                "2",
                "--",
                "ls",
            ]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--proxy-fd=x",
                "--",
                "ls",
            ]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--proxy-fd",
                "-1",
                "--",
                "ls",
            ]),
            // The path-based hand-over is gone: a socket path is not a descriptor.
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--proxy-socket",
                "/tmp/p.sock",
                "--",
                "ls",
            ]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--user-view",
                r#"{"HOME":"/h"}"#,
                "--",
                "ls",
            ]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--user-view=",
                "--",
                "ls",
            ]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--command-cwd",
                "x",
                "--",
                "ls",
            ]),
        ] {
            assert!(parse_helper_args(bad.clone()).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn newer_codex_flags_are_accepted_checked_or_refused_by_name() {
        let ww = r#"{"type":"workspace-write"}"#;
        let base = |extra: &[&str]| {
            let mut v = os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", ww]);
            v.extend(os(extra));
            v.extend(os(&["--", "true"]));
            v
        };
        let fs_ok = r#"{"kind":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]}"#;
        let fs_deny = r#"{"kind":"restricted","entries":[{"path":{"type":"path","path":"/home/u/.ssh"},"access":"deny"}]}"#;
        for accepted in [
            base(&["--use-legacy-landlock"]),
            base(&[
                "--file-system-sandbox-policy",
                fs_ok,
                "--network-sandbox-policy",
                "\"restricted\"",
            ]),
        ] {
            assert!(parse_helper_args(accepted.clone()).is_ok(), "refused {accepted:?}");
        }
        for (refused, says) in [
            (base(&["--file-system-sandbox-policy", fs_deny]), "deny entries"),
            (base(&["--network-sandbox-policy", "\"enabled\""]), "disagree"),
            (base(&["--network-sandbox-policy", "\"sometimes\""]), "expected"),
            (base(&["--allow-network-for-proxy"]), "managed-proxy"),
            (base(&["--proxy-route-spec", "x"]), "managed-proxy"),
        ] {
            let error = parse_helper_args(refused.clone()).unwrap_err().to_string();
            assert!(error.contains(says), "{refused:?}: {error}");
        }
    }

    #[test]
    fn codex_0_169s_permission_profile_is_read_and_what_it_cannot_say_is_refused() {
        let profile = r#"{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},{"path":{"type":"path","path":"/w"},"access":"write"},{"path":{"type":"path","path":"/w/.git"},"access":"read","missing_path_behavior":"skip"}]},"network":"restricted"}"#;
        let call = |extra: &[&str]| {
            let mut v = os(&["--sandbox-policy-cwd", "/w", "--command-cwd", "/w/sub"]);
            v.extend(os(extra));
            v.extend(os(&["--", "true"]));
            v
        };
        let args = parse_helper_args(call(&["--permission-profile", profile])).unwrap();
        let SandboxPolicy::WorkspaceWrite(ww) = &args.request.policy else {
            panic!("{:?}", args.request.policy)
        };
        assert!(ww.protected_paths.as_ref().unwrap().iter().any(|p| p == "/w/.git"));
        assert_eq!(args.command_cwd, Some(PathBuf::from("/w/sub")));
        let with_switches = call(&[
            "--permission-profile",
            profile,
            "--use-legacy-landlock",
            "--no-proc",
            "--apply-seccomp-then-exec",
        ]);
        assert!(parse_helper_args(with_switches).is_ok());
        for (refused, says) in [
            (call(&["--permission-profile", profile, "--managed-network", "{}"]), "managed"),
            (call(&["--permission-profile", profile, "--inherit-pid-namespace"]), "PID namespace"),
            (call(&["--permission-profile", profile, "--verify-fd-mount", "3:/x"]), "inner stage"),
            (call(&["--permission-profile", profile, "--sandbox-policy", "{}"]), "pass one"),
            (call(&["--permission-profile", "{\"type\":\"managed\"}"]), "missing field"),
            (call(&["--permission-profile", "{}"]), "without \"type\""),
        ] {
            let error = parse_helper_args(refused.clone()).unwrap_err().to_string();
            assert!(error.contains(says), "{refused:?}: {error}");
        }
        let request = os(&["--request", "{}", "--permission-profile", profile, "--", "true"]);
        assert!(parse_helper_args(request).is_err());
    }

    #[test]
    fn arg0_matches_by_file_name() {
        assert!(is_helper_arg0(OsStr::new("codex-linux-sandbox")));
        assert!(is_helper_arg0(OsStr::new("/usr/local/bin/codex-linux-sandbox")));
        assert!(!is_helper_arg0(OsStr::new("cordon")));
        assert!(!is_helper_arg0(OsStr::new("codex-linux-sandbox-x")));
    }
}
