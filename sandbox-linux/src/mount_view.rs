//! The mount view: a private mount namespace in which every mount is read-only, writable roots
//! are bound read-write on top, protected paths inside them are read-only again, hidden paths
//! are covered by empty read-only stand-ins, `/dev` holds only the ordinary devices, and
//! `/dev/shm` is a fresh private tmpfs.
//!
//! This is what stops what Landlock cannot decide: `chmod`/`chown`/`utimes`/xattr changes
//! outside the roots, writes to `.git/hooks` inside them, reads of `~/.ssh`.
//!
//! The plan ([`MountPlan`]) is a value built from the policy and the mounts under `/proc`; the
//! namespace is entered in [`enter`] and the plan applied in [`build`]. Nothing is ever created
//! on the host: every mount point already exists, and propagation is made private before the
//! first mount, so no mount leaks back. A protected path that does not exist therefore stays creatable.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use cordon_policies::ResolvedPolicy;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use rustix::fs::CWD;
use rustix::mount::{MoveMountFlags, OpenTreeFlags, move_mount, open_tree};

use crate::binds::{
    bind_held, hold, set_read_only, set_read_only_without_devices, set_without_devices,
};
use crate::error::HelperError;
use crate::git_dirs::{
    UnusableGitFile, config_includes, core_hooks_paths, git_dirs, submodule_pointer_files,
};
use crate::landlock_rules::DevPts;
use crate::listings::Listings;
pub use crate::report::NoMountView;
use crate::repositories::{RepositoryWalk, git_dir_entries, repositories_of};
use crate::sys::{self, Recursion};

/// What to mount, decided before anything is changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MountPlan {
    /// Writable roots: each put back on top of the read-only tree as a copy of its mounts
    /// taken before, so each mount in it keeps the writability it had.
    pub writable_roots: Vec<PathBuf>,
    /// Directories (and `.git` pointer files) inside writable roots that lead to protected
    /// paths: bound onto themselves, still writable, so that they are mount points and cannot
    /// be renamed or removed. Otherwise `mv .git .git2; cp -r .git2 .git` would leave a fresh,
    /// writable `.git/hooks` in place of the protected one.
    pub pinned: Vec<PathBuf>,
    /// Existing protected paths inside writable roots (canonical): bound onto themselves
    /// read-only.
    pub protected: Vec<PathBuf>,
    /// Existing hidden directories: covered with an empty read-only tmpfs.
    pub hidden_dirs: Vec<PathBuf>,
    /// Allowed UNIX sockets inside hidden directories: each is bound onto a stand-in of the same
    /// path in its directory's tmpfs before the tmpfs turns read-only, so the command reaches
    /// that one socket and nothing else of the directory.
    pub exposed_sockets: Vec<PathBuf>,
    /// Existing hidden non-directories: covered with `/dev/null`.
    pub hidden_files: Vec<PathBuf>,
    /// Directories covered with an empty read-only tmpfs into which the listed entries of each
    /// are put back (with the mounts on and inside them), before the hidden paths are covered.
    pub filtered_dirs: Vec<(PathBuf, Vec<PathBuf>)>,
    /// A `/dev` of the sandbox's own, in place of the host's: the ordinary devices, and these
    /// places of the host's `/dev` put back (writable roots and allowed sockets there).
    pub own_dev: Option<Vec<PathBuf>>,
    /// Whether to put a private tmpfs on `/dev/shm`.
    pub private_dev_shm: bool,
    /// Writable roots and working directories inside `/dev/shm`: bound back into the private
    /// instance.
    pub shm_roots: Vec<PathBuf>,
    /// Whether to put a private devpts instance on `/dev/pts` (wherever there is one), so that
    /// the command cannot open the user's terminals by path (`/dev/pts/N`) to read what is
    /// typed there or to write escape sequences to them; it still makes PTYs of its own
    /// (`/dev/ptmx` reaches the devpts mounted next to it). A `/dev` of the sandbox's own holds
    /// the terminals handed over under names of their own; in the host's `/dev` they keep no
    /// name (`tty` says "not a tty") and are reached through their descriptors.
    pub private_dev_pts: bool,
    /// Whether the command also gets a network namespace of its own (a domain allow-list).
    pub network: NetworkNamespace,
    /// Mount points strictly under `/proc` (a container's masks, a read-only `/proc/sys`, hidden
    /// paths there): put back on top of a fresh proc, so nothing hidden before shows.
    pub proc_covers: Vec<PathBuf>,
    /// Git files in the writable roots that neither the helper nor git can use (a FIFO, a
    /// device, oversized): each is in `protected` when it is inside a root, and the helper
    /// warns about them once.
    pub unusable_git_files: Vec<UnusableGitFile>,
    /// Directories of the writable roots the search for repositories had no time left for:
    /// a repository there keeps a writable config and hooks.
    pub unsearched: Vec<PathBuf>,
    /// Roots seen through a write layer, mounted first of all (so the roots' copies carry
    /// them). Their repositories are not searched: every change the command makes there is
    /// judged when it is applied.
    pub layers: Vec<crate::write_layer::Layer>,
    /// The git dirs of every repository found in the roots (for the step after the run: one
    /// found then that is not among these is new).
    pub git_dirs: Vec<PathBuf>,
}

