//! The Landlock ruleset: built as a value from the resolved policy, installed in one call.
//!
//! Read and execute everywhere but on hidden paths ([`crate::hidden_reads`]: granted by
//! omission, entry by entry along the way to each, so that a hidden file replaced or created on
//! the host during the run stays unreadable); full write access under each writable root except
//! making block or character devices; write (with truncate) on `/dev/null`; read, write and device ioctls on
//! the terminal devices so `tcgetattr`/`tcsetattr`/window-size ioctls and new PTYs keep working.
//! Rights are requested at the newest ABI this crate knows and negotiated down (best effort):
//! the kernel ABI decides which of them took effect, and [`crate::report`] decides whether that
//! is enough for the policy.

use std::io::IsTerminal;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use cordon_policies::ResolvedPolicy;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::error::HelperError;
use crate::hidden_reads::ReadPlan;

/// The newest Landlock ABI whose rights cordon requests.
const REQUESTED_ABI: ABI = ABI::V9;

/// Terminal devices: the opening of new PTYs, and (for a command handed a terminal) its
/// controlling terminal.
const TERMINAL_DEVICES: &[&str] = &["/dev/ptmx"];

/// Which devpts instance `/dev/pts` shows the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevPts {
    /// The sandbox's own: every terminal there is one the command made, and all are granted.
    Private,
    /// The host's, which holds the user's other terminals: none is granted by name (the
    /// terminals handed over are, by their own inodes), so a terminal the command makes cannot
    /// be opened by name either.
    Host,
}

/// The host's `/dev`, where the command sees it with its devices usable: its file system, one
/// superblock however often it is mounted (`devtmpfs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostDev {
    device: u64,
}

impl HostDev {
    /// The file system `/dev` is on; `None` when it cannot be read.
    pub fn of_dev() -> Option<HostDev> {
        nix::sys::stat::stat("/dev").ok().map(|st| HostDev { device: st.st_dev })
    }
}

/// A ruleset as a value: what is handled and which paths get which rights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockPlan {
    /// `(path, rights beneath it, how its last component is opened)`, in order.
    pub rules: Vec<(PathBuf, BitFlags<AccessFs>, LastLink)>,
    /// Whether TCP bind/connect are handled (and so denied): network off.
    pub deny_tcp: bool,
    /// Set where the host's `/dev` stays: a rule outside `/dev` whose place lies on that file
    /// system (a second mount of it, a bind of `/dev`) is dropped, as it would grant every
    /// device node of `/dev` by inode — those read rights leave out.
    pub host_dev: Option<HostDev>,
}

/// Whether a rule's path may end in a symbolic link that is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLink {
    /// Followed (`/proc/self/fd/1` is one).
    Followed,
    /// Not followed, and then the rule grants nothing: a directory entry granted by omission
    /// that became a link since it was listed would grant wherever it leads.
    Refused,
}

