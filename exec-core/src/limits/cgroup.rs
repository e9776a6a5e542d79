//! A cgroup made for one command: created before the command starts (the child joins it
//! between its fork and its exec, so nothing it starts is ever outside), read for the kernel's
//! evidence when the command ends, then emptied and removed.
//!
//! cgroup v2 where its memory and pids controllers are available to cordon (root, at the
//! hierarchy's top: `cordon-PID-N` beside the other top-level groups; unprivileged, in a
//! subtree delegated to it: beside cordon's own leaf in its group); else cgroup v1's memory,
//! pids and cpuacct hierarchies, with a leaf under cordon's own group in each. Anything else
//! is no cgroup: the caller refuses or falls back to rlimits.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cordon_policies::{LimitKey, Limits};

/// Where cordon can make a command's cgroup on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// The cgroup v2 hierarchy mounted here, with memory and pids enabled for its children.
    V2 { root: PathBuf },
    /// cordon's own cgroup v2 group, delegated to the user it runs as: command cgroups are
    /// made in it once cordon has moved itself into a leaf of its own there.
    Delegated { group: PathBuf },
    /// cordon's own group in each v1 hierarchy that has the controller.
    V1 { memory: Option<PathBuf>, pids: Option<PathBuf>, cpuacct: Option<PathBuf> },
}

impl Hierarchy {
    /// What this hierarchy can hold of the tree limits.
    pub fn holds(&self, key: LimitKey) -> bool {
        match (self, key) {
            (
                Hierarchy::V2 { .. } | Hierarchy::Delegated { .. },
                LimitKey::Memory | LimitKey::Pids | LimitKey::Cpu,
            ) => true,
            (Hierarchy::V1 { memory, .. }, LimitKey::Memory) => memory.is_some(),
            (Hierarchy::V1 { pids, .. }, LimitKey::Pids) => pids.is_some(),
            (Hierarchy::V1 { cpuacct, .. }, LimitKey::Cpu) => cpuacct.is_some(),
            (_, LimitKey::FileSize | LimitKey::OpenFiles) => false,
        }
    }

    /// Makes the hierarchy ready for command cgroups (a delegated subtree, once per process:
    /// see `delegated`); nothing to do elsewhere.
    pub fn prepare(&self) -> Result<(), NoCgroup> {
        match self {
            Hierarchy::Delegated { group } => {
                super::delegated::prepare(group).clone().map_err(NoCgroup)
            }
            Hierarchy::V2 { .. } | Hierarchy::V1 { .. } => Ok(()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Hierarchy::V2 { root } => format!("cgroup v2 ({})", root.display()),
            Hierarchy::Delegated { group } => {
                format!("cgroup v2, the subtree delegated to this user ({})", group.display())
            }
            Hierarchy::V1 { .. } => "cgroup v1 (memory, pids and cpuacct hierarchies)".to_owned(),
        }
    }
}

/// This machine's hierarchy for cordon, or why there is none (probed once per process).
pub fn hierarchy() -> &'static Result<Hierarchy, NoCgroup> {
    static PROBED: OnceLock<Result<Hierarchy, NoCgroup>> = OnceLock::new();
    PROBED.get_or_init(probe)
}

/// Where cordon can make a cgroup that only kills (no controllers needed): as root, the first
/// writable cgroup v2 mount, even one without controllers (the unified hierarchy of a host whose
/// controllers are bound to cgroup v1); unprivileged, the delegated subtree of [`hierarchy`].
pub fn kill_hierarchy() -> Option<Hierarchy> {
    static PROBED: OnceLock<Option<Hierarchy>> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            if !nix::unistd::geteuid().is_root() {
                return match hierarchy() {
                    Ok(delegated @ Hierarchy::Delegated { .. }) => Some(delegated.clone()),
                    Ok(_) | Err(_) => None,
                };
            }
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
            mountinfo.lines().find_map(|line| {
                let (left, right) = line.split_once(" - ")?;
                let fields: Vec<&str> = left.split(' ').collect();
                let writable = fields.get(5)?.split(',').all(|option| option != "ro");
                let mount_point = PathBuf::from(fields.get(4)?);
                (right.starts_with("cgroup2 ") && writable)
                    .then_some(Hierarchy::V2 { root: mount_point })
            })
        })
        .clone()
}