/// The network namespace the mount view is entered together with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkNamespace {
    /// The caller's network.
    #[default]
    Shared,
    /// A new network namespace with only loopback up: the outside is reached through cordon's
    /// proxy alone, or not at all.
    Private,
}

impl NetworkNamespace {
    /// A namespace of its own for a domain list (the proxy is the only way out) and for the
    /// network off (a loopback of the command's own, where a test suite's local server
    /// works, and nothing else); the caller's for the network on.
    pub fn for_policy(policy: &cordon_policies::ResolvedPolicy) -> NetworkNamespace {
        if policy.network_domains.is_some() || !policy.network_access {
            NetworkNamespace::Private
        } else {
            NetworkNamespace::Shared
        }
    }
}

/// Adds every directory from `root` (exclusive) down to `path`'s parent (inclusive) to
/// `pinned`, when `path` lies inside `root`: each becomes a mount point, which cannot be
/// renamed, so the read-only `path` cannot be moved away with a writable copy left in its place.
fn pin_between(root: &Path, path: &Path, pinned: &mut Vec<PathBuf>) {
    let Ok(inside) = path.strip_prefix(root) else { return };
    let mut ancestor = root.to_path_buf();
    for component in inside.parent().into_iter().flat_map(Path::components) {
        ancestor.push(component);
        pinned.push(ancestor.clone());
    }
}

/// What the plan reads of the host besides the mount table.
pub(crate) struct Surveyed<'a> {
    /// The directories on the way to the hidden paths.
    pub listings: &'a Listings,
    /// The writable roots' repositories, when the caller found them already.
    pub walked: Option<&'a RepositoryWalk>,
    /// The devices hidden besides the policy's paths ([`crate::dev_view::HostDevHidden::covered`]), when `/dev` is the
    /// host's; empty with a `/dev` of the sandbox's own.
    pub devices: &'a [PathBuf],
    /// Whether `/dev` is covered and only the ordinary devices put back
    /// ([`crate::dev_view::own_dev_possible`]).
    pub own_dev: bool,
    /// The write layers, whose roots are not searched for repositories.
    pub layers: &'a [crate::write_layer::Layer],
}

