//! Paths as Seatbelt sees them: the kernel matches resolved paths, so `/tmp/x` must be spelled
//! `/private/tmp/x`, and a symlinked secret must be named by its target too.

use std::fs;
use std::path::{Component, Path, PathBuf};

use cordon_policies::ResolvedPolicy;

/// The top-level symlinks of macOS: `/var`, `/tmp` and `/etc` point into `/private`.
const PRIVATE_LINKS: [&str; 3] = ["/var", "/tmp", "/etc"];

/// The path under which macOS reports `path`: a leading `/var`, `/tmp` or `/etc` component
/// becomes `/private/var`, `/private/tmp` or `/private/etc`. Pure (no file system access), so it
/// also works for paths that do not exist yet; other paths are returned unchanged.
pub fn macos_real_path(path: &Path) -> PathBuf {
    for link in PRIVATE_LINKS {
        if let Ok(rest) = path.strip_prefix(link) {
            let target = Path::new("/private").join(link.trim_start_matches('/'));
            return if rest.as_os_str().is_empty() { target } else { target.join(rest) };
        }
    }
    path.to_path_buf()
}

/// `root` joined with the relative `entry`, `.` dropped and `..` applied lexically: Seatbelt
/// compares resolved paths, so a protected path spelled with `..` would otherwise never match.
pub(crate) fn lexical_join(root: &Path, entry: &Path) -> PathBuf {
    let mut path = root.to_path_buf();
    for component in entry.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                path.pop();
            }
            Component::Normal(name) => path.push(name),
            Component::RootDir | Component::Prefix(_) => path.push(component.as_os_str()),
        }
    }
    path
}

/// Adds to `policy` the paths that only the file system knows, so that the (pure) profile
/// covers them too. Seatbelt matches the resolved path of every access, so:
///
/// - a hidden path that is, or runs through, a symlink is also hidden under its target
///   (`~/.ssh -> ~/dotfiles/ssh` would otherwise stay readable through the link);
/// - an existing protected path that resolves elsewhere is also protected at its target, as an
///   absolute protected path (it only takes effect where the target lies in a writable root);
/// - for each protected `.git/...` entry in a root whose `.git` is a pointer file (worktrees,
///   submodules), the same entry is protected inside the git directory it names and that
///   directory's `commondir`. (The pointer file itself is kept by the profile's ancestor rule:
///   rewriting it would point git at hooks the command wrote.)
///
/// - entries inside `.git` apply only to roots that have a `.git`, as absolute paths (so a fresh
///   workspace can `git init`).
///
/// Other paths that do not exist or cannot be read are left as they are. Protected paths travel as
/// `String`s in [`ResolvedPolicy`]; a target that is not UTF-8 (which APFS and HFS+ do not
/// store) is skipped.
pub fn with_real_paths(policy: &ResolvedPolicy) -> ResolvedPolicy {
    let mut resolved = policy.clone();

    // Entries inside `.git` are protected only in roots that have a `.git` (as in the Linux
    // mount view, where a protected path that does not exist stays creatable): a relative
    // `.git/hooks` would pin `.git` in every root and refuse `git init` and `git clone URL .`
    // in a fresh workspace.
    let (git_entries, others): (Vec<String>, Vec<String>) =
        policy.protected_paths.iter().cloned().partition(|entry| is_git_entry(entry));
    resolved.protected_paths = others;
    for root in &policy.writable_roots {
        if fs::symlink_metadata(root.join(".git")).is_err() {
            continue;
        }
        for entry in &git_entries {
            if let Ok(path) = lexical_join(root, Path::new(entry)).into_os_string().into_string() {
                if !resolved.protected_paths.contains(&path) {
                    resolved.protected_paths.push(path);
                }
            }
        }
    }

    for hidden in &policy.hidden_paths {
        if let Ok(real) = fs::canonicalize(hidden) {
            if real != *hidden && !resolved.hidden_paths.contains(&real) {
                resolved.hidden_paths.push(real);
            }
        }
    }

    let mut extra: Vec<PathBuf> = Vec::new();
    for root in &policy.writable_roots {
        let git_dirs = pointer_git_dirs(root);
        for entry in &policy.protected_paths {
            let entry = Path::new(entry);
            let path =
                if entry.is_absolute() { entry.to_path_buf() } else { lexical_join(root, entry) };
            if let Ok(real) = fs::canonicalize(&path) {
                if real != path {
                    extra.push(real);
                }
            }
            if entry.is_absolute() || git_dirs.is_empty() {
                continue;
            }
            let entry = lexical_join(Path::new(""), entry);
            if let Ok(inside_git) = entry.strip_prefix(".git") {
                extra.extend(git_dirs.iter().map(|dir| lexical_join(dir, inside_git)));
            }
        }
    }
    for path in extra {
        if let Ok(path) = path.into_os_string().into_string() {
            if !resolved.protected_paths.contains(&path) {
                resolved.protected_paths.push(path);
            }
        }
    }
    resolved
}

/// A relative protected entry inside `.git` (`.git/hooks`, `./.git/config`).
fn is_git_entry(entry: &str) -> bool {
    let entry = Path::new(entry);
    !entry.is_absolute()
        && entry.components().find(|c| *c != Component::CurDir)
            == Some(Component::Normal(".git".as_ref()))
}

