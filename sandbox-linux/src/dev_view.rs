//! The sandbox's `/dev`.
//!
//! Where the mount view is built, `/dev` is a read-only tmpfs of the sandbox's own holding only
//! the ordinary devices (bound from the host's), the terminals the command was handed, the
//! usual links, and private `pts` and `shm` instances: an allow-list, so no disk, console, other
//! terminal or other device of the host's is there, whatever kinds the machine has. Where the
//! host's `/dev` has to stay (no mount view, a place there the policy names), its raw disks are
//! covered and every other device and directory is left out of the read rights
//! ([`host_dev_hidden`]). Device nodes open nowhere else in the view (the mount view turns them
//! off on every other mount).

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use crate::binds::{allow_devices, bind_held, hold, set_read_only};
use crate::error::HelperError;
use crate::landlock_rules::DevPts;
use crate::sys::Recursion;

/// The device nodes the sandbox's `/dev` holds, bound from the host's: the ones any program
/// may expect, which read nothing of the machine's. Everything else the host has there is left
/// out: raw disks, but also the consoles' screens (`/dev/vcs*`), input devices, hardware and
/// management devices — a root caller keeps uid 0, which owns most of them, and a list of what
/// to hide would miss the next kind.
const ORDINARY_DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// The links the sandbox's `/dev` holds, as the host's usually read: new terminals come from the
/// private devpts instance next to them, the standard streams from `/proc`.
const DEV_LINKS: &[(&str, &str)] = &[
    ("ptmx", "pts/ptmx"),
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
];

/// What decides whether the sandbox can have a `/dev` of its own.
pub(crate) struct DevUse<'a> {
    /// The writable roots (canonical).
    pub roots: &'a [PathBuf],
    /// Where the command starts (canonical): the policy's and the command's working directory.
    pub cwds: &'a [PathBuf],
    /// The UNIX sockets the policy lets the command reach, as the policy names them.
    pub sockets: &'a [PathBuf],
}

/// Whether the sandbox gets a `/dev` of its own: `/dev` is a directory; no writable root is
/// `/dev` or holds it (covering it would take away what the policy lets the command write);
/// the command does not start in `/dev`; and no socket the policy allows is named there (the
/// user asked for that place of the host's `/dev`, whatever it is). Otherwise the host's `/dev`
/// stays, its raw disks covered and the rest of its devices unreadable ([`host_dev_hidden`]).
pub(crate) fn own_dev_possible(using: &DevUse<'_>) -> bool {
    let dev = Path::new("/dev");
    std::fs::symlink_metadata(dev).is_ok_and(|meta| meta.is_dir())
        && !using.roots.iter().any(|root| dev.starts_with(root))
        && !using.cwds.iter().any(|cwd| cwd.starts_with(dev))
        && !using.sockets.iter().any(|socket| {
            socket.starts_with(dev)
                || std::fs::canonicalize(socket).is_ok_and(|real| real.starts_with(dev))
        })
}

/// The places of the host's `/dev` that its replacement keeps besides the ordinary devices:
/// the writable roots that lie there (one inside another comes with it), and the system log's
/// socket (`/dev/log`, which the command could reach before as any socket).
pub(crate) fn own_dev_kept(roots: &[PathBuf]) -> Vec<PathBuf> {
    let dev = Path::new("/dev");
    let mut kept: Vec<PathBuf> =
        roots.iter().filter(|p| p.starts_with(dev) && *p != dev).cloned().collect();
    kept.sort();
    kept.dedup();
    let nested = |p: &PathBuf| kept.iter().any(|other| other != p && p.starts_with(other));
    let mut kept: Vec<PathBuf> = kept.iter().filter(|p| !nested(p)).cloned().collect();
    kept.push(dev.join("log"));
    kept
}

/// What is hidden where `/dev` is the host's (a terminal handed over, no mount view, a place
/// there the policy names), found in one `getdents` pass of it (the entry types come from the
/// directory).
pub(crate) struct HostDevHidden {
    /// Raw disks, covered by the mount view with `/dev/null` and left out of the read rights:
    /// every block device, the SCSI and NVMe generic character devices (`sg*`, `ng*`) and
    /// `/dev/bsg` (SCSI commands to any disk). A root caller keeps uid 0 inside the sandbox,
    /// and uid 0 owns these nodes, so without capabilities it could still read a whole disk and
    /// with it every hidden secret. Only nodes this caller can read are listed (every one for
    /// root, usually none for anyone else), so unprivileged runs pay no mount.
    pub covered: Vec<PathBuf>,
    /// The rest, left out of the read rights alone (no stand-in, no mount): every character
    /// device this caller can read but the ordinary ones, `/dev/ptmx` and the terminals on fds
    /// 0-2 (other terminals and consoles — `/dev/tty1` reads what is typed there, `/dev/vcs*`
    /// what they show — serial lines, input, hardware devices), and every directory but `shm`
    /// and a private `pts` (`/dev/input`, `/dev/snd`, `/dev/bus/usb`: what is in them is
    /// readable by a group or a seat's ACL as often as by root; the host's `pts` holds the
    /// user's other terminals, whose input a read would take).
    pub unreadable: Vec<PathBuf>,
}