/// Builds the plan for `policy` from the current mount table.
pub(crate) fn plan(
    policy: &ResolvedPolicy,
    proc_mounts: &[PathBuf],
    host: &Surveyed<'_>,
) -> MountPlan {
    let listings = host.listings;
    let roots = &policy.writable_roots;

    let mut protected = Vec::new();
    let mut pinned = Vec::new();
    let mut unusable_git_files = Vec::new();
    let mut unsearched = Vec::new();
    let mut known_git_dirs = Vec::new();
    for root in roots {
        // Every change in a layered root (or one inside it) is judged when it is applied.
        let layered = host.layers.iter().any(|layer| root.starts_with(&layer.root));
        // Every repository in the root: the root's own, nested ones (vendored, cloned,
        // fixtures), and git dirs lying there as plain directories. An allowance per root, so
        // one filled with directories (`/tmp`) cannot spend the workspace's.
        let mut repositories = match host.walked {
            _ if layered => crate::repositories::Repositories::default(),
            Some(walk) => walk.repositories(root, roots),
            None => repositories_of(root, roots),
        };
        // A repository found from an outer root but lying in a layered one (a workspace under
        // `/tmp`) is the gate's: bound read-only, git could not write its own files there.
        let in_layer = |path: &Path| host.layers.iter().any(|layer| path.starts_with(&layer.root));
        repositories.bare.retain(|dir| !in_layer(dir));
        repositories.worktrees.retain(|top| !in_layer(top));
        unsearched.extend(repositories.unsearched);
        known_git_dirs.extend(repositories.bare.iter().cloned());
        for git_dir in &repositories.bare {
            for entry in git_dir_entries(git_dir, &mut unsearched) {
                pin_between(root, &entry, &mut pinned);
                protected.push(entry);
            }
        }
        for top in &repositories.worktrees {
            // The checkout's git dirs, read once (not once per entry): `.git`, or what a
            // `.git` pointer file names.
            let found = git_dirs(top);
            protected.extend(found.unusable.iter().map(|file| file.path.clone()));
            unusable_git_files.extend(found.unusable);
            let git_dirs = found.dirs;
            known_git_dirs.extend(git_dirs.iter().cloned());
            for git_dir in &git_dirs {
                protected.extend(submodule_pointer_files(git_dir));
                // Hooks wherever `core.hooksPath` leads, and what the config includes: git
                // reads both as the repository's own.
                for path in core_hooks_paths(git_dir, top, None)
                    .into_iter()
                    .chain(config_includes(git_dir, None))
                {
                    pin_between(root, &path, &mut pinned);
                    protected.push(path);
                }
                for entry in git_dir_entries(git_dir, &mut unsearched) {
                    pin_between(root, &entry, &mut pinned);
                    protected.push(entry);
                }
            }
            let pointed_git_dirs: Vec<PathBuf> =
                git_dirs.into_iter().filter(|d| *d != top.join(".git")).collect();
            // A `.git` pointer file is as good as a config: rewritten to `gitdir: ./evil`, it
            // would make the user's next git command in this checkout read a planted config.
            // Read-only, and so are the pointer files of the submodule checkouts git recurses
            // into (above).
            // A `.git` link to the git dir is not a pointer file: bound, it would make the git
            // dir it leads to read-only whole. A new target it is turned to is a git dir the
            // search after the run has not seen before, and looks at.
            let linked_dir = std::fs::metadata(top.join(".git")).is_ok_and(|m| m.is_dir());
            if !pointed_git_dirs.is_empty() && !linked_dir {
                pin_between(root, &top.join(".git"), &mut pinned);
                protected.push(top.join(".git"));
            }
            for entry in &policy.protected_paths {
                let Ok(inside_git) = Path::new(entry).strip_prefix(".git") else { continue };
                let path = top.join(".git").join(inside_git);
                pin_between(root, &path, &mut pinned);
                protected.push(path);
                // `.git/...` entries also apply inside the real git dir of a pointer file.
                protected.extend(pointed_git_dirs.iter().map(|dir| dir.join(inside_git)));
            }
        }
        for entry in &policy.protected_paths {
            let entry_path = Path::new(entry);
            if entry_path.is_absolute() {
                // Pin the directories between the root and the entry, so a rename of one of
                // them cannot move the read-only entry away and leave a writable one in place.
                pin_between(root, entry_path, &mut pinned);
                protected.push(entry_path.to_path_buf());
                continue;
            }
            if entry_path.starts_with(".git") {
                continue;
            }
            let path = root.join(entry_path);
            pin_between(root, &path, &mut pinned);
            protected.push(path);
        }
    }
    // A root inside another root (a workspace under `/tmp` or `$TMPDIR`, an `--add-dir` inside
    // the workspace) is pinned with the directories above it: renamed away and replaced by a
    // symbolic link, it would make the next launch's root, resolved by its path, lead anywhere.
    for root in roots {
        for outer in roots.iter().filter(|outer| *outer != root && root.starts_with(outer)) {
            pin_between(outer, &root.join("-"), &mut pinned);
        }
    }
    // Each path is looked at once (`.git` is the ancestor of several entries).
    pinned.sort();
    pinned.dedup();
    protected.sort();
    protected.dedup();
    // Only real directories and files are pinned: a symlink is not followed into who knows where.
    // What is not there (`.git`, `.config` in most roots) has nothing under it either.
    let mut absent = Vec::new();
    pinned.retain(|p| match std::fs::symlink_metadata(p) {
        Ok(meta) => !meta.file_type().is_symlink(),
        Err(_) => {
            absent.push(p.clone());
            false
        }
    });
    // Bind the canonical target, and only inside a writable root: outside them everything is
    // read-only already, and a planted symlink must not make the helper bind, say, `/`. Most
    // entries do not exist: one lstat (none under an absent directory) rules them out before
    // the component-by-component walk.
    let mut protected: Vec<PathBuf> = protected
        .iter()
        .filter(|p| !absent.iter().any(|dir| p.starts_with(dir)))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| roots.iter().any(|root| p.starts_with(root)))
        .collect();
    protected.sort();
    protected.dedup();

    let mut hidden = crate::hidden::plan(&policy.hidden_paths, &policy.allowed_sockets, listings);
    for device in host.devices {
        if device.is_dir() {
            hidden.dirs.push(device.clone());
        } else {
            hidden.files.push(device.clone());
        }
    }
    let crate::hidden::HiddenPlan { dirs: hidden_dirs, files: hidden_files, exposed_sockets } =
        hidden;
    // A root inside another root is already writable through the outer one's bind.
    let outermost: Vec<PathBuf> = roots
        .iter()
        .filter(|root| !roots.iter().any(|other| other != *root && root.starts_with(other)))
        .cloned()
        .collect();
    let own_dev = host.own_dev.then(|| crate::dev_view::own_dev_kept(&outermost));
    // A writable root in `/dev/shm` is put back into the private instance; one that is
    // `/dev/shm` itself keeps the host's.
    let shm = Path::new("/dev/shm");
    let shm_roots: Vec<PathBuf> =
        outermost.iter().filter(|root| root.starts_with(shm) && *root != shm).cloned().collect();
    let shm_is_root = roots.iter().any(|root| root == shm);
    let proc_root = Path::new("/proc");
    let mut proc_covers: Vec<PathBuf> = proc_mounts
        .iter()
        .chain(&hidden_dirs)
        .chain(&hidden_files)
        .filter(|p| p.starts_with(proc_root) && *p != proc_root)
        .cloned()
        .collect();
    proc_covers.sort();
    proc_covers.dedup();
    known_git_dirs.sort();
    known_git_dirs.dedup();
    MountPlan {
        git_dirs: known_git_dirs,
        proc_covers,
        unusable_git_files,
        unsearched,
        layers: host.layers.to_vec(),
        writable_roots: outermost,
        pinned,
        protected,
        hidden_dirs,
        exposed_sockets,
        hidden_files,
        filtered_dirs: Vec::new(),
        private_dev_shm: !shm_is_root && (own_dev.is_some() || shm.is_dir()),
        shm_roots,
        private_dev_pts: own_dev.is_some() || Path::new("/dev/pts").is_dir(),
        own_dev,
        network: NetworkNamespace::for_policy(policy),
    }
}

