//! Which entries of the home directories the allow-list hides, and which places it grants
//! although they lie in a hidden entry.
//!
//! Kept readable whatever the list says: an entry that is or lies in a writable root or the
//! workspace (a workspace at `~/.dotfiles`, an `--add-dir ~/.config`). An entry that holds one
//! (`--add-dir ~/.tool/cache`) stays hidden but for that place.
//! Granted besides the list, unless a hidden path is there: where an allowed link leads (a
//! `~/.gitconfig` kept by a dotfile manager), and the places the caller names — the files the
//! user's global git configuration includes, the `PATH` directories, `--unhide` — each only
//! when no link on the way to it lies where the command can write (it could re-point the link
//! at a secret before the next run).
//!
//! A hidden entry that is a link hides where it leads too, when that lies in a home directory
//! (a `~/.aws` that a dotfile manager keeps at `~/dotfiles/aws`); a link out of the home
//! directories hides its name only: where it leads is not the list's to judge.
//!
//! Pure: the caller hands in how to list a directory and resolve a path.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::hidden_paths::Relocations;
use crate::home_list::{HOME_CONTAINERS, RELOCATED_CONTAINERS, home_entry_readable};

/// How the plan looks at the file system.
pub trait HomeFileSystem {
    /// The path with every symbolic link resolved, when it exists.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
    /// The names in `dir` and what each is (a final link not followed); `None` when it cannot
    /// be read.
    fn entries(&self, dir: &Path) -> Option<Vec<(OsString, HomeEntryKind)>>;
    /// What the symbolic link at `path` says, when `path` is one.
    fn link_target(&self, path: &Path) -> Option<PathBuf>;
}

/// What an entry of a container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HomeEntryKind {
    Directory,
    Link,
    /// A file, socket, FIFO or device.
    Other,
}

/// How many links a path is followed through (the kernel's own limit for a path walk).
const MAX_HOPS: usize = 40;

/// `path` with every symbolic link on the way resolved, as the kernel resolves it, and the
/// links it went through; `None` when it does not resolve.
pub fn resolve_with_links(
    path: &Path,
    fs: &impl HomeFileSystem,
) -> Option<(PathBuf, Vec<PathBuf>)> {
    let mut current = crate::lexically_normal(path);
    let mut links = Vec::new();
    'walk: loop {
        let mut prefix = PathBuf::from("/");
        let parts: Vec<std::path::Component<'_>> = current.components().skip(1).collect();
        for (index, part) in parts.iter().enumerate() {
            prefix.push(part);
            let Some(target) = fs.link_target(&prefix) else { continue };
            if links.len() >= MAX_HOPS {
                return None;
            }
            links.push(prefix.clone());
            let base = prefix.parent().unwrap_or(Path::new("/")).to_path_buf();
            let mut next = base.join(target);
            next.extend(parts.iter().skip(index + 1));
            current = crate::lexically_normal(&next);
            continue 'walk;
        }
        return fs.canonical(&current).filter(|real| *real == current).map(|real| (real, links));
    }
}

/// What the plan starts from. Every path absolute.
#[derive(Debug, Clone, Copy)]
pub struct HomeReadsInput<'a> {
    /// The home directories (`$HOME`, and the account's when that is another).
    pub homes: &'a [PathBuf],
    /// The relocating variables as set (the `XDG_*` ones move containers).
    pub relocations: &'a Relocations,
    /// The places the command works in (the writable roots, the workspace): an entry that is
    /// or lies in one stays readable; one that holds one is hidden but for it.
    pub keep: &'a [PathBuf],
    /// Places to grant although they may lie in a hidden entry.
    pub grant: &'a [PathBuf],
    /// Places to grant only when they lie in the same hidden entry as the file beside them
    /// (what a file a command may once have written names: nothing it could not read then).
    pub grant_beside: &'a [(PathBuf, PathBuf)],
    /// Paths hidden whatever the list says (the catalogue): never granted, nor what holds one.
    pub hidden: &'a [PathBuf],
}

/// The plan: real paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeReads {
    /// Entries the list hides (and where the hidden links among them lead).
    pub hidden: Vec<PathBuf>,
    /// Places readable although a hidden entry holds them.
    pub granted: Vec<PathBuf>,
    /// The hidden entries that hold a granted place: an empty stand-in would cover the place
    /// too, so only read rights can hide them.
    pub holding_granted: Vec<PathBuf>,
    /// The hidden entries that are files directly in a home directory (what a start-up file
    /// may source).
    pub top_files: Vec<PathBuf>,
    /// The hidden entries that are symbolic links, as their directories list them (sorted): a
    /// link is read where it leads, so read rights and covers leave the name alone.
    pub links: Vec<PathBuf>,
    /// Each container (a home directory among them), with its entries the list leaves
    /// readable: where a stand-in per hidden entry would cost more, the container can be
    /// covered whole and these put back.
    pub containers: Vec<ContainerView>,
}