/// The git directories named by `root/.git` when it is a pointer file (`gitdir: PATH`), plus
/// that directory's `commondir`, canonicalised. Empty when `.git` is a directory or absent.
fn pointer_git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let is_file = fs::symlink_metadata(&dot_git).is_ok_and(|meta| meta.is_file());
    if !is_file {
        return Vec::new();
    }
    let Ok(text) = fs::read_to_string(&dot_git) else {
        return Vec::new();
    };
    let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
        return Vec::new();
    };
    let Ok(git_dir) = fs::canonicalize(root.join(target.trim())) else {
        return Vec::new();
    };
    let mut dirs = vec![git_dir.clone()];
    if let Ok(common) = fs::read_to_string(git_dir.join("commondir")) {
        if let Ok(common) = fs::canonicalize(git_dir.join(common.trim())) {
            if !dirs.contains(&common) {
                dirs.push(common);
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn private_links_are_spelled_as_macos_reports_them() {
        let cases = [
            ("/var/folders/x/T", "/private/var/folders/x/T"),
            ("/var", "/private/var"),
            ("/tmp", "/private/tmp"),
            ("/tmp/a b", "/private/tmp/a b"),
            ("/etc/hosts", "/private/etc/hosts"),
            // Only whole components: `/variable` is not under `/var`.
            ("/variable/x", "/variable/x"),
            ("/tmpfoo", "/tmpfoo"),
            ("/private/var/x", "/private/var/x"),
            ("/Users/u/var", "/Users/u/var"),
            ("relative/tmp", "relative/tmp"),
        ];
        for (input, expected) in cases {
            assert_eq!(macos_real_path(Path::new(input)), PathBuf::from(expected));
        }
    }

    #[test]
    fn mapping_twice_changes_nothing() {
        let once = macos_real_path(Path::new("/tmp/x"));
        assert_eq!(macos_real_path(&once), once);
    }

    #[test]
    fn relative_entries_join_lexically() {
        let root = Path::new("/w");
        assert_eq!(lexical_join(root, Path::new("./.git/hooks")), PathBuf::from("/w/.git/hooks"));
        assert_eq!(lexical_join(root, Path::new("a/../b")), PathBuf::from("/w/b"));
        assert_eq!(lexical_join(root, Path::new("")), PathBuf::from("/w"));
    }

    /// A scratch directory under the system temp dir, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("cordon-sandbox-macos-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(fs::canonicalize(&dir).unwrap())
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn policy(root: &Path, protected: &[&str], hidden: Vec<PathBuf>) -> ResolvedPolicy {
        ResolvedPolicy {
            network_domains: None,
            writable_roots: vec![root.to_path_buf()],
            network_access: false,
            protected_paths: protected.iter().map(|p| (*p).to_owned()).collect(),
            hidden_paths: hidden,
            allowed_sockets: Vec::new(),
        }
    }

    #[test]
    fn git_pointer_files_protect_the_git_dirs_they_name() {
        let scratch = Scratch::new("pointer");
        let main_git = scratch.0.join("repo/.git");
        let worktree_git = main_git.join("worktrees/wt");
        fs::create_dir_all(main_git.join("hooks")).unwrap();
        fs::create_dir_all(&worktree_git).unwrap();
        fs::write(worktree_git.join("commondir"), "../..\n").unwrap();
        let root = scratch.0.join("wt");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();

        let resolved = with_real_paths(&policy(&root, &[".git/hooks", ".envrc"], Vec::new()));

        let s = |p: PathBuf| p.into_os_string().into_string().unwrap();
        assert_eq!(
            resolved.protected_paths,
            vec![
                ".envrc".to_owned(),
                s(root.join(".git/hooks")),
                s(worktree_git.join("hooks")),
                s(main_git.join("hooks")),
            ]
        );
    }

    #[test]
    fn a_git_directory_turns_the_git_entries_into_paths_in_that_root() {
        let scratch = Scratch::new("gitdir");
        let root = scratch.0.clone();
        fs::create_dir_all(root.join(".git/hooks")).unwrap();
        let original = policy(&root, &[".git/hooks", "./.git/config", ".vscode"], Vec::new());
        let resolved = with_real_paths(&original);
        let s = |p: PathBuf| p.into_os_string().into_string().unwrap();
        assert_eq!(
            resolved.protected_paths,
            vec![".vscode".to_owned(), s(root.join(".git/hooks")), s(root.join(".git/config"))]
        );
    }

    #[test]
    fn a_root_without_git_gets_no_git_protection_so_git_init_works() {
        let scratch = Scratch::new("fresh");
        let original = policy(&scratch.0, &[".git/hooks", ".git/config", ".cordon"], Vec::new());
        let resolved = with_real_paths(&original);
        assert_eq!(resolved.protected_paths, vec![".cordon".to_owned()]);
        // Nothing pins `.git` then: the profile lets the command create it.
        let params = crate::seatbelt_profile(&resolved).params;
        assert!(!params.iter().any(|(_, path)| path.ends_with(".git")), "{params:?}");
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_hidden_and_protected_paths_are_also_covered_at_their_targets() {
        let scratch = Scratch::new("links");
        let root = scratch.0.join("w");
        let dotfiles = scratch.0.join("dotfiles/ssh");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&dotfiles).unwrap();
        fs::create_dir_all(root.join("real-vscode")).unwrap();
        let ssh = scratch.0.join(".ssh");
        std::os::unix::fs::symlink(&dotfiles, &ssh).unwrap();
        std::os::unix::fs::symlink(root.join("real-vscode"), root.join(".vscode")).unwrap();
        let missing = scratch.0.join("missing");

        let resolved =
            with_real_paths(&policy(&root, &[".vscode"], vec![ssh.clone(), missing.clone()]));

        assert_eq!(resolved.hidden_paths, vec![ssh, missing, dotfiles]);
        assert_eq!(
            resolved.protected_paths,
            vec![".vscode".to_owned(), root.join("real-vscode").to_str().unwrap().to_owned(),]
        );
    }
}