/// Keeps the command's working directories that lie in `/dev/shm` where the command starts:
/// one below it is put back into the private instance (as read-only as the host's is in the
/// view, unless a writable root holds it); one that is `/dev/shm` itself keeps the host's.
pub fn keep_working_directories_in_dev_shm(plan: &mut MountPlan, cwds: &[PathBuf]) {
    let shm = Path::new("/dev/shm");
    for cwd in cwds.iter().filter(|cwd| cwd.starts_with(shm)) {
        if cwd == shm {
            plan.private_dev_shm = false;
        } else if !plan.shm_roots.iter().any(|root| cwd.starts_with(root)) {
            plan.shm_roots.push(cwd.clone());
        }
    }
    // Outer places first: one inside another is bound on top of it, not under.
    plan.shm_roots.sort();
}

/// Whether the namespace could be entered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountView {
    /// This process is in a mount namespace of its own, where [`build`] makes the view.
    Entered,
    /// The kernel refused a mount namespace (no user namespaces for this user, a container
    /// without CAP_SYS_ADMIN, AppArmor's restriction): the reason.
    Unavailable(NoMountView),
}

/// Enters a private mount namespace (in a user namespace of its own where the caller has no
/// `CAP_SYS_ADMIN`), and a network namespace of its own for `network` private. Returns
/// [`MountView::Unavailable`] without changing anything when the kernel refuses; nothing is
/// mounted yet: [`build`] applies the plan, which may be made in the namespace.
pub fn enter(network: NetworkNamespace) -> MountView {
    let extra = match network {
        NetworkNamespace::Shared => CloneFlags::empty(),
        NetworkNamespace::Private => CloneFlags::CLONE_NEWNET,
    };
    match enter_namespace(extra) {
        Ok(()) => MountView::Entered,
        Err(reason) => MountView::Unavailable(reason),
    }
}