/// Builds the ruleset for `policy`; `extra_writable` are directories the mount view made
/// private to the sandbox (e.g. a fresh `/dev/shm`); `reads` says where read is granted by
/// omission (empty: on `/` as a whole); `dev_pts` which terminals `/dev/pts` holds.
pub fn plan(
    policy: &ResolvedPolicy,
    extra_writable: &[PathBuf],
    reads: &ReadPlan,
    dev_pts: DevPts,
) -> LandlockPlan {
    let read = AccessFs::from_read(REQUESTED_ABI);
    let mut everywhere = read;
    let mut root_rights =
        AccessFs::from_all(REQUESTED_ABI) & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let domain_list = policy.network_domains.is_some();
    if policy.network_access && !domain_list {
        // Connecting to UNIX sockets anywhere (ABI 9) only when the network is on.
        everywhere |= AccessFs::ResolveUnix;
    }
    if domain_list {
        // With a domain list a socket file anywhere — a writable root such as /tmp included,
        // where a host process may have put one — would be a way around the proxy: only the
        // allowed sockets can be connected to (from ABI 9; below it seccomp refuses UNIX
        // sockets, see `report::UnixSockets`).
        root_rights &= !AccessFs::ResolveUnix;
    }
    let file_write = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;

    use LastLink::{Followed, Refused};
    let mut rules = Vec::new();
    if reads.is_empty() {
        rules.push((PathBuf::from("/"), everywhere, Followed));
    } else {
        // Listing along the way (a directory's own entries are not read through it), and what
        // `/` would have granted on every other entry; the hidden places get nothing.
        rules.extend(
            reads.ancestors.iter().map(|dir| (dir.clone(), AccessFs::ReadDir.into(), Refused)),
        );
        rules.extend(
            reads
                .siblings
                .iter()
                .chain(&reads.granted)
                .map(|entry| (entry.clone(), everywhere, Refused)),
        );
    }
    rules.extend(
        policy
            .writable_roots
            .iter()
            .chain(extra_writable)
            .map(|root| (root.clone(), root_rights, Followed)),
    );
    if policy.network_access {
        // With a domain list, only these can be connected to; with the network on, these also
        // when they sit in a hidden directory, which grants nothing by omission.
        rules.extend(
            policy
                .allowed_sockets
                .iter()
                .map(|socket| (socket.clone(), AccessFs::ResolveUnix.into(), Followed)),
        );
    }
    rules.push((PathBuf::from("/dev/null"), file_write, Followed));
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let private_pts = match dev_pts {
        DevPts::Private => Some("/dev/pts"),
        DevPts::Host => None,
    };
    // `/dev/tty` is this process's controlling terminal: only when the command was handed
    // that terminal itself may it reopen it by that name. Handed none, or another terminal (a
    // harness's pty on stdin while the user's terminal stays the session's), the caller's
    // controlling terminal is not its to read or write.
    let handed = [
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    ];
    let controlling = crate::sys::controlling_terminal_on_stdio().map(|_| "/dev/tty");
    rules.extend(
        TERMINAL_DEVICES
            .iter()
            .copied()
            .chain(private_pts)
            .chain(controlling)
            .map(|dev| (PathBuf::from(dev), file_write | AccessFs::IoctlDev, Followed)),
    );
    // The terminals the command was handed live in the host's devpts instance, which the
    // sandbox's own `/dev` does not show: reopened by name (`/dev/tty`, `/dev/stdout`, the name
    // `tty` prints) they are granted by their own inode, and no other terminal is.
    for (fd, is_terminal) in handed.into_iter().enumerate() {
        if is_terminal {
            let link = PathBuf::from(format!("/proc/self/fd/{fd}"));
            rules.push((link, file_write | AccessFs::IoctlDev, Followed));
        }
    }
    // Reopening stdout or stderr by name (`echo x > /dev/stderr`, `tee /dev/stdout`) goes
    // through /proc/self/fd to the file the caller redirected it to, which may lie outside every
    // root. When the descriptor is open for writing the command can write that file anyway, so
    // the same file is allowed by name too (a descriptor open read-only grants nothing).
    let stdio = [("/proc/self/fd/1", stdout.as_fd()), ("/proc/self/fd/2", stderr.as_fd())];
    for (link, fd) in stdio {
        if writable_descriptor(fd) && std::fs::metadata(link).is_ok_and(|m| m.is_file()) {
            rules.push((PathBuf::from(link), file_write, Followed));
        }
    }
    LandlockPlan { rules, deny_tcp: !policy.network_access, host_dev: None }
}

/// What Landlock enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockEnforcement {
    /// Every requested right the kernel knows is enforced.
    Enforced,
    /// The kernel has no Landlock (or it is disabled): nothing is enforced.
    NotEnforced,
}

/// The descriptors of the rules' paths, still open after [`install`]: keep them until the
/// command has started, then drop them.
///
/// Closing a few hundred descriptors costs a system call and the release of a file each.
/// Kept open, the command's `execve` only lets go of its copies (the files stay held here), and
/// the release happens here while the command runs, not before it starts.
#[derive(Debug, Default)]
pub struct RuleTargets(Vec<OwnedFd>);

/// Installs `plan` on the calling thread (and sets `no_new_privs`, which Landlock needs);
/// returns what was enforced and the rule paths' descriptors ([`RuleTargets`]).
pub fn install(plan: &LandlockPlan) -> Result<(LandlockEnforcement, RuleTargets), HelperError> {
    let handled = AccessFs::from_all(REQUESTED_ABI);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)?
        .scope(Scope::from_all(REQUESTED_ABI))?;
    if plan.deny_tcp {
        // Belt and braces: seccomp already refuses INET sockets with the network off.
        ruleset = ruleset.handle_access(AccessNet::from_all(REQUESTED_ABI))?;
    }
    let mut created = ruleset.create()?;
    let mut kept = RuleTargets(Vec::new());
    let room = keepable_descriptors();
    for (path, rights, last_link) in &plan.rules {
        // A path that does not exist (no /dev/pts in some containers, a root removed since the
        // policy was resolved) grants nothing; skipping it only ever denies more.
        let Ok(fd) = open_path(path, *last_link) else { continue };
        if let Some(HostDev { device }) = plan.host_dev
            && !path.starts_with("/dev")
            && *rights != AccessFs::ReadDir
            && nix::sys::stat::fstat(&fd).is_ok_and(|st| st.st_dev == device)
        {
            continue;
        }
        // Rights beneath a file are narrowed to a file's by the crate, which looks at what
        // the descriptor is. A symbolic link (an entry replaced since it was listed, opened
        // without following) is a file to it: the rule then covers the link's own inode, and
        // whatever is opened through the link is judged where it leads.
        created = created.add_rule(PathBeneath::new(&fd, *rights))?;
        if kept.0.len() < room {
            kept.0.push(fd);
        }
    }
    let status = created.restrict_self()?;
    let enforcement = match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => {
            LandlockEnforcement::Enforced
        }
        RulesetStatus::NotEnforced => LandlockEnforcement::NotEnforced,
    };
    Ok((enforcement, kept))
}

