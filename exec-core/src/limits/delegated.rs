//! A cgroup v2 subtree delegated to the user cordon runs as (systemd's `Delegate=yes`, or an
//! administrator's `chown`): cordon's own group, where it may write `cgroup.procs` and
//! `cgroup.subtree_control` and make directories.
//!
//! Finding one reads only (`cordon doctor` uses it). Using one changes the tree once per
//! process, at the first command that needs a cgroup: the no-internal-processes rule lets a
//! group hand controllers to its children only when no process sits in it, so cordon first
//! moves itself into a leaf of its own, `cordon-PID` (a name the stale sweep knows: it spares
//! a leaf whose cordon lives, and removes one whose cordon is gone), then enables the
//! controllers for the group's children, where the command leaves `cordon-PID-N` are made.
//! The leaf stays when cordon exits, empty: the group, which now gives its children
//! controllers, takes no process again, and goes with the scope that made it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::unistd::AccessFlags;

/// Why a delegated subtree cannot be used, in words, with what the user can do about it.
pub type Why = String;

/// The suggestion for a group other processes share.
const OWN_GROUP: &str = "run cordon in a cgroup of its own, e.g. \
                         `systemd-run --user --scope -p Delegate=yes cordon …`";

/// cordon's own group in the cgroup v2 hierarchy mounted at `mount_point` (whose root within
/// the hierarchy is `mount_root`, as mountinfo gives it) when it is delegated to this user
/// and has the memory and pids controllers; else why not.
pub fn find(own: &str, mount_point: &Path, mount_root: &str) -> Result<PathBuf, Why> {
    let group = own_group(own, mount_point, mount_root)?;
    let controllers = std::fs::read_to_string(group.join("cgroup.controllers")).unwrap_or_default();
    let has = |name: &str| controllers.split_whitespace().any(|c| c == name);
    if !has("memory") || !has("pids") {
        return Err(format!(
            "cordon runs unprivileged: only root may create cgroups outside a delegated \
             cgroup v2 subtree, and cordon's cgroup {} has no memory and pids controllers",
            group.display()
        ));
    }
    let writable = |path: &Path, flags: AccessFlags| {
        nix::unistd::access(path, flags).map_err(|errno| (path.to_path_buf(), errno))
    };
    let checks = [
        writable(&group.join("cgroup.procs"), AccessFlags::W_OK),
        writable(&group.join("cgroup.subtree_control"), AccessFlags::W_OK),
        writable(&group, AccessFlags::W_OK | AccessFlags::X_OK),
    ];
    if let Some((path, errno)) = checks.into_iter().find_map(Result::err) {
        return Err(if errno == nix::errno::Errno::EROFS {
            format!("the cgroup v2 hierarchy at {} is mounted read-only", mount_point.display())
        } else {
            format!(
                "cordon runs unprivileged and its cgroup {} is not delegated to it ({} is not \
                 writable: {}); {OWN_GROUP}",
                group.display(),
                path.display(),
                errno.desc()
            )
        });
    }
    let shared = others_in(&group);
    if shared > 0 {
        return Err(shared_reason(&group, &format!("{shared} other processes are in it")));
    }
    Ok(group)
}

/// The refusal when processes other than cordon share its group.
fn shared_reason(group: &Path, detail: &str) -> Why {
    format!(
        "other processes share cordon's cgroup {} ({detail}), so it cannot hand the memory \
         and pids controllers to a command's cgroup; {OWN_GROUP}",
        group.display()
    )
}

/// cordon's group, the `0::/path` line of `/proc/self/cgroup` under `mount_point`. The path
/// is relative to the root of cordon's cgroup namespace, which is where a container's mount
/// starts; a mount of some other part of the hierarchy does not hold it.
fn own_group(own: &str, mount_point: &Path, mount_root: &str) -> Result<PathBuf, Why> {
    let path = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or_else(|| "cordon is in no cgroup v2 group (/proc/self/cgroup)".to_owned())?;
    let unreachable = || {
        format!(
            "cordon's cgroup {path} is not under the cgroup v2 mount at {}",
            mount_point.display()
        )
    };
    if path.split('/').any(|part| part == "..") {
        return Err(unreachable());
    }
    let inside = if mount_root == "/" {
        path
    } else {
        path.strip_prefix(mount_root)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .ok_or_else(unreachable)?
    };
    let group = match inside.trim_start_matches('/') {
        "" => mount_point.to_path_buf(),
        relative => mount_point.join(relative),
    };
    if group.is_dir() { Ok(group) } else { Err(unreachable()) }
}

/// How many processes other than this one are in `group`.
fn others_in(group: &Path) -> usize {
    let me = std::process::id();
    std::fs::read_to_string(group.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .count()
}

/// Makes `group` ready for command cgroups, once per process: cordon in its own leaf, the
/// controllers enabled for the group's children. Later calls return the first answer.
pub fn prepare(group: &Path) -> &'static Result<(), Why> {
    static PREPARED: OnceLock<Result<(), Why>> = OnceLock::new();
    PREPARED.get_or_init(|| {
        let result = move_and_enable(group);
        match &result {
            Ok(()) => tracing::debug!(group = %group.display(), "delegated cgroup prepared"),
            Err(why) => {
                tracing::debug!(group = %group.display(), "delegated cgroup unusable: {why}")
            }
        }
        result
    })
}

/// The name of cordon's own leaf in its delegated group.
pub fn own_leaf_name() -> String {
    format!("{}{}", super::cgroup::PREFIX, std::process::id())
}

fn move_and_enable(group: &Path) -> Result<(), Why> {
    let leaf = group.join(own_leaf_name());
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        // A leaf of this name is this process's (a live cordon's leaf is never swept, and a
        // dead one's with a reused pid is as good as new: empty).
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", leaf.display())),
    }
    // Writing 0 moves the whole process, every thread of it, in a domain cgroup.
    if let Err(e) = super::cgroup::write_file(&leaf.join("cgroup.procs"), "0") {
        let _ = std::fs::remove_dir(&leaf);
        return Err(format!(
            "cordon cannot move itself into {} ({e}); is {} a threaded cgroup?",
            leaf.display(),
            group.display()
        ));
    }
    match super::cgroup::enable_controllers(group) {
        Ok(()) => Ok(()),
        Err(e) => {
            // Back where it was, and the leaf gone: the group is as cordon found it.
            let back = super::cgroup::write_file(&group.join("cgroup.procs"), "0");
            if back.is_ok() {
                let _ = std::fs::remove_dir(&leaf);
            }
            if e.kind() == io::ErrorKind::ResourceBusy {
                Err(shared_reason(group, "the kernel refused the controllers: busy"))
            } else {
                Err(format!("cannot use the delegated cgroup {}: {e}", group.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_group_is_found_under_the_mount() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("user.slice/me")).unwrap();
        let own = "0::/user.slice/me\n";
        assert_eq!(own_group(own, dir.path(), "/"), Ok(dir.path().join("user.slice/me")));
        // A mount of a part of the hierarchy: the path within it.
        assert_eq!(
            own_group("0::/outer/user.slice/me\n", dir.path(), "/outer"),
            Ok(dir.path().join("user.slice/me"))
        );
        assert!(own_group("0::/outerx/user.slice/me\n", dir.path(), "/outer").is_err());
        // Outside the namespace's root, or no v2 line at all.
        assert!(own_group("0::/../elsewhere\n", dir.path(), "/").is_err());
        assert!(own_group("4:memory:/\n", dir.path(), "/").is_err());
    }
}
