//! Every git repository inside a writable root, and what git would later run code from in it.
//!
//! The user runs git (or a tool that runs git) in any repository a writable root contains —
//! vendored dependencies, plain clones, fixtures — not only in the root itself. Git executes
//! what a repository's config names (`core.fsmonitor`, `core.pager`, drivers, aliases) and its
//! hooks, and follows `commondir` and `gitdir` files to other git dirs. So the mount view keeps
//! these read-only in every repository found here, and the names git would honour but that do
//! not exist yet are watched (`planted.rs`).
//!
//! The walk is bounded (directories, depth and time); what it could not search is reported.
//! It never follows a symbolic link, never enters a git dir, and skips directories git's users
//! do not work in (`node_modules`, and caches marked with `CACHEDIR.TAG` that are a root or a
//! build's `target/`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::FileType;

/// How far the walk goes for all roots of one run together.
const MAX_DIRECTORIES: usize = 20_000;
const MAX_DEPTH: usize = 24;
const MAX_REPOSITORIES: usize = 512;
const MAX_TIME: Duration = Duration::from_millis(300);

/// Directory names never searched.
pub(crate) const SKIPPED: [&str; 2] = [".git", "node_modules"];

/// What is left of the walk's allowance.
#[derive(Debug)]
pub struct WalkBudget {
    directories: usize,
    repositories: usize,
    deadline: Instant,
}

impl Default for WalkBudget {
    fn default() -> Self {
        WalkBudget {
            directories: MAX_DIRECTORIES,
            repositories: MAX_REPOSITORIES,
            deadline: Instant::now() + MAX_TIME,
        }
    }
}

impl WalkBudget {
    fn spent(&self) -> bool {
        self.directories == 0 || self.repositories == 0 || Instant::now() >= self.deadline
    }
}

/// The repositories of one writable root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repositories {
    /// Working trees: directories holding a `.git` (a directory, a pointer file or a link),
    /// the root first when it is one.
    pub worktrees: Vec<PathBuf>,
    /// Git dirs reached as a plain directory: a root that is a `.git` or a bare repository
    /// (`HEAD`, `objects/`, `refs/`), or such a directory inside it.
    pub bare: Vec<PathBuf>,
    /// Directories the walk had no allowance left for.
    pub unsearched: Vec<PathBuf>,
}

/// Finds the repositories inside `root` (see [`Repositories`]).
pub fn find_repositories(root: &Path, budget: &mut WalkBudget) -> Repositories {
    let mut found = Repositories::default();
    // The root's own repository whatever the allowance: a command that fills another root
    // with directories must not be able to spend it.
    if std::fs::symlink_metadata(root.join(".git")).is_ok() {
        found.worktrees.push(root.to_path_buf());
    }
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0usize)]);
    // Directories queued through a link, each once (links may lead in circles).
    let mut linked = std::collections::HashSet::new();
    while let Some((dir, depth)) = queue.pop_front() {
        if budget.spent() {
            found.unsearched.push(dir);
            found.unsearched.extend(queue.into_iter().map(|(dir, _)| dir));
            break;
        }
        budget.directories -= 1;
        let looked = match list(&dir) {
            Some(entries) => Looked::from_listing(&dir, entries),
            None => {
                // Searchable but not readable (a mode the command may have set on a repository
                // it can write): git still works there, so it is looked at name by name.
                let looked = Looked::by_name(&dir);
                if !looked.bare && !looked.dot_git && owned_by_caller(&dir) {
                    // What lies deeper cannot be listed, but the caller's git can still reach it.
                    found.unsearched.push(dir.clone());
                }
                looked
            }
        };
        if looked.bare {
            // Searched below as well: `HEAD`, `objects/` and `refs/` are three entries any
            // command can make, and git run in a checkout beneath uses that checkout's own
            // repository — so a directory shaped like a git dir hides nothing under it.
            budget.repositories = budget.repositories.saturating_sub(1);
            found.bare.push(dir.clone());
        } else if looked.dot_git {
            budget.repositories = budget.repositories.saturating_sub(1);
            if dir != root {
                found.worktrees.push(dir.clone());
            }
        }
        let Looked { mut children, cache, links, .. } = looked;
        if depth >= MAX_DEPTH && !children.is_empty() {
            // Too deep to go on: what lies below is not searched, and the caller says so.
            found.unsearched.push(dir);
            continue;
        }
        if !(cache && cache_skipped(root, &dir)) {
            children.sort();
            queue.extend(children.into_iter().map(|child| (child, depth + 1)));
            // A link from where the user works into what the walk skips (`src/lib ->
            // ../node_modules/x`) takes git, run in it, to a repository there: that directory
            // is searched too, once.
            for link in links {
                let Ok(target) = std::fs::canonicalize(&link) else { continue };
                if target.starts_with(root)
                    && target.is_dir()
                    && inside_skipped(root, &target)
                    && linked.insert(target.clone())
                {
                    queue.push_back((target, depth + 1));
                }
            }
        }
    }
    found
}

