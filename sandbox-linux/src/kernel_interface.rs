//! The kernel's own interface file systems (`/proc`, `/sys`, cgroup trees, tracing, security
//! modules' files): writable roots must never be, hold, or lie on one. Their files are the
//! machine's settings, guarded by file modes alone, so a root caller's command — which keeps
//! uid 0 without a capability — would change the host by writing them.

use std::path::Path;

use nix::sys::statfs::{self, FsType};

/// Where the interface is mounted on every Linux system.
const MOUNTED_AT: [&str; 2] = ["/proc", "/sys"];

/// The interface file systems by their `statfs` magic: settings and kernel objects, not data.
/// A file system type missing from this list is treated as data.
const INTERFACE_TYPES: [(FsType, &str); 19] = [
    (statfs::PROC_SUPER_MAGIC, "proc"),
    (statfs::SYSFS_MAGIC, "sysfs"),
    (statfs::CGROUP_SUPER_MAGIC, "cgroup"),
    (statfs::CGROUP2_SUPER_MAGIC, "cgroup2"),
    (statfs::DEBUGFS_MAGIC, "debugfs"),
    (statfs::TRACEFS_MAGIC, "tracefs"),
    (statfs::SECURITYFS_MAGIC, "securityfs"),
    (statfs::SELINUX_MAGIC, "selinuxfs"),
    (statfs::SMACK_MAGIC, "smackfs"),
    (statfs::BPF_FS_MAGIC, "bpf"),
    (statfs::RDTGROUP_SUPER_MAGIC, "resctrl"),
    (statfs::USBDEVICE_SUPER_MAGIC, "usbfs"),
    (statfs::XENFS_SUPER_MAGIC, "xenfs"),
    (statfs::NSFS_MAGIC, "nsfs"),
    (FsType(0x6265_6570), "configfs"),
    (FsType(0xde5e_81e4), "efivarfs"),
    (FsType(0x6165_676c), "pstore"),
    (FsType(0x4249_4e4d), "binfmt_misc"),
    (FsType(0x6573_5543), "fusectl"),
];

/// Why a root that touches the kernel's interface is refused, after how it does.
const WHY: &str = "whose files are the machine's settings, not data";

/// How `root` touches the kernel's interface, in words for an error ("holds /sys, whose …",
/// "lies in /proc, …", "lies on the kernel's sysfs file system, …"), or `None` when it does
/// not. `root` is canonical; one `statfs`.
pub(crate) fn root_touches(root: &Path) -> Option<String> {
    how_root_touches(root).map(|how| format!("{how}, {WHY}"))
}

fn how_root_touches(root: &Path) -> Option<String> {
    if let Some(place) = MOUNTED_AT.iter().find(|place| Path::new(place).starts_with(root)) {
        return Some(format!("holds {place}"));
    }
    // Below them, whatever is mounted there (cgroup v1's hierarchies sit on a tmpfs).
    if let Some(place) = MOUNTED_AT.iter().find(|place| root.starts_with(place)) {
        return Some(format!("lies in {place}"));
    }
    let kind = statfs::statfs(root).ok()?.filesystem_type();
    INTERFACE_TYPES
        .iter()
        .find(|(magic, _)| *magic == kind)
        .map(|(_, name)| format!("lies on the kernel's {name} file system"))
}

/// The interface file systems by the type name `/proc/self/mountinfo` gives them.
const INTERFACE_TYPE_NAMES: [&str; 19] = [
    "proc",
    "sysfs",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "selinuxfs",
    "smackfs",
    "bpf",
    "resctrl",
    "usbfs",
    "xenfs",
    "nsfs",
    "configfs",
    "efivarfs",
    "pstore",
    "binfmt_misc",
    "fusectl",
];

/// File systems of device nodes: below a writable root, only the mount view (which makes every
/// mount but its own `/dev` `nodev`) keeps their devices closed.
pub(crate) const DEVICE_TYPE_NAMES: [&str; 2] = ["devtmpfs", "devpts"];

/// The first of `roots` that holds a mount of the kernel's interface below it (a chroot's
/// `/proc`, a bind of `/` with its `/sys`), with words for an error. O(mounts).
pub(crate) fn root_holding_a_mount(
    roots: &[std::path::PathBuf],
) -> Result<Option<(std::path::PathBuf, String)>, crate::error::HelperError> {
    Ok(root_holding_a_mount_of(roots, &INTERFACE_TYPE_NAMES)?
        .map(|(root, how)| (root, format!("{how}, {WHY}"))))
}

/// The first of `roots` that holds a mount of one of `kinds` below it, with words for an
/// error. One read of the mount table: O(mounts).
pub(crate) fn root_holding_a_mount_of(
    roots: &[std::path::PathBuf],
    kinds: &[&str],
) -> Result<Option<(std::path::PathBuf, String)>, crate::error::HelperError> {
    Ok(root_holding_one_of(&crate::mount_table::mounts_with_types()?, roots, kinds))
}

/// [`root_holding_a_mount_of`] among `mounts` (the mount table, with types).
fn root_holding_one_of(
    mounts: &[(std::path::PathBuf, String)],
    roots: &[std::path::PathBuf],
    kinds: &[&str],
) -> Option<(std::path::PathBuf, String)> {
    for root in roots {
        let held = mounts.iter().find(|(point, kind)| {
            point != root && point.starts_with(root) && kinds.contains(&kind.as_str())
        });
        if let Some((point, kind)) = held {
            return Some((root.clone(), format!("holds {} ({kind})", point.display())));
        }
    }
    None
}

/// The first of `roots`, but those in `exempt`, that lies on a mount of one of `kinds` (the
/// mount it is in, or is: a bind of `/dev/pts` elsewhere) or holds one below it, among
/// `mounts` (the mount table, with types), with words for an error. O(mounts × roots).
pub(crate) fn root_with_a_mount_of(
    mounts: &[(std::path::PathBuf, String)],
    roots: &[std::path::PathBuf],
    kinds: &[&str],
    exempt: &[std::path::PathBuf],
) -> Option<(std::path::PathBuf, String)> {
    for root in roots.iter().filter(|root| !exempt.contains(root)) {
        // The last mount on the longest mount point above it is the one it is in.
        let on = mounts
            .iter()
            .filter(|(point, _)| root.starts_with(point))
            .max_by_key(|(point, _)| point.components().count());
        if let Some((point, kind)) = on.filter(|(_, kind)| kinds.contains(&kind.as_str())) {
            let how = format!("lies on {} ({kind})", point.display());
            return Some((root.clone(), how));
        }
    }
    let rest: Vec<std::path::PathBuf> =
        roots.iter().filter(|root| !exempt.contains(root)).cloned().collect();
    root_holding_one_of(mounts, &rest, kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_that_are_or_hold_the_kernels_interface_are_named() {
        assert_eq!(how_root_touches(Path::new("/sys")).as_deref(), Some("holds /sys"));
        assert_eq!(how_root_touches(Path::new("/proc")).as_deref(), Some("holds /proc"));
        let mm = how_root_touches(Path::new("/sys/kernel/mm"));
        assert_eq!(mm.as_deref(), Some("lies in /sys"));
        let kernel = how_root_touches(Path::new("/proc/sys/kernel"));
        assert_eq!(kernel.as_deref(), Some("lies in /proc"));
        let data = tempfile::tempdir().unwrap();
        assert_eq!(root_touches(data.path()), None);
    }
}