/// Why cordon cannot make a command's cgroup here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoCgroup(pub String);

/// The hierarchy, or why there is none, in words.
fn probe() -> Result<Hierarchy, NoCgroup> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| NoCgroup(format!("/proc/self/mountinfo cannot be read: {e}")))?;
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let root = nix::unistd::geteuid().is_root();
    let mut v2_why = None;
    let mut v1 = (None, None, None);
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let fields: Vec<&str> = left.split(' ').collect();
        let (Some(mount_point), Some(options)) = (fields.get(4), fields.get(5)) else { continue };
        let right: Vec<&str> = right.split(' ').collect();
        let read_only = options.split(',').any(|o| o == "ro");
        match right.first() {
            Some(&"cgroup2") => {
                let dir = PathBuf::from(mount_point);
                if !root {
                    let mount_root = fields.get(3).copied().unwrap_or("/");
                    match super::delegated::find(&own, &dir, mount_root) {
                        Ok(group) => return Ok(Hierarchy::Delegated { group }),
                        Err(why) => v2_why = Some(why),
                    }
                    continue;
                }
                let controllers =
                    std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
                let has = |name: &str| controllers.split_whitespace().any(|c| c == name);
                v2_why = Some(if !has("memory") || !has("pids") {
                    format!(
                        "the cgroup v2 hierarchy at {} has no memory and pids controllers \
                         (they are bound to cgroup v1)",
                        dir.display()
                    )
                } else if read_only {
                    format!("the cgroup v2 hierarchy at {} is mounted read-only", dir.display())
                } else {
                    return Ok(Hierarchy::V2 { root: dir });
                });
            }
            Some(&"cgroup") if root && !read_only => {
                let supers = right.get(2).copied().unwrap_or_default();
                for controller in supers.split(',') {
                    let slot = match controller {
                        "memory" => &mut v1.0,
                        "pids" => &mut v1.1,
                        "cpuacct" => &mut v1.2,
                        _ => continue,
                    };
                    *slot = own_v1_group(&own, controller, Path::new(mount_point));
                }
            }
            Some(_) | None => {}
        }
    }
    match v1 {
        (None, None, _) if !root => Err(NoCgroup(v2_why.unwrap_or_else(|| {
            "cordon runs unprivileged and no cgroup v2 hierarchy is mounted: only root may \
             create cgroups here"
                .to_owned()
        }))),
        (None, None, _) => Err(NoCgroup(v2_why.unwrap_or_else(|| {
            "no cgroup hierarchy with memory and pids controllers is mounted".to_owned()
        }))),
        (memory, pids, cpuacct) => Ok(Hierarchy::V1 { memory, pids, cpuacct }),
    }
}

/// cordon's own group in the v1 hierarchy of `controller` mounted at `mount_point`.
fn own_v1_group(own: &str, controller: &str, mount_point: &Path) -> Option<PathBuf> {
    own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == controller).then(|| {
            let dir = mount_point.join(path.trim_start_matches('/'));
            dir.is_dir().then_some(dir)
        })?
    })
}

/// The name every command cgroup starts with, then cordon's pid and a counter.
pub(super) const PREFIX: &str = "cordon-";