/// Whether `dir`, inside `root`, lies in what the walk skips: under a `node_modules` or a
/// `target` (marked or not: it is searched once more at most).
pub(crate) fn inside_skipped(root: &Path, dir: &Path) -> bool {
    dir.strip_prefix(root).is_ok_and(|rest| {
        rest.components().any(|c| c.as_os_str() == "node_modules" || c.as_os_str() == "target")
    })
}

/// What one directory of the walk holds, as far as the walk cares.
pub(crate) struct Looked {
    /// It may be a git dir itself: `HEAD` beside `objects` and `refs`, or beside a `commondir`
    /// (looser than git's own check).
    pub(crate) bare: bool,
    /// It holds a `.git` (a directory, a pointer file or a link).
    pub(crate) dot_git: bool,
    /// Its subdirectories to search (not links, not the skipped names).
    pub(crate) children: Vec<PathBuf>,
    /// It is marked as a cache (`CACHEDIR.TAG`).
    pub(crate) cache: bool,
    /// Its symbolic links (never followed by the walk itself).
    pub(crate) links: Vec<PathBuf>,
}

impl Looked {
    /// From the directory's listing: the kinds come with it, no lookup per name.
    pub(crate) fn from_listing(
        dir: &Path,
        entries: Vec<(std::ffi::OsString, Option<FileType>)>,
    ) -> Self {
        let mut looked = Looked {
            bare: false,
            dot_git: false,
            children: Vec::new(),
            cache: false,
            links: Vec::new(),
        };
        // Shaped as git takes a git dir, or looser: `objects` and `refs` may be links (git
        // follows them), or come from a `commondir`.
        let (mut head, mut objects, mut refs, mut commondir) = (false, false, false, false);
        for (name, kind) in entries {
            // The entry's own type: a symbolic link is never followed.
            let is_dir = kind == Some(FileType::Directory);
            if name == ".git" {
                looked.dot_git = true;
                continue;
            }
            match name.as_encoded_bytes() {
                b"HEAD" => head = true,
                b"objects" => objects = true,
                b"refs" => refs = true,
                b"commondir" => commondir = true,
                b"CACHEDIR.TAG" => looked.cache = true,
                _ => {}
            }
            if is_dir && !SKIPPED.iter().any(|skipped| name == *skipped) {
                looked.children.push(dir.join(name));
            } else if kind == Some(FileType::Symlink) {
                looked.links.push(dir.join(name));
            }
        }
        looked.bare = head && ((objects && refs) || commondir);
        looked
    }

    /// From lookups of the names that matter, for a directory that cannot be listed.
    pub(crate) fn by_name(dir: &Path) -> Self {
        let bare = is_git_dir(dir);
        let dot_git = !bare && std::fs::symlink_metadata(dir.join(".git")).is_ok();
        Looked { bare, dot_git, children: Vec::new(), cache: false, links: Vec::new() }
    }
}

/// Whether the walk of `root` skips `dir`, marked as a cache. A command can write a mark
/// anywhere in a writable root, so a mark alone would let it hide a repository it made from
/// every later search (in the directory the user works in, or at the root itself): only a
/// build's `target/` below the root is skipped (cargo's, thousands of directories; git is not
/// run there). Whole roots that are caches: [`presets_cache`].
pub(crate) fn cache_skipped(root: &Path, dir: &Path) -> bool {
    dir != root && dir.file_name().is_some_and(|name| name == "target")
}

/// Whether `root`, one of `roots`, is a cache cordon made: its parent is marked as holding
/// caches (cordon marks `$CORDON_HOME/cache/`, which holds the presets' caches, each a root),
/// and that parent lies in no writable root, so no sandboxed command wrote the mark. Such a
/// root is not searched: nobody runs git there.
pub(crate) fn presets_cache(root: &Path, roots: &[PathBuf]) -> bool {
    root.parent().is_some_and(|parent| {
        !roots.iter().any(|other| parent.starts_with(other))
            && std::fs::symlink_metadata(parent.join("CACHEDIR.TAG")).is_ok_and(|m| m.is_file())
    })
}

/// The repositories of `root`, one of `roots` (none in a cache cordon made).
pub(crate) fn repositories_of(root: &Path, roots: &[PathBuf]) -> Repositories {
    if presets_cache(root, roots) {
        return Repositories::default();
    }
    find_repositories(root, &mut WalkBudget::default())
}