/// [`HostDevHidden`] for this caller, with `pts` the devpts instance `/dev/pts` will show.
pub(crate) fn host_dev_hidden(pts: DevPts) -> HostDevHidden {
    use std::os::unix::fs::FileTypeExt;
    let mut hidden = HostDevHidden { covered: Vec::new(), unreadable: Vec::new() };
    let Ok(entries) = std::fs::read_dir("/dev") else { return hidden };
    let handed = handed_terminals();
    let readable = |path: &Path| nix::unistd::access(path, nix::unistd::AccessFlags::R_OK).is_ok();
    // Handed no terminal, `/dev/tty` (the caller's controlling terminal) is no ordinary device.
    let controlling: &[&str] = if handed.is_empty() { &["ptmx"] } else { &["ptmx", "tty"] };
    for entry in entries.filter_map(Result::ok) {
        let Ok(kind) = entry.file_type() else { continue };
        let name = entry.file_name();
        let path = entry.path();
        let bytes = name.as_bytes();
        let generic = bytes.starts_with(b"sg") || bytes.starts_with(b"ng");
        if (kind.is_block_device() || (kind.is_char_device() && generic)) && readable(&path) {
            hidden.covered.push(path.clone());
        }
        if kind.is_dir() && name == "bsg" {
            hidden.covered.push(path.clone());
        }
        let ordinary = ORDINARY_DEVICES
            .iter()
            .filter(|name| **name != "tty")
            .chain(controlling)
            .any(|kept| name == *kept);
        let device =
            kind.is_char_device() && !ordinary && !handed.contains(&path) && readable(&path);
        let private_pts = name == "pts" && pts == DevPts::Private;
        let directory = kind.is_dir() && name != "shm" && !private_pts;
        if device || directory {
            hidden.unreadable.push(path);
        }
    }
    hidden
}

/// The terminals on fds 0-2, by the names their links in `/proc/self/fd` give.
fn handed_terminals() -> Vec<PathBuf> {
    let terminals = stdio_terminals();
    (0..3)
        .filter(|&fd| terminals[fd])
        .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .collect()
}

/// The `terminals` handed on (descriptors), each once, held (`O_PATH`) by their names in this namespace's copy
/// of the host's `/dev` (a descriptor of the caller's namespace cannot be bound here), each with
/// the name it gets in the sandbox's `/dev`: its host name with `/` as `-` below `/dev`
/// (`/dev/pts/3` is `/dev/pts-3`: the private devpts instance has its own `3`), else
/// `terminal-N`. `ttyname` finds it there by its device and inode when `/dev/pts/N` is not it. A
/// name that no longer leads to the descriptor's own terminal (re-pointed on the host) is
/// skipped: the command keeps the terminal on its descriptors only.
fn handed_terminals_held(terminals: &[libc::c_int]) -> Vec<(OwnedFd, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<(u64, u64)> = Vec::new();
    let mut held = Vec::new();
    for &fd in terminals {
        let is_terminal = crate::sys::is_terminal(fd);
        let link = format!("/proc/self/fd/{fd}");
        let Ok(meta) = std::fs::metadata(&link) else { continue };
        let identity = (meta.dev(), meta.ino());
        if !is_terminal || seen.contains(&identity) {
            continue;
        }
        seen.push(identity);
        let Ok(name) = std::fs::read_link(&link) else { continue };
        let Ok(path_fd) = hold(&name) else { continue };
        let same =
            nix::sys::stat::fstat(&path_fd).is_ok_and(|st| (st.st_dev, st.st_ino) == identity);
        if !same {
            continue;
        }
        held.push((path_fd, terminal_place(fd, &name)));
    }
    held
}

/// The name the sandbox's `/dev` gives the terminal on `fd`, whose host name is `name`: its host
/// name with `/` as `-` below `/dev`, else (or where that is a name the sandbox's `/dev` uses
/// itself) `terminal-N`.
pub(crate) fn terminal_place(fd: i32, name: &Path) -> PathBuf {
    let dev = Path::new("/dev");
    let below = name.strip_prefix(dev).ok().and_then(Path::to_str).map(|s| s.replace('/', "-"));
    let place = below
        .filter(|below| {
            !(ORDINARY_DEVICES.contains(&below.as_str())
                || DEV_LINKS.iter().any(|(link, _)| link == below)
                || matches!(below.as_str(), "pts" | "shm" | "log" | ""))
        })
        .unwrap_or_else(|| format!("terminal-{fd}"));
    dev.join(place)
}