/// A container's entries as the list leaves them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerView {
    pub dir: PathBuf,
    /// The entries that stay readable.
    pub shown: Vec<PathBuf>,
    /// How many entries are hidden.
    pub hidden: usize,
}

/// Plans the list's hiding.
pub fn plan_home_reads(input: &HomeReadsInput<'_>, fs: &impl HomeFileSystem) -> HomeReads {
    let homes: Vec<PathBuf> = input.homes.iter().filter_map(|home| fs.canonical(home)).collect();
    // Kept readable: an entry that is or lies in a kept place. An entry that holds one is
    // hidden but for the place itself (and what leads down to it, which needs no read right).
    let kept = |path: &Path| input.keep.iter().any(|keep| path.starts_with(keep));
    let held_inside = |path: &Path| -> Vec<PathBuf> {
        input.keep.iter().filter(|keep| keep.starts_with(path) && *keep != path).cloned().collect()
    };
    let in_home = |path: &Path| homes.iter().any(|home| path.starts_with(home));
    let mut hidden: BTreeSet<PathBuf> = BTreeSet::new();
    let mut top_files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut links: BTreeSet<PathBuf> = BTreeSet::new();
    let mut links_allowed: Vec<PathBuf> = Vec::new();
    let mut keep_granted: Vec<PathBuf> = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut views: Vec<ContainerView> = Vec::new();
    let containers = containers(&homes, input.relocations);
    for (dir, logical) in &containers {
        let Some(real) = fs.canonical(dir) else { continue };
        // A container inside a writable root is the command's; one seen twice (a relocation to
        // the default place) is planned once.
        if kept(&real) || !seen.insert(real.clone()) {
            continue;
        }
        let Some(entries) = fs.entries(&real) else { continue };
        let mut view = ContainerView { dir: real.clone(), ..ContainerView::default() };
        for (name, kind) in entries {
            let link = kind == HomeEntryKind::Link;
            let spelled = name.to_string_lossy();
            let entry = real.join(&name);
            if *logical == "~" && !spelled.starts_with('.') {
                view.shown.push(entry);
                continue;
            }
            if home_entry_readable(&format!("{logical}/{spelled}")) {
                if link {
                    links_allowed.push(entry.clone());
                }
                view.shown.push(entry);
                continue;
            }
            let target = if link { fs.canonical(&entry) } else { None };
            if kept(&entry) || target.as_deref().is_some_and(kept) {
                view.shown.push(entry);
                continue;
            }
            keep_granted.extend(held_inside(&entry));
            if let Some(target) = &target {
                keep_granted.extend(held_inside(target));
            }
            if *logical == "~" && kind == HomeEntryKind::Other {
                top_files.insert(entry.clone());
            }
            if link {
                links.insert(entry.clone());
            }
            hidden.insert(entry);
            view.hidden += 1;
            // Where a hidden link leads is hidden too when the list would otherwise leave it
            // readable in a home directory (a dotfile manager's `~/dotfiles/aws`); never a home,
            // a container or an entry the list allows (a link to `~/.cargo`).
            if let Some(target) = target.filter(|target| in_home(target)) {
                if !list_allows(target.as_path(), &homes, &containers, fs) {
                    hidden.insert(target);
                }
            }
        }
        views.push(view);
    }
    let catalogue: Vec<PathBuf> = input
        .hidden
        .iter()
        .map(|path| fs.canonical(path).unwrap_or_else(|| path.clone()))
        .collect();
    let related = |path: &Path, to: &Path| path.starts_with(to) || to.starts_with(path);
    let mut granted: Vec<PathBuf> = Vec::new();
    // A place reached through links is granted only when no link on the way can have been
    // planted or re-pointed by a sandboxed command, in this run or an earlier one: the first
    // at the top of a home directory, in an entry the list allows (and no writable root is
    // in), or in the hidden entry the place itself lies in; every later one in that hidden
    // entry (an allowed entry may have been a workspace once).
    let same_entry = |link: &Path, place: &Path| {
        hidden.iter().any(|entry| link.starts_with(entry) && place.starts_with(entry))
    };
    let trusted_first = |link: &Path, place: &Path| {
        let top = link.parent().is_some_and(|dir| homes.iter().any(|home| home == dir));
        let allowed = list_allows(link, &homes, &containers, fs)
            && !input.keep.iter().any(|keep| keep.starts_with(link) || link.starts_with(keep));
        top || allowed || same_entry(link, place)
    };
    let trusted = |links: &[PathBuf], place: &Path| match links.split_first() {
        None => true,
        Some((first, rest)) => {
            trusted_first(first, place) && rest.iter().all(|link| same_entry(link, place))
        }
    };
    let asked = links_allowed.iter().chain(input.grant).filter_map(|spelled| {
        let (place, links) = resolve_with_links(spelled, fs)?;
        trusted(&links, &place).then_some(place)
    });
    let mut asked: Vec<PathBuf> = asked.collect();
    for (spelled, beside) in input.grant_beside {
        let Some((place, links)) = resolve_with_links(spelled, fs) else { continue };
        if trusted(&links, &place) && same_entry(beside, &place) {
            asked.push(place);
        }
    }
    for place in asked {
        let secret = catalogue.iter().any(|secret| related(&place, secret));
        let holds_hidden = hidden.iter().any(|entry| entry.starts_with(&place) && *entry != place);
        if secret || holds_hidden || granted.contains(&place) {
            continue;
        }
        granted.push(place);
    }
    // A granted entry is readable as a whole; one inside a hidden entry is granted alone.
    hidden.retain(|entry| !granted.contains(entry));
    // The places the command works in, whatever holds them.
    for place in keep_granted {
        if !granted.contains(&place) {
            granted.push(place);
        }
    }
    granted.retain(|place| hidden.iter().any(|entry| place.starts_with(entry)));
    top_files.retain(|file| hidden.contains(file));
    links.retain(|link| hidden.contains(link));
    for view in &mut views {
        let unhidden: Vec<PathBuf> =
            view.shown.iter().filter(|entry| !hidden.contains(*entry)).cloned().collect();
        let regained = granted.iter().filter(|place| place.parent() == Some(&view.dir)).count();
        view.hidden = view.hidden.saturating_sub(regained);
        view.shown = unhidden;
        view.shown
            .extend(granted.iter().filter(|place| place.parent() == Some(&view.dir)).cloned());
        view.shown.sort();
        view.shown.dedup();
    }
    let holding_granted: Vec<PathBuf> = hidden
        .iter()
        .filter(|entry| granted.iter().any(|place| place.starts_with(entry)))
        .cloned()
        .collect();
    granted.sort();
    HomeReads {
        hidden: hidden.into_iter().collect(),
        granted,
        holding_granted,
        top_files: top_files.into_iter().collect(),
        links: links.into_iter().collect(),
        containers: views.into_iter().filter(|view| view.hidden > 0).collect(),
    }
}