/// The entries of `dir` with their kinds as the directory gives them (an `lstat` only where
/// the file system does not say); `None` when it cannot be read. Opened without following a
/// final link (a directory swapped for one since its parent was read is not entered), and read
/// with `getdents64` alone: the libc's `opendir` adds an `fstat` to every directory of the walk.
/// A directory the caller owns but made unreadable is listed as its owner
/// ([`crate::owner_read`]): git still finds a repository in it by name.
pub(crate) fn list(dir: &Path) -> Option<Vec<crate::owner_read::Entry>> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::open(dir, flags, Mode::empty()) {
        Ok(fd) => crate::owner_read::read_open(fd),
        Err(rustix::io::Errno::ACCESS) => {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::open(dir, flags, Mode::empty()).ok()?;
            crate::owner_read::entries_as_owner(fd)
        }
        Err(_) => None,
    }
}

/// Whether the caller owns `dir`, which it could not list (and so could have made it
/// unreadable, and can still work beneath it). Never with `CAP_DAC_READ_SEARCH` (root, or the
/// helper in its user namespace): that lists every directory the caller owns, and in a user
/// namespace an owner it does not map shows as the overflow uid, which may be the caller's own
/// (`nobody`).
pub(crate) fn owned_by_caller(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    !crate::sys::can_read_search_own_files()
        && std::fs::symlink_metadata(dir)
            .is_ok_and(|meta| meta.uid() == nix::unistd::geteuid().as_raw())
}

/// Whether `dir` may be a git dir itself: `HEAD` beside `objects` and `refs`, or beside a
/// `commondir` — looser than git, which follows links there and takes both from a `commondir`.
fn is_git_dir(dir: &Path) -> bool {
    let exists = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    exists("HEAD") && ((exists("objects") && exists("refs")) || exists("commondir"))
}

/// The git dirs of every repository in `roots` (each checkout's `.git`, or what its pointer
/// file names, and the git dirs lying there as plain directories), for a [`GitWatch`].
pub fn git_dirs_in(roots: &[PathBuf]) -> Vec<PathBuf> {
    RepositoryWalk::of(roots).git_dirs()
}

/// The repositories of a set of writable roots, found once: a caller that watches the roots'
/// git dirs and then runs the helper in its own forked child hands the walk over, and the
/// helper's mount view protects what the watch watches, without a second walk of the same
/// directories at the same moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryWalk {
    roots: Vec<(PathBuf, Repositories)>,
}

impl RepositoryWalk {
    /// Walks each of `roots` with an allowance of its own.
    pub fn of(roots: &[PathBuf]) -> Self {
        let roots = roots.iter().map(|root| (root.clone(), repositories_of(root, roots))).collect();
        RepositoryWalk { roots }
    }

    /// What the walk found in `root`, or a walk of it now when it was not one of the roots or
    /// left directories unsearched there: the caller may have walked with less than the helper
    /// can read (an unprivileged caller cannot list a directory of its own made `0311`, which
    /// the helper can in its user namespace), and what it could not search is searched again.
    pub(crate) fn repositories(&self, root: &Path, roots: &[PathBuf]) -> Repositories {
        match self.roots.iter().find(|(walked, _)| walked == root) {
            Some((_, found)) if found.unsearched.is_empty() => found.clone(),
            _ => repositories_of(root, roots),
        }
    }

    /// A walk's finding made elsewhere (an index kept current), root by root.
    pub(crate) fn from_roots(roots: Vec<(PathBuf, Repositories)>) -> Self {
        RepositoryWalk { roots }
    }

    /// The directories of every root the walk had no allowance left for (too many, too
    /// deep, or not listable by the caller).
    pub fn unsearched(&self) -> Vec<PathBuf> {
        self.roots.iter().flat_map(|(_, found)| found.unsearched.iter().cloned()).collect()
    }

    /// The git dirs of every repository found (see [`git_dirs_in`]).
    pub fn git_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        for (_, found) in &self.roots {
            dirs.extend(found.bare.iter().cloned());
            for top in &found.worktrees {
                dirs.extend(crate::git_dirs::git_dirs(top).dirs);
            }
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }
}