/// Applies `plan` in the namespace [`enter`] entered, binding the `terminals` handed on
/// (descriptors) into the sandbox's own `/dev`; returns which devpts instance `/dev/pts` shows.
/// A failure is an error: the process is then in a half-built view.
pub fn build(plan: &MountPlan, terminals: &[libc::c_int]) -> Result<DevPts, HelperError> {
    if plan.network == NetworkNamespace::Private {
        sys::loopback_up().map_err(|source| HelperError::NetworkNamespace {
            what: "bringing up loopback",
            source,
        })?;
    }
    let fail =
        |what: String| move |e: nix::Error| HelperError::MountView { what, source: e.into() };
    // First of all, so that nothing below propagates to the host's mount table.
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(fail("making mounts private".into()))?;
    crate::write_layer::mount_layers(&plan.layers)?;
    // Each writable root's mounts are copied before the tree turns read-only and put back on
    // top of it after: a mount inside a root keeps the writability it had, and nothing here
    // depends on how many mounts the host has elsewhere.
    let copies: Vec<(&PathBuf, OwnedFd)> = plan
        .writable_roots
        .iter()
        .map(|root| {
            let flags = OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::AT_RECURSIVE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC;
            open_tree(CWD, root.as_path(), flags).map(|copy| (root, copy)).map_err(|e| {
                HelperError::MountView {
                    what: format!("copying {}", root.display()),
                    source: e.into(),
                }
            })
        })
        .collect::<Result<_, _>>()?;
    // No device node opens anywhere but in `/dev` (its ordinary devices, the terminals handed
    // over, and a writable root the user named there, such as `/dev/dri`): a disk's node
    // elsewhere — a second devtmpfs, a chroot's `/dev` on disk — reads the disk for any caller
    // that owns it, as a root caller does.
    set_read_only_without_devices(Path::new("/"))?;
    for (root, copy) in &copies {
        move_mount(copy, "", CWD, root.as_path(), MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)
            .map_err(|e| HelperError::MountView {
                what: format!("binding {}", root.display()),
                source: e.into(),
            })?;
        if !root.starts_with("/dev") {
            set_without_devices(root)?;
        }
    }
    // A name that was there when the view was planned may be gone now: another process of the
    // user's (Codex's own sandbox makes and removes `.git` and `.codex` in `/tmp`) removed it in
    // between. Gone, it holds nothing to keep read-only, and what is made there later is judged
    // after the run like any new name; it is not a reason to refuse the launch.
    for path in &plan.pinned {
        gone_or(bind(path)).map_err(fail(format!("pinning {}", path.display())))?;
    }
    for path in &plan.protected {
        if gone_or(bind(path).map(|()| true))
            .map_err(fail(format!("binding {}", path.display())))?
        {
            match set_read_only(path, Recursion::Recursive) {
                // Removed on the host right after the bind: the bind went with it (a mount in
                // another namespace does not keep a directory from being removed), and what is
                // made there later is judged after the run.
                Err(HelperError::MountView { source, .. })
                    if matches!(source.raw_os_error(), Some(libc::ENOENT | libc::EINVAL))
                        && !is_mount_point(path) => {}
                other => other?,
            }
        }
    }
    match &plan.own_dev {
        Some(kept) => crate::dev_view::own_dev(kept, terminals)?,
        None => crate::dev_view::host_dev_usable()?,
    }
    for (dir, shown) in &plan.filtered_dirs {
        filter_dir(dir, shown)?;
    }
    let stand_in = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    for dir in &plan.hidden_dirs {
        let exposed: Vec<&PathBuf> =
            plan.exposed_sockets.iter().filter(|s| s.starts_with(dir)).collect();
        if exposed.is_empty() {
            gone_or(mount(Some("tmpfs"), dir, Some("tmpfs"), stand_in, Some("mode=0755,size=4k")))
                .map_err(fail(format!("hiding {}", dir.display())))?;
        } else {
            let exposed: Vec<PathBuf> = exposed.into_iter().cloned().collect();
            filter_dir(dir, &exposed)?;
        }
    }
    // `/dev/null` sits on a mount that is read-only by now, and a bind copies its source's
    // flags: the stand-in is read-only without another call (and writes to it go nowhere).
    for file in &plan.hidden_files {
        gone_or(mount(Some("/dev/null"), file, None::<&str>, MsFlags::MS_BIND, None::<&str>))
            .map_err(fail(format!("hiding {}", file.display())))?;
    }
    if plan.private_dev_shm {
        let held: Vec<(&PathBuf, OwnedFd)> = plan
            .shm_roots
            .iter()
            .filter_map(|root| match hold(root) {
                Err(nix::Error::ENOENT) => None,
                other => Some(other.map(|fd| (root, fd))),
            })
            .collect::<Result<_, _>>()
            .map_err(fail("holding the writable roots in /dev/shm".into()))?;
        mount(
            Some("tmpfs"),
            "/dev/shm",
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=1777"),
        )
        .map_err(fail("mounting a private /dev/shm".into()))?;
        for (root, fd) in &held {
            std::fs::create_dir_all(root).map_err(|source| HelperError::MountView {
                what: format!("making the mount point {}", root.display()),
                source,
            })?;
            bind_held(fd, root, MsFlags::MS_BIND | MsFlags::MS_REC)
                .map_err(fail(format!("putting back {}", root.display())))?;
        }
    }
    if !plan.private_dev_pts {
        return Ok(DevPts::Host);
    }
    // Not fatal: a kernel or LSM that refuses a devpts mount here leaves the host's /dev/pts,
    // as without the mount view, whose terminals the read rights then grant none of. In the
    // sandbox's own `/dev`, `pts` is an empty directory then.
    let mounted = mount(
        Some("devpts"),
        "/dev/pts",
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    );
    Ok(match (mounted, &plan.own_dev) {
        (Ok(()), _) | (Err(_), Some(_)) => DevPts::Private,
        (Err(_), None) => DevPts::Host,
    })
}