/// How many rule descriptors may stay open: half of what this process may open, so that a low
/// `RLIMIT_NOFILE` costs the early release, never a rule.
fn keepable_descriptors() -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    getrlimit(Resource::RLIMIT_NOFILE)
        .map_or(0, |(soft, _)| usize::try_from(soft / 2).unwrap_or(usize::MAX))
}

fn writable_descriptor(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    fcntl(fd, FcntlArg::F_GETFL).is_ok_and(|flags| {
        let mode = OFlag::from_bits_truncate(flags) & OFlag::O_ACCMODE;
        mode == OFlag::O_WRONLY || mode == OFlag::O_RDWR
    })
}

/// Opens a directory to name it in a rule later ([`add_reads_beneath`]) by what it is now:
/// `O_PATH`, close-on-exec, never through a final link.
pub fn open_place(path: &Path) -> nix::Result<OwnedFd> {
    open_path(path, LastLink::Refused)
}

/// Adds read rights beneath `place`, a directory opened with [`open_place`] while it was
/// still reachable by its name (through `/proc/self/fd`, which the rule follows to it).
pub fn add_reads_beneath(plan: &mut LandlockPlan, place: &OwnedFd) {
    use std::os::fd::AsRawFd;
    let link = PathBuf::from(format!("/proc/self/fd/{}", place.as_raw_fd()));
    plan.rules.push((link, AccessFs::from_read(REQUESTED_ABI), LastLink::Followed));
}

/// Opens `path` with `O_PATH`, as the rule needs: nothing is opened for real, so a FIFO does
/// not block, a device is not started (`/dev/ptmx` would allocate a terminal) and `/dev/tty`
/// resolves without a controlling terminal. Not `landlock::PathFd`: it asks for `O_PATH`
/// through `std::fs::OpenOptions::custom_flags`, which on musl strips it (musl counts
/// `O_PATH` in `O_ACCMODE`), so a static musl build would open every path for reading.
fn open_path(path: &Path, last_link: LastLink) -> nix::Result<OwnedFd> {
    use nix::fcntl::OFlag;
    let flags = match last_link {
        LastLink::Followed => OFlag::O_PATH | OFlag::O_CLOEXEC,
        LastLink::Refused => OFlag::O_PATH | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
    };
    nix::fcntl::open(path, flags, nix::sys::stat::Mode::empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn policy(roots: &[&str], network_access: bool) -> ResolvedPolicy {
        ResolvedPolicy {
            network_domains: None,
            writable_roots: roots.iter().map(PathBuf::from).collect(),
            network_access,
            protected_paths: Vec::new(),
            hidden_paths: Vec::new(),
            allowed_sockets: Vec::new(),
        }
    }

    #[test]
    fn read_only_grants_no_write_outside_dev_null_and_terminals() {
        let plan = plan(&policy(&[], false), &[], &ReadPlan::default(), DevPts::Private);
        assert!(plan.deny_tcp);
        for (path, rights, _) in &plan.rules {
            let writes = *rights & AccessFs::from_write(REQUESTED_ABI);
            if path == Path::new("/") {
                assert_eq!(writes, BitFlags::EMPTY);
            } else {
                // The test runner's own stdout/stderr, when cargo's output goes to a file, is
                // granted by name (see `plan`): it is the file behind fd 1 or 2, nothing else.
                let stdio = ["/proc/self/fd/1", "/proc/self/fd/2"].map(Path::new);
                assert!(
                    path.starts_with("/dev") || stdio.contains(&path.as_path()),
                    "{path:?} is writable"
                );
            }
        }
    }

    #[test]
    fn writable_roots_never_grant_device_nodes() {
        let plan = plan(&policy(&["/w"], true), &[], &ReadPlan::default(), DevPts::Private);
        assert!(!plan.deny_tcp);
        let (_, rights, _) = plan.rules.iter().find(|(p, _, _)| p == Path::new("/w")).unwrap();
        assert!(rights.contains(AccessFs::WriteFile | AccessFs::Refer | AccessFs::Truncate));
        assert!(!rights.intersects(AccessFs::MakeBlock | AccessFs::MakeChar));
    }

    #[test]
    fn a_domain_list_lets_only_the_allowed_socket_files_be_connected_to() {
        let rights_of = |plan: &LandlockPlan, path: &str| {
            plan.rules.iter().find(|(p, _, _)| p == Path::new(path)).map(|(_, r, _)| *r)
        };
        let open = plan(&policy(&["/w"], true), &[], &ReadPlan::default(), DevPts::Private);
        assert!(rights_of(&open, "/").unwrap().contains(AccessFs::ResolveUnix));
        let mut listed = policy(&["/w"], true);
        listed.network_domains = Some(cordon_policies::DomainRules::default());
        listed.allowed_sockets = vec!["/run/agent.sock".into()];
        let plan = plan(&listed, &[], &ReadPlan::default(), DevPts::Private);
        assert!(!rights_of(&plan, "/").unwrap().contains(AccessFs::ResolveUnix));
        assert!(!rights_of(&plan, "/w").unwrap().contains(AccessFs::ResolveUnix));
        assert_eq!(rights_of(&plan, "/run/agent.sock"), Some(AccessFs::ResolveUnix.into()));
    }
}