/// What git reads code or redirections from in the git dir `git_dir`, as far as it exists:
/// its config files, hooks, `commondir`/`gitdir`, submodule git dirs (`modules/`) and those of
/// its linked worktrees — a linked worktree's own `modules/` too, whose checkout may lie where
/// no walk finds it (outside the roots), and whose submodule git dirs git reuses there.
///
/// A `worktrees/` with more linked worktrees than [`MAX_WORKTREES`] goes to `unsearched`: those
/// past it are not bound, and their names stay writable.
pub fn git_dir_entries(git_dir: &Path, unsearched: &mut Vec<PathBuf>) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> =
        ["config", "config.worktree", "hooks", "commondir", "gitdir", "modules"]
            .iter()
            .map(|name| git_dir.join(name))
            .collect();
    let worktrees = git_dir.join("worktrees");
    let linked = subdirectories(&worktrees, MAX_WORKTREES);
    if linked.len() > MAX_WORKTREES {
        unsearched.push(worktrees);
    }
    for worktree in linked.into_iter().take(MAX_WORKTREES) {
        entries.extend(
            ["commondir", "gitdir", "config.worktree", "config", "modules"]
                .iter()
                .map(|n| worktree.join(n)),
        );
    }
    entries.retain(|path| std::fs::symlink_metadata(path).is_ok());
    entries
}

/// How many linked worktrees of one git dir have their names bound read-only.
const MAX_WORKTREES: usize = 20_000;

/// The directories in `dir` (not links to them), at most `limit` + 1 (more than `limit`: cut).
fn subdirectories(dir: &Path, limit: usize) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .take(limit.saturating_add(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn git_init(dir: &Path) {
        std::fs::create_dir_all(dir.join(".git/objects")).unwrap();
        std::fs::create_dir_all(dir.join(".git/refs")).unwrap();
        std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(dir.join(".git/config"), "").unwrap();
    }

    #[test]
    fn nested_repositories_are_found_and_node_modules_caches_and_links_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git_init(root);
        git_init(&root.join("vendor/lib"));
        git_init(&root.join("vendor/lib/deeper"));
        git_init(&root.join("node_modules/pkg"));
        git_init(&root.join("target/x"));
        std::fs::write(
            root.join("target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        // A mark elsewhere than in a root or a `target/` is not taken for a cache.
        git_init(&root.join("src/app"));
        std::fs::write(
            root.join("src/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("bare.git/objects")).unwrap();
        std::fs::create_dir_all(root.join("bare.git/refs")).unwrap();
        std::fs::write(root.join("bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        git_init(elsewhere.path());
        std::os::unix::fs::symlink(elsewhere.path(), root.join("link")).unwrap();
        let found = find_repositories(root, &mut WalkBudget::default());
        assert_eq!(
            found.worktrees,
            vec![
                root.to_path_buf(),
                root.join("src/app"),
                root.join("vendor/lib"),
                root.join("vendor/lib/deeper")
            ]
        );
        assert_eq!(found.bare, vec![root.join("bare.git")]);
        assert!(found.unsearched.is_empty());
    }

    #[test]
    fn a_mark_at_the_root_or_a_link_into_what_is_skipped_hides_no_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let mark = "Signature: 8a477f597d28d172789f06886806bc55";
        git_init(&root.join("src/app"));
        std::fs::write(root.join("CACHEDIR.TAG"), mark).unwrap();
        git_init(&root.join("node_modules/x"));
        git_init(&root.join("target/y"));
        std::fs::write(root.join("target/CACHEDIR.TAG"), mark).unwrap();
        std::os::unix::fs::symlink("../node_modules/x", root.join("src/lib")).unwrap();
        std::os::unix::fs::symlink("../target/y", root.join("src/out")).unwrap();
        let found = find_repositories(&root, &mut WalkBudget::default());
        let mut worktrees = found.worktrees;
        worktrees.sort();
        assert_eq!(
            worktrees,
            vec![root.join("node_modules/x"), root.join("src/app"), root.join("target/y")]
        );
        // A root whose parent is marked as holding caches is skipped (the presets' caches),
        // unless that parent lies in another root, where a command could have marked it.
        std::fs::write(dir.path().join("CACHEDIR.TAG"), mark).unwrap();
        assert_eq!(
            RepositoryWalk::of(std::slice::from_ref(&root)).git_dirs(),
            Vec::<PathBuf>::new()
        );
        let outer = dir.path().to_path_buf();
        let walk = RepositoryWalk::of(&[root.clone(), outer]);
        assert_eq!(walk.repositories(&root, std::slice::from_ref(&root)).worktrees.len(), 3);
    }

    #[test]
    fn a_root_that_is_a_git_dir_is_found_as_one_and_an_exhausted_budget_says_what_is_left() {
        let dir = tempfile::tempdir().unwrap();
        git_init(dir.path());
        let git_dir = dir.path().join(".git");
        let found = find_repositories(&git_dir, &mut WalkBudget::default());
        assert_eq!(found.bare, vec![git_dir]);
        let mut spent = WalkBudget { directories: 0, ..WalkBudget::default() };
        let found = find_repositories(dir.path(), &mut spent);
        assert_eq!(found.unsearched, vec![dir.path().to_path_buf()]);
        // The root's own repository is protected whatever the allowance.
        assert_eq!(found.worktrees, vec![dir.path().to_path_buf()]);
    }
}