/// Whether `path` is a mount point in this namespace (`/proc/self/mountinfo` names it, with its
/// blanks and backslashes escaped as the kernel escapes them). Asked only after a mount call on
/// `path` failed; an unreadable table counts as yes.
fn is_mount_point(path: &Path) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else { return true };
    let mut escaped = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            ' ' => escaped.push_str("\\040"),
            '\t' => escaped.push_str("\\011"),
            '\n' => escaped.push_str("\\012"),
            '\\' => escaped.push_str("\\134"),
            c => escaped.push(c),
        }
    }
    table.lines().any(|line| line.split(' ').nth(4) == Some(escaped.as_str()))
}

/// A mount's result, with a target that no longer exists (`ENOENT`) taken as nothing to do: the
/// default value (`()`, or `false` for "not mounted").
fn gone_or<T: Default>(result: nix::Result<T>) -> nix::Result<T> {
    match result {
        Err(nix::Error::ENOENT) => Ok(T::default()),
        other => other,
    }
}

/// Covers `dir` with an empty tmpfs and puts back `shown` (places inside it): each held before
/// the cover and bound back with the mounts on and under it (a writable root, a protected
/// path), a symbolic link made again as it reads, the directories on the way made empty. A
/// name that is gone by now is left out.
fn filter_dir(dir: &Path, shown: &[PathBuf]) -> Result<(), HelperError> {
    let fail =
        |what: String| move |e: nix::Error| HelperError::MountView { what, source: e.into() };
    enum Back {
        Mount(std::os::fd::OwnedFd, bool),
        Link(PathBuf),
    }
    let mut held: Vec<(&PathBuf, Back)> = Vec::new();
    for entry in shown {
        let Ok(meta) = std::fs::symlink_metadata(entry) else { continue };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(entry) {
                held.push((entry, Back::Link(target)));
            }
            continue;
        }
        match hold(entry) {
            Ok(fd) => held.push((entry, Back::Mount(fd, meta.is_dir()))),
            Err(nix::Error::ENOENT) => {}
            Err(e) => return Err(fail(format!("opening {}", entry.display()))(e)),
        }
    }
    let writable = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("tmpfs"), dir, Some("tmpfs"), writable, Some("mode=0755,size=64k"))
        .map_err(fail(format!("covering {}", dir.display())))?;
    for (entry, back) in &held {
        let io = |what: &str| {
            let what = format!("{what} {}", entry.display());
            move |source: std::io::Error| HelperError::MountView { what, source }
        };
        if let Some(parent) = entry.parent() {
            std::fs::create_dir_all(parent).map_err(io("making the directories to"))?;
        }
        match back {
            Back::Link(target) => {
                std::os::unix::fs::symlink(target, entry).map_err(io("making the link"))?;
            }
            Back::Mount(fd, is_dir) => {
                if *is_dir {
                    std::fs::create_dir(entry).map_err(io("making the mount point"))?;
                } else {
                    std::fs::File::create(entry).map_err(io("making the mount point"))?;
                }
                bind_held(fd, entry, MsFlags::MS_BIND | MsFlags::MS_REC)
                    .map_err(fail(format!("putting back {}", entry.display())))?;
            }
        }
    }
    set_read_only(dir, Recursion::Single)
}

