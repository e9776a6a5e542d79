//! What the sandbox enforced, and whether that is enough for the policy.
//!
//! The helper fills an [`Enforcement`] from what each step actually achieved; `doctor` fills
//! one from probes. [`gaps`] turns either into the list of protections that are missing, each
//! marked required (fail closed: exit 125 unless `--best-effort`) or not.

use serde::Serialize;

pub use crate::unix_sockets::UnixSockets;

/// What took effect (or, for `doctor`, what would).
/// Why a command runs without the mount view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoMountView {
    #[error("turned off (--no-mount-view, or mount_view \"off\" in the request)")]
    TurnedOff,
    #[error("cannot create a user and mount namespace: {}", std::io::Error::from_raw_os_error(*.0))]
    Unshare(i32),
    #[error("cannot write {file}: {}", std::io::Error::from_raw_os_error(*.errno))]
    MapIds { file: &'static str, errno: i32 },
    #[error("the kernel refuses a mount namespace to this user")]
    Refused,
    #[error("a mount namespace can be created but not set up")]
    NotSetUp,
    #[error("probe failed: this process has more than one thread, so nothing could be forked")]
    ProbeThreaded,
    #[error("probe failed: {}", std::io::Error::from_raw_os_error(*.0))]
    ProbeFailed(i32),
}

/// As its message, so reports read as before.
impl serde::Serialize for NoMountView {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Enforcement {
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: i32,
    /// Whether the Landlock ruleset was enforced at all.
    pub landlock_enforced: bool,
    /// Whether the mount view is in place; otherwise why not.
    pub mount_view: Result<(), NoMountView>,
    /// Whether the mount view was demanded (`--require-mount-view`).
    pub mount_view_required: bool,
    /// Whether the seccomp filter is installed.
    pub seccomp: bool,
    /// Whether `no_new_privs` is set.
    pub no_new_privs: bool,
    /// Whether the bounding set was dropped and the securebits locked.
    pub bounding_set_dropped: bool,
    /// What keeps the command from UNIX socket files on the host.
    pub unix_sockets: UnixSockets,
    /// cordon's own state directory, when it lies inside a writable root: only the mount view
    /// keeps it read-only, so without the view the sandbox is not set up.
    pub cordon_home_inside_root: Option<std::path::PathBuf>,
    /// cordon's own executables (and the directories of links to them) inside a writable root:
    /// only the mount view keeps a command from replacing them.
    pub cordon_executables_inside_roots: Vec<std::path::PathBuf>,
    /// How the command's processes are kept from outliving it.
    pub containment: Containment,
}

/// How the command's processes are kept from outliving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Containment {
    /// PID + IPC namespaces with a private /proc: everything dies with the command, host
    /// processes and System V IPC objects are out of reach.
    #[serde(rename = "pid namespace")]
    PidNamespace,
    /// A child subreaper kills the command's descendants when it exits; host processes of the
    /// same user and the host's System V IPC stay reachable.
    #[serde(rename = "subreaper")]
    Subreaper,
}

impl Containment {
    /// The name `doctor` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Containment::PidNamespace => "pid namespace",
            Containment::Subreaper => "subreaper",
        }
    }
}

/// A protection that is not in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// What a sandboxed command can do because of it.
    pub what: String,
    /// Whether the policy cannot be honoured without it.
    pub required: bool,
}

fn gap(what: impl Into<String>, required: bool) -> Gap {
    Gap { what: what.into(), required }
}

