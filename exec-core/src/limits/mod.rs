//! How this machine holds a command's resource limits: a cgroup for the limits of the whole
//! tree (memory, pids, CPU time) where cordon can make one, per-process rlimits for the rest
//! (file size, open files) and, with best effort, in place of a missing cgroup. Deciding is
//! done when a launch is planned, so a limit that cannot be held refuses the run before
//! anything starts; the cgroup itself is made by the spawner, just before the child.

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod delegated;

#[cfg(target_os = "linux")]
pub use cgroup::CommandCgroup;

use cordon_policies::{
    LimitKey, ProcessLimit, SandboxRequest, TreeLimits, UnenforceableLimit, fallback_caveat,
};
use serde::Serialize;

/// Raises this process's soft limit of open files to its hard limit, as Go programs and many
/// services do, for what holds a descriptor per item a command decides the number of: the
/// proxy's client connections (two each), the git dirs of the writable roots watched during a
/// run (one each). The usual soft limit of 1024 would otherwise stop the proxy near 500
/// connections and refuse every run in a workspace with a thousand repositories, and a server
/// near thirty sessions (each holds its terminal or pipes and its watched git dirs). The
/// commands cordon starts get the soft limit it started with back (Linux; `crate::sys`):
/// a program that `select()`s is not handed descriptors past 1024.
pub(crate) fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
            #[cfg(target_os = "linux")]
            crate::sys::record_original_open_files(soft);
        }
    }
}

/// What a launch does about its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitPlan {
    /// Whether a cgroup holds the tree limits.
    pub tree: TreeLimits,
    /// The rlimits the command starts with.
    pub process: Vec<ProcessLimit>,
    /// What best effort only approximates, one line each.
    pub caveats: Vec<String>,
}

/// Decides how `request`'s limits are held here; refuses (unless best effort) memory and pids
/// limits no cgroup can hold.
pub fn plan_limits(request: &SandboxRequest) -> Result<LimitPlan, UnenforceableLimit> {
    let limits = &request.limits;
    let (tree, why) = tree_holder(limits);
    let (process, caveats) = limits.process_limits(tree, request.strictness, &why)?;
    Ok(LimitPlan { tree, process, caveats })
}

/// Whether a cgroup can hold every memory and pids limit set, and why not.
fn tree_holder(limits: &cordon_policies::Limits) -> (TreeLimits, String) {
    if limits.tree_keys().next().is_none() {
        return (TreeLimits::None, String::new());
    }
    #[cfg(target_os = "linux")]
    match cgroup::hierarchy() {
        Ok(hierarchy) => {
            let missing = [LimitKey::Memory, LimitKey::Pids]
                .into_iter()
                .find(|key| limits.get(*key).is_some() && !hierarchy.holds(*key));
            match missing {
                // A delegated subtree is made ready here, before the plan is settled: when it
                // cannot be (other processes share cordon's group), the run is refused, or
                // falls back, like one with no cgroup at all.
                None => match hierarchy.prepare() {
                    Ok(()) => (TreeLimits::Cgroup, String::new()),
                    Err(why) => (TreeLimits::None, why.to_string()),
                },
                Some(key) => {
                    (TreeLimits::None, format!("{} has no {key} controller", hierarchy.describe()))
                }
            }
        }
        Err(why) => (TreeLimits::None, why.to_string()),
    }
    #[cfg(not(target_os = "linux"))]
    (TreeLimits::None, "only Linux cgroups can hold a process tree's limits".to_owned())
}

/// The command's cgroup, where there are cgroups.
#[cfg(target_os = "linux")]
pub(crate) type Held = CommandCgroup;
/// No cgroups elsewhere.
#[cfg(not(target_os = "linux"))]
pub(crate) type Held = std::convert::Infallible;

/// How one limit is held on this machine (for `cordon doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitSupport {
    pub key: LimitKey,
    /// `cgroup` (the whole tree), `rlimit` (per process), `best_effort` (an rlimit stands in
    /// for the tree limit, only with --best-effort) or `refused`.
    pub how: &'static str,
    pub detail: String,
}

/// What this machine, as this user, enforces of each limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitsReport {
    /// The cgroup cordon makes per command, if it can: `cgroup v2 (/sys/fs/cgroup)`.
    pub cgroup: Option<String>,
    /// Why there is none.
    pub no_cgroup: Option<String>,
    pub limits: Vec<LimitSupport>,
}

/// The limits report for this process.
pub fn limits_report() -> LimitsReport {
    #[cfg(target_os = "linux")]
    let hierarchy = cgroup::hierarchy().clone();
    #[cfg(not(target_os = "linux"))]
    let hierarchy: Result<(), std::io::Error> =
        Err(std::io::Error::other("only Linux cgroups can hold a tree's limits"));
    let holds = |key: LimitKey| {
        #[cfg(target_os = "linux")]
        return hierarchy.as_ref().is_ok_and(|h| h.holds(key));
        #[cfg(not(target_os = "linux"))]
        return {
            let _ = key;
            false
        };
    };
    let limits = LimitKey::ALL
        .into_iter()
        .map(|key| {
            let (how, detail) = match key {
                LimitKey::FileSize => {
                    ("rlimit", "RLIMIT_FSIZE, per file each process writes".into())
                }
                LimitKey::OpenFiles => ("rlimit", "RLIMIT_NOFILE, per process".into()),
                _ if holds(key) => ("cgroup", "the command's cgroup, for the whole tree".into()),
                LimitKey::Cpu => ("rlimit", format!("per process only: {}", fallback_caveat(key))),
                LimitKey::Memory | LimitKey::Pids => {
                    ("refused", format!("exit 125; with --best-effort {}", fallback_caveat(key)))
                }
            };
            LimitSupport { key, how, detail }
        })
        .collect();
    #[cfg(target_os = "linux")]
    let (cgroup, no_cgroup) = match &hierarchy {
        Ok(h) => (Some(h.describe()), None),
        Err(why) => (None, Some(why.to_string())),
    };
    #[cfg(not(target_os = "linux"))]
    let (cgroup, no_cgroup) = (None, hierarchy.err().map(|e| e.to_string()));
    LimitsReport { cgroup, no_cgroup, limits }
}

#[cfg(target_os = "linux")]
impl CommandCgroup {
    /// The cgroup that holds an unsandboxed command's tree so that it can be killed whole,
    /// where this machine gives cordon one (a cgroup v2 mount as root, with or without
    /// controllers; a delegated subtree unprivileged); `None`
    /// elsewhere, where the command's keeper alone ends the tree.
    pub(crate) fn for_unsandboxed() -> Option<CommandCgroup> {
        let hierarchy = cgroup::kill_hierarchy()?;
        match CommandCgroup::kill_only(&hierarchy) {
            Ok(cgroup) => Some(cgroup),
            Err(error) => {
                tracing::debug!(%error, "no cgroup to hold the unsandboxed command");
                None
            }
        }
    }

    /// The cgroup for a launch planned with one (its `cgroup_limits`), in this machine's
    /// hierarchy: an error, never a launch without it, when it cannot be made.
    pub(crate) fn create_for(limits: &cordon_policies::Limits) -> std::io::Result<CommandCgroup> {
        match cgroup::hierarchy() {
            Ok(hierarchy) => CommandCgroup::create(hierarchy, limits),
            Err(why) => Err(std::io::Error::other(why.clone())),
        }
    }
}