/// `unshare(CLONE_NEWNS | extra)`, with a user namespace mapping the caller's own ids when that
/// alone is not allowed (an unprivileged caller, or root without CAP_SYS_ADMIN).
fn enter_namespace(extra: CloneFlags) -> Result<(), NoMountView> {
    if unshare(CloneFlags::CLONE_NEWNS | extra).is_ok() {
        return Ok(());
    }
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | extra)
        .map_err(|errno| NoMountView::Unshare(errno as i32))?;
    map_own_ids(uid, gid).map_err(|(file, e)| NoMountView::MapIds {
        file,
        errno: e.raw_os_error().unwrap_or(libc::EIO),
    })
}

/// Maps the caller's own `uid` and `gid` (and nothing else) in the user namespace this
/// process has just entered, with `setgroups` denied as an unprivileged mapping needs. On
/// failure, the file that could not be written and why.
pub(crate) fn map_own_ids(
    uid: libc::uid_t,
    gid: libc::gid_t,
) -> Result<(), (&'static str, std::io::Error)> {
    let write =
        |file: &'static str, text: String| std::fs::write(file, text).map_err(|e| (file, e));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

fn bind(path: &Path) -> nix::Result<()> {
    mount(Some(path), path, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
}

#[cfg(test)]
#[path = "mount_view_tests.rs"]
mod tests;