/// Whether the list leaves `path` readable: a home directory, a container, an allowed entry or
/// a place inside one. A place in a plain entry of a home is not the list's to vouch for.
fn list_allows(
    path: &Path,
    homes: &[PathBuf],
    containers: &[(PathBuf, &'static str)],
    fs: &impl HomeFileSystem,
) -> bool {
    if homes.iter().any(|home| home == path) {
        return true;
    }
    // The innermost container holding it, and the name of its entry on the way.
    let mut best: Option<(usize, &str, PathBuf)> = None;
    for (dir, logical) in containers {
        let Some(real) = fs.canonical(dir) else { continue };
        if path == real {
            return true;
        }
        if let Ok(rest) = path.strip_prefix(&real) {
            let depth = real.components().count();
            if best.as_ref().is_none_or(|(d, _, _)| depth > *d) {
                best = Some((depth, logical, rest.to_path_buf()));
            }
        }
    }
    let Some((_, logical, rest)) = best else { return false };
    let Some(first) = rest.components().next() else { return true };
    let name = first.as_os_str().to_string_lossy();
    if logical == "~" && !name.starts_with('.') {
        return false;
    }
    home_entry_readable(&format!("{logical}/{name}"))
}

/// Whether a relocating variable's value may stand for a container: never `/`, a system
/// directory, or a place that holds a home directory (which would filter the home through the
/// list of another container's names).
fn usable_relocation(base: &Path, homes: &[PathBuf]) -> bool {
    const SYSTEM: &[&str] = &[
        "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys",
        "/dev", "/boot",
    ];
    const TOP: &[&str] = &["/var", "/opt", "/srv", "/mnt", "/media", "/run", "/tmp", "/nix"];
    base.is_absolute()
        && base.components().count() >= 2
        && !homes.iter().any(|home| home.starts_with(base))
        && !SYSTEM.iter().any(|system| base.starts_with(system))
        && !TOP.iter().any(|top| base == Path::new(top))
}

/// Every container directory of `homes`, where the relocating variables put them too, with its
/// `~/` spelling.
fn containers(homes: &[PathBuf], relocations: &Relocations) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    for home in homes {
        for logical in HOME_CONTAINERS {
            let rest = logical.strip_prefix("~").unwrap_or(logical).trim_start_matches('/');
            out.push((home.join(rest), *logical));
        }
    }
    for (logical, variable) in RELOCATED_CONTAINERS {
        for base in relocations.get(*variable).into_iter().flatten() {
            if usable_relocation(base, homes) {
                out.push((base.clone(), *logical));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "home_reads_tests.rs"]
mod tests;