/// One command's cgroup. Dropping it kills what is left in it and removes it.
#[derive(Debug)]
pub struct CommandCgroup {
    /// The leaf in each hierarchy (one for v2).
    dirs: Vec<PathBuf>,
    version: Version,
    /// `cgroup.procs` of each leaf, for the child to join by writing `0`.
    procs: Vec<OwnedFd>,
    /// `cgroup.kill` of the v2 leaf, where the kernel has it: what an unsandboxed command's
    /// keeper writes `1` to, to end the tree whole even when cordon is gone.
    kill_file: Option<OwnedFd>,
    /// The v2 leaf itself, opened as a directory: what `clone3(CLONE_INTO_CGROUP)` starts a
    /// child in, with no migration (a migration waits for an RCU grace period).
    dir_file: Option<OwnedFd>,
    limits: Limits,
    /// Set when the CPU watch ended the command.
    cpu_exceeded: AtomicBool,
    removed: AtomicBool,
}

/// Whether making a command cgroup turns on the controllers of its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controllers {
    /// Memory and pids, for the tree limits.
    Enabled,
    /// As they are: a cgroup that only kills needs none.
    Untouched,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V2,
    V1,
}

impl CommandCgroup {
    /// A cgroup that holds an unsandboxed command's tree only to kill it whole: no limits and
    /// no controllers, cgroup v2 only (`cgroup.kill`; v1 cannot kill a group at once).
    pub fn kill_only(hierarchy: &Hierarchy) -> io::Result<CommandCgroup> {
        match hierarchy {
            Hierarchy::V2 { .. } | Hierarchy::Delegated { .. } => {
                Self::make(hierarchy, &Limits::default(), Controllers::Untouched)
            }
            Hierarchy::V1 { .. } => Err(io::Error::other("cgroup v1 cannot kill a group whole")),
        }
    }

    /// Makes the cgroup for `limits` (the tree limits: memory, pids, cpu) in `hierarchy`.
    pub fn create(hierarchy: &Hierarchy, limits: &Limits) -> io::Result<CommandCgroup> {
        Self::make(hierarchy, limits, Controllers::Enabled)
    }