/// The missing protections, required ones first.
pub fn gaps(e: &Enforcement) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let mount_view = e.mount_view.is_ok();
    if !e.landlock_enforced {
        gaps.push(gap(
            "filesystem write restrictions (Landlock is not available in this kernel)",
            true,
        ));
    } else {
        if e.landlock_abi < 3 && !mount_view {
            gaps.push(gap(
                "truncating files outside the writable roots (needs Landlock ABI 3 or the mount view)",
                true,
            ));
        }
        if e.landlock_abi < 6 {
            gaps.push(gap(
                "signals and abstract UNIX sockets to processes outside the sandbox (needs Landlock ABI 6)",
                false,
            ));
        }
        match e.unix_sockets {
            UnixSockets::Reachable if e.landlock_abi < 9 => gaps.push(gap(
                "with the network on, connect() to UNIX socket files outside the writable roots \
                 (needs Landlock ABI 9; the mount view hides the container-engine sockets)",
                false,
            )),
            UnixSockets::ReachableDespiteDomainList => gaps.push(gap(
                "with a domain list, connect() to every UNIX socket file on the host that is not \
                 hidden, a way around the proxy (--allow-unix-socket reaches only the named ones \
                 with Landlock ABI 9)",
                false,
            )),
            UnixSockets::Reachable
            | UnixSockets::NoConnect
            | UnixSockets::NoUnixSocket
            | UnixSockets::OnlyAllowed => {}
        }
    }
    if !e.seccomp {
        gaps.push(gap("the seccomp filter (network, ptrace, namespaces, TIOCSTI)", true));
    }
    if !e.no_new_privs {
        gaps.push(gap("no_new_privs (setuid programs could gain privileges)", true));
    }
    if let (Err(reason), Some(home)) = (&e.mount_view, &e.cordon_home_inside_root) {
        gaps.push(gap(
            format!(
                "keeping cordon's own state ({}) read-only: it lies inside a writable root and \
                 only the mount view ({reason}) protects it; narrow the writable roots or set \
                 CORDON_HOME outside them",
                home.display()
            ),
            true,
        ));
    }
    if let Err(reason) = &e.mount_view {
        if !e.cordon_executables_inside_roots.is_empty() {
            let list: Vec<String> =
                e.cordon_executables_inside_roots.iter().map(|p| p.display().to_string()).collect();
            gaps.push(gap(
                format!(
                    "keeping cordon's own executable ({}) from being replaced: it lies inside a \
                     writable root and only the mount view ({reason}) protects it; install cordon \
                     outside the writable roots or narrow them",
                    list.join(", ")
                ),
                true,
            ));
        }
        gaps.push(gap(
            format!(
                "the mount view ({reason}): chmod/chown/utimes/xattr outside the writable roots \
                 and protected paths (.git/hooks, .git/config, ...) are not enforced, and hidden \
                 paths inside the writable roots are readable (Landlock keeps the others \
                 unreadable, their names visible); device nodes outside /dev (a second devtmpfs, \
                 a bind of /dev/pts) open, and a terminal the command makes cannot be opened"
            ),
            e.mount_view_required,
        ));
    }
    if e.containment == Containment::Subreaper {
        gaps.push(gap(
            "PID and IPC namespaces (they need the mount view; a subreaper kills what the command \
             leaves behind instead): host processes of the same user can be reniced or given \
             resource limits, the host's System V IPC is shared, and a setsid() descendant can \
             outlive a cordon killed with SIGKILL",
            false,
        ));
    }
    if !e.bounding_set_dropped {
        gaps.push(gap(
            "the capability bounding set (no CAP_SETPCAP; no_new_privs still blocks gaining capabilities)",
            false,
        ));
    }
    gaps.sort_by_key(|g| !g.required);
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn full() -> Enforcement {
        Enforcement {
            landlock_abi: 9,
            landlock_enforced: true,
            mount_view: Ok(()),
            mount_view_required: false,
            seccomp: true,
            no_new_privs: true,
            bounding_set_dropped: true,
            unix_sockets: UnixSockets::NoConnect,
            cordon_home_inside_root: None,
            cordon_executables_inside_roots: Vec::new(),
            containment: Containment::PidNamespace,
        }
    }

    #[test]
    fn cordons_executable_inside_a_root_requires_the_mount_view() {
        let inside =
            Enforcement { cordon_executables_inside_roots: vec!["/w/bin/cordon".into()], ..full() };
        assert!(gaps(&inside).is_empty());
        let without_view = Enforcement { mount_view: Err(NoMountView::Refused), ..inside };
        assert!(gaps(&without_view).iter().any(|g| g.required && g.what.contains("/w/bin/cordon")));
    }

    #[test]
    fn cordon_home_inside_a_root_requires_the_mount_view() {
        let inside = Enforcement { cordon_home_inside_root: Some("/w/.cordon".into()), ..full() };
        assert!(gaps(&inside).is_empty());
        let without_view = Enforcement { mount_view: Err(NoMountView::Refused), ..inside };
        assert!(gaps(&without_view).iter().any(|g| g.required && g.what.contains("/w/.cordon")));
    }

    #[test]
    fn a_full_sandbox_has_no_gaps() {
        assert_eq!(gaps(&full()), Vec::new());
    }

    #[test]
    fn missing_landlock_seccomp_or_nnp_is_required() {
        for e in [
            Enforcement { landlock_enforced: false, landlock_abi: 0, ..full() },
            Enforcement { seccomp: false, ..full() },
            Enforcement { no_new_privs: false, ..full() },
        ] {
            assert!(gaps(&e).iter().any(|g| g.required), "{e:?}");
        }
    }

    #[test]
    fn old_landlock_needs_the_mount_view_for_truncate() {
        let old = Enforcement { landlock_abi: 2, mount_view: Err(NoMountView::Refused), ..full() };
        assert!(gaps(&old).iter().any(|g| g.required && g.what.contains("truncating")));
        let old_with_view = Enforcement { landlock_abi: 2, ..full() };
        assert!(gaps(&old_with_view).iter().all(|g| !g.required));
    }

    #[test]
    fn the_mount_view_is_required_only_when_asked() {
        let without = Enforcement { mount_view: Err(NoMountView::Refused), ..full() };
        assert!(gaps(&without).iter().all(|g| !g.required));
        let demanded = Enforcement { mount_view_required: true, ..without };
        assert!(gaps(&demanded).iter().any(|g| g.required));
    }
}