/// Whether fds 0, 1 and 2 are terminals.
fn stdio_terminals() -> [bool; 3] {
    use std::io::IsTerminal;
    [
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    ]
}

/// Keeps the host's `/dev` (and its devpts instance) usable where it stays: the mount view
/// turned device nodes off everywhere, and `/dev` is made a mount of its own first where it was
/// part of the root's.
pub(crate) fn host_dev_usable() -> Result<(), HelperError> {
    let dev = Path::new("/dev");
    if !dev.is_dir() {
        return Ok(());
    }
    let not_a_mount = |error: &HelperError| {
        matches!(error, HelperError::MountView { source, .. }
            if source.raw_os_error() == Some(libc::EINVAL))
    };
    match allow_devices(dev) {
        Err(error) if not_a_mount(&error) => {
            mount(Some(dev), dev, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
                .map_err(|e| HelperError::MountView {
                what: "making /dev a mount of its own".into(),
                source: e.into(),
            })?;
            allow_devices(dev)?;
        }
        other => other?,
    }
    match allow_devices(&dev.join("pts")) {
        // Part of `/dev`'s mount, or absent.
        Err(HelperError::MountView { source, .. })
            if matches!(source.raw_os_error(), Some(libc::EINVAL | libc::ENOENT)) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Covers `/dev` with a tmpfs that holds the ordinary devices (bound from the host's), the
/// `terminals` handed on ([`handed_terminals_held`]), the usual links, empty `pts` and `shm`
/// for the private instances mounted there next, and `kept` (places of the host's `/dev`, with
/// the mounts on them) bound back; then makes it read-only. Only these devices, the terminals
/// and what a writable root there holds open as devices. A device or kept place the host does
/// not have is left out.
pub(crate) fn own_dev(kept: &[PathBuf], terminals: &[libc::c_int]) -> Result<(), HelperError> {
    let dev = Path::new("/dev");
    let fail =
        |what: String| move |e: nix::Error| HelperError::MountView { what, source: e.into() };
    let io = |what: String| move |source: std::io::Error| HelperError::MountView { what, source };
    let mut held: Vec<(PathBuf, OwnedFd, bool)> = Vec::new();
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut places: Vec<PathBuf> =
        ORDINARY_DEVICES.iter().map(|name| dev.join(name)).chain(kept.iter().cloned()).collect();
    places.sort();
    places.dedup();
    for place in places {
        let Ok(meta) = std::fs::symlink_metadata(&place) else { continue };
        if meta.file_type().is_symlink() {
            // Made again as it reads (`/dev/log` → the journal's socket); what it leads to is
            // judged where it leads.
            if let Ok(target) = std::fs::read_link(&place) {
                links.push((place, target));
            }
            continue;
        }
        match hold(&place) {
            Ok(fd) => held.push((place, fd, meta.is_dir())),
            Err(nix::Error::ENOENT) => {}
            Err(e) => return Err(fail(format!("opening {}", place.display()))(e)),
        }
    }
    // Held while the host's `/dev` still shows, where the descriptors' links lead.
    let terminals = handed_terminals_held(terminals);
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
    mount(Some("tmpfs"), dev, Some("tmpfs"), flags, Some("mode=0755,size=64k"))
        .map_err(fail("covering /dev".into()))?;
    for dir in ["pts", "shm"] {
        std::fs::create_dir(dev.join(dir)).map_err(io(format!("making /dev/{dir}")))?;
    }
    let made_links = DEV_LINKS.iter().map(|(name, target)| (dev.join(name), PathBuf::from(target)));
    for (place, target) in made_links.chain(links) {
        std::os::unix::fs::symlink(&target, &place)
            .map_err(io(format!("making the link {}", place.display())))?;
    }
    for (place, fd, is_dir) in &held {
        if let Some(parent) = place.parent().filter(|parent| *parent != dev) {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("making the directories to {}", place.display())))?;
        }
        let made = if *is_dir {
            // `pts` or `shm` is made already: a root there goes under the private instance.
            std::fs::create_dir(place).or_else(|error| match error.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(error),
            })
        } else {
            std::fs::File::create(place).map(drop)
        };
        made.map_err(io(format!("making the mount point {}", place.display())))?;
        bind_held(fd, place, MsFlags::MS_BIND | MsFlags::MS_REC)
            .map_err(fail(format!("putting back {}", place.display())))?;
        if ORDINARY_DEVICES.iter().any(|name| dev.join(name) == *place) {
            allow_devices(place)?;
        }
    }
    for (fd, place) in &terminals {
        std::fs::File::create(place)
            .map_err(io(format!("making the mount point {}", place.display())))?;
        bind_held(fd, place, MsFlags::MS_BIND)
            .map_err(fail(format!("binding the terminal at {}", place.display())))?;
        allow_devices(place)?;
    }
    set_read_only(dev, Recursion::Single)
}