    fn make(
        hierarchy: &Hierarchy,
        limits: &Limits,
        controllers: Controllers,
    ) -> io::Result<CommandCgroup> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name =
            format!("{PREFIX}{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let (version, parents): (Version, Vec<(&Path, LimitKey)>) = match hierarchy {
            Hierarchy::V2 { root } => (Version::V2, vec![(root.as_path(), LimitKey::Memory)]),
            Hierarchy::Delegated { group } => {
                hierarchy.prepare().map_err(io::Error::other)?;
                (Version::V2, vec![(group.as_path(), LimitKey::Memory)])
            }
            Hierarchy::V1 { memory, pids, cpuacct } => (
                Version::V1,
                [(memory, LimitKey::Memory), (pids, LimitKey::Pids), (cpuacct, LimitKey::Cpu)]
                    .into_iter()
                    .filter(|(_, key)| limits.get(*key).is_some())
                    .filter_map(|(dir, key)| dir.as_deref().map(|dir| (dir, key)))
                    .collect(),
            ),
        };
        let mut cgroup = CommandCgroup {
            dirs: Vec::new(),
            version,
            procs: Vec::new(),
            kill_file: None,
            dir_file: None,
            limits: *limits,
            cpu_exceeded: AtomicBool::new(false),
            removed: AtomicBool::new(false),
        };
        for (parent, _) in &parents {
            sweep_stale(parent);
            if version == Version::V2 && controllers == Controllers::Enabled {
                enable_controllers(parent)?;
            }
            let dir = parent.join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| with_path(e, "cannot create the cgroup", &dir))?;
            cgroup.dirs.push(dir);
        }
        cgroup.write_limits()?;
        for dir in &cgroup.dirs {
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| with_path(e, "cannot open", &dir.join("cgroup.procs")))?;
            cgroup.procs.push(OwnedFd::from(procs));
        }
        if version == Version::V2 {
            let kill = cgroup.dirs.first().map(|dir| dir.join("cgroup.kill"));
            cgroup.kill_file = kill
                .and_then(|path| std::fs::OpenOptions::new().write(true).open(path).ok())
                .map(OwnedFd::from);
            cgroup.dir_file = cgroup
                .dirs
                .first()
                .and_then(|dir| std::fs::File::open(dir).ok())
                .map(OwnedFd::from);
        }
        tracing::debug!(dirs = ?cgroup.dirs, "command cgroup created");
        Ok(cgroup)
    }

    fn write_limits(&self) -> io::Result<()> {
        let write = |file: &str, value: String| -> io::Result<()> {
            let Some(dir) = self.dirs.iter().find(|d| d.join(file).exists()) else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no cgroup file {file} (is its controller enabled?)"),
                ));
            };
            write_file(&dir.join(file), &value)
        };
        match self.version {
            Version::V2 => {
                if let Some(memory) = self.limits.memory {
                    write("memory.max", memory.to_string())?;
                    // Swap would let the tree use more than the limit, only slower.
                    if self.dirs.iter().any(|d| d.join("memory.swap.max").exists()) {
                        write("memory.swap.max", "0".into())?;
                    }
                    // The whole tree ends at once, not one process picked by the OOM killer.
                    write("memory.oom.group", "1".into())?;
                }
                if let Some(pids) = self.limits.pids {
                    write("pids.max", pids.to_string())?;
                }
            }
            Version::V1 => {
                if let Some(memory) = self.limits.memory {
                    write("memory.limit_in_bytes", memory.to_string())?;
                    if self.dirs.iter().any(|d| d.join("memory.memsw.limit_in_bytes").exists()) {
                        write("memory.memsw.limit_in_bytes", memory.to_string())?;
                    }
                }
                if let Some(pids) = self.limits.pids {
                    write("pids.max", pids.to_string())?;
                }
            }
        }
        Ok(())
    }

    /// The `cgroup.procs` descriptors a child writes `0` to, joining every leaf.
    pub fn join_descriptors(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The `cgroup.kill` descriptor, where the kernel has one.
    pub fn kill_descriptor(&self) -> Option<RawFd> {
        self.kill_file.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The v2 leaf's directory descriptor, for `clone3(CLONE_INTO_CGROUP)`.
    pub fn birth_descriptor(&self) -> Option<RawFd> {
        self.dir_file.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The CPU time of the whole tree so far.
    fn cpu_used(&self) -> Option<Duration> {
        match self.version {
            Version::V2 => {
                let stat = std::fs::read_to_string(self.dirs.first()?.join("cpu.stat")).ok()?;
                let usec = field(&stat, "usage_usec")?;
                Some(Duration::from_micros(usec))
            }
            Version::V1 => {
                let dir = self.dirs.iter().find(|d| d.join("cpuacct.usage").exists())?;
                let text = std::fs::read_to_string(dir.join("cpuacct.usage")).ok()?;
                Some(Duration::from_nanos(text.trim().parse().ok()?))
            }
        }
    }

    /// Watches the tree's CPU time until it passes the cpu limit, then kills the tree and
    /// returns; never returns without a cpu limit.
    pub async fn watch_cpu(&self) {
        let Some(limit) = self.limits.cpu.map(Duration::from_secs) else {
            return std::future::pending().await;
        };
        loop {
            let used = self.cpu_used().unwrap_or_default();
            if used >= limit {
                tracing::debug!(?used, "the command's tree passed its cpu limit");
                self.cpu_exceeded.store(true, Ordering::Relaxed);
                self.kill();
                return;
            }
            // The tree cannot use more than every CPU for the wait: sleep for a share of what
            // is left, between 20 ms and a second.
            let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            let left = (limit - used) / u32::try_from(cpus).unwrap_or(1).max(1);
            let pause = left.clamp(Duration::from_millis(20), Duration::from_secs(1));
            tokio::time::sleep(pause).await;
        }
    }

    /// The limit the kernel says was reached, if any: the OOM killer in the group, a refused
    /// fork, the CPU watch.
    pub fn exceeded(&self) -> Option<LimitKey> {
        if self.cpu_exceeded.load(Ordering::Relaxed) {
            return Some(LimitKey::Cpu);
        }
        let count = |file: &str, key: &str| -> u64 {
            self.dirs
                .iter()
                .filter_map(|d| std::fs::read_to_string(d.join(file)).ok())
                .find_map(|text| field(&text, key))
                .unwrap_or(0)
        };
        let oom = match self.version {
            Version::V2 => count("memory.events", "oom_kill"),
            Version::V1 => count("memory.oom_control", "oom_kill"),
        };
        if self.limits.memory.is_some() && oom > 0 {
            return Some(LimitKey::Memory);
        }
        if self.limits.pids.is_some() && count("pids.events", "max") > 0 {
            return Some(LimitKey::Pids);
        }
        None
    }

    /// Kills every process in the cgroup (`cgroup.kill` where the kernel has it, else each
    /// listed process until none is left).
    pub fn kill(&self) {
        for dir in &self.dirs {
            if self.version == Version::V2 && write_file(&dir.join("cgroup.kill"), "1").is_ok() {
                continue;
            }
            // Forks can race with the listing: list again until it is empty (the pids limit,
            // where set, bounds the race; time, not a count of rounds, bounds this loop).
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while std::time::Instant::now() < deadline {
                let listed = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                let pids: Vec<i32> = listed.lines().filter_map(|l| l.trim().parse().ok()).collect();
                if pids.is_empty() {
                    break;
                }
                for pid in pids {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Kills what is left and removes the cgroup. Waits (briefly) for the killed processes to
    /// leave it: a cgroup with a process in it cannot be removed.
    pub fn remove(&self) {
        if self.removed.swap(true, Ordering::Relaxed) {
            return;
        }
        self.kill();
        for dir in &self.dirs {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(e) if Instant::now() >= deadline => {
                        tracing::warn!(dir = %dir.display(), "cannot remove the cgroup: {e}");
                        break;
                    }
                    Err(_) => {
                        self.kill();
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            }
        }
        tracing::debug!(dirs = ?self.dirs, "command cgroup removed");
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Turns on the memory, pids and cpu controllers for `parent`'s children (cpu only where the
/// kernel offers it: its `cpu.stat` usage is there without it).
pub(super) fn enable_controllers(parent: &Path) -> io::Result<()> {
    let file = parent.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&file).unwrap_or_default();
    for controller in ["memory", "pids"] {
        if !enabled.split_whitespace().any(|c| c == controller) {
            write_file(&file, &format!("+{controller}"))
                .map_err(|e| with_path(e, &format!("cannot enable {controller} in"), &file))?;
        }
    }
    Ok(())
}

/// Removes the cgroups earlier cordons left when they were killed (their pid is gone), and
/// kills what was still in them.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let stale = CommandCgroup {
            dirs: vec![entry.path()],
            version: if parent.join("cgroup.controllers").exists() {
                Version::V2
            } else {
                Version::V1
            },
            procs: Vec::new(),
            kill_file: None,
            dir_file: None,
            limits: Limits::default(),
            cpu_exceeded: AtomicBool::new(false),
            removed: AtomicBool::new(false),
        };
        tracing::debug!(dir = %entry.path().display(), "removing a stale command cgroup");
        stale.remove();
    }
}

/// `key N` from a flat-keyed cgroup file.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

pub(super) fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(value.as_bytes())
}

fn with_path(error: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_keyed_files_are_read_by_name() {
        let events = "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 1\n";
        assert_eq!(field(events, "oom_kill"), Some(1));
        assert_eq!(field(events, "max"), Some(3));
        assert_eq!(field("usage_usec 1500\nuser_usec 1000\n", "usage_usec"), Some(1500));
        assert_eq!(field(events, "missing"), None);
    }

    #[test]
    fn the_own_v1_group_is_found_by_its_controller() {
        let own = "4:memory:/\n8:pids:/\n2:cpu,cpuacct:/\n0::/\n";
        assert_eq!(own_v1_group(own, "cpuacct", Path::new("/")), Some(PathBuf::from("/")));
        assert_eq!(own_v1_group(own, "blkio", Path::new("/")), None);
    }
}
