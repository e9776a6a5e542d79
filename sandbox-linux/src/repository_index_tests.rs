use super::*;
use pretty_assertions::assert_eq;
use std::path::Path;

fn git_init(dir: &Path) {
    std::fs::create_dir_all(dir.join(".git/objects")).unwrap();
    std::fs::create_dir_all(dir.join(".git/refs")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
}

fn bare_init(dir: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs")).unwrap();
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

fn new_root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn changed_git_dirs(
    index: &RepositoryIndex,
    since: Mark,
    roots: &[PathBuf],
) -> Option<(Vec<PathBuf>, Vec<PathBuf>)> {
    index.changes_since(since, roots).map(|changes| (changes.git_dirs, changes.unsearched))
}

/// What the index says of `root` now: worktrees and bare git dirs.
fn found(index: &RepositoryIndex, root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (walk, _) = index.walk_for(&[root.to_path_buf()]).unwrap();
    let repositories = walk.repositories(root, &[root.to_path_buf()]);
    (repositories.worktrees, repositories.bare)
}

#[test]
fn the_first_reading_finds_what_a_search_finds() {
    let (_dir, root) = new_root();
    git_init(&root);
    git_init(&root.join("vendor/lib"));
    git_init(&root.join("vendor/lib/deeper"));
    git_init(&root.join("node_modules/pkg"));
    git_init(&root.join("target/x"));
    std::fs::write(root.join("target/CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55")
        .unwrap();
    bare_init(&root.join("bare.git"));
    std::os::unix::fs::symlink("../node_modules/pkg", root.join("vendor/pkg")).unwrap();
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    let searched = crate::find_repositories(&root, &mut crate::WalkBudget::default());
    let (mut worktrees, bare) = found(&index, &root);
    let mut expected = searched.worktrees;
    worktrees.sort();
    expected.sort();
    assert_eq!(worktrees, expected);
    assert_eq!(bare, searched.bare);
}

#[test]
fn repositories_made_moved_and_removed_later_are_followed_and_marked_changed() {
    let (_dir, root) = new_root();
    git_init(&root);
    std::fs::create_dir_all(root.join("src/a/b")).unwrap();
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    let roots = [root.clone()];
    let (_, mark) = index.walk_for(&roots).unwrap();
    assert_eq!(changed_git_dirs(&index, mark, &roots).unwrap().0, Vec::<PathBuf>::new());

    // A repository made deep in a directory that existed, and one in a tree made whole.
    git_init(&root.join("src/a/b/new"));
    std::fs::create_dir_all(root.join("made/x/y")).unwrap();
    git_init(&root.join("made/x/y"));
    bare_init(&root.join("src/a/plain"));
    let (changed, _) = changed_git_dirs(&index, mark, &roots).unwrap();
    assert_eq!(
        changed,
        vec![root.join("made/x/y/.git"), root.join("src/a/b/new/.git"), root.join("src/a/plain"),]
    );
    let (_, later) = index.walk_for(&roots).unwrap();
    assert_eq!(changed_git_dirs(&index, later, &roots).unwrap().0, Vec::<PathBuf>::new());

    // Renamed: found under its new name, and changed; removed: gone.
    std::fs::rename(root.join("made"), root.join("moved")).unwrap();
    std::fs::remove_dir_all(root.join("src/a/b/new")).unwrap();
    let (changed, _) = changed_git_dirs(&index, later, &roots).unwrap();
    assert_eq!(changed, vec![root.join("moved/x/y/.git")]);
    let (worktrees, _) = found(&index, &root);
    assert_eq!(worktrees, vec![root.clone(), root.join("moved/x/y")]);

    // A `.git` pointer rewritten in place is a change of that repository.
    let (_, again) = index.walk_for(&roots).unwrap();
    let elsewhere = root.join("elsewhere");
    bare_init(&elsewhere);
    std::fs::create_dir_all(root.join("checkout")).unwrap();
    std::fs::write(root.join("checkout/.git"), "gitdir: ../elsewhere\n").unwrap();
    // Git dirs as their pointers name them: the caller finds where they really are.
    let real = |mark| -> Vec<PathBuf> {
        let (dirs, _) = changed_git_dirs(&index, mark, &roots).unwrap();
        dirs.iter().map(|dir| std::fs::canonicalize(dir).unwrap()).collect()
    };
    let (_, pointed) = index.walk_for(&roots).unwrap();
    assert_eq!(real(again), vec![elsewhere.clone(), elsewhere]);
    std::fs::write(root.join("checkout/.git"), "gitdir: ../src/a/plain\n").unwrap();
    assert_eq!(real(pointed), vec![root.join("src/a/plain")]);
}

#[test]
fn a_cache_mark_stops_the_reading_below_and_its_removal_resumes_it() {
    let (_dir, root) = new_root();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    let watched = index.watched();
    std::fs::write(root.join("target/CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55")
        .unwrap();
    index.catch_up();
    assert_eq!(index.watched(), watched - 1);
    git_init(&root.join("target/debug/x"));
    assert_eq!(found(&index, &root).0, Vec::<PathBuf>::new());
    std::fs::remove_file(root.join("target/CACHEDIR.TAG")).unwrap();
    assert_eq!(found(&index, &root).0, vec![root.join("target/debug/x")]);
}

#[test]
fn an_overflowed_queue_reads_everything_again_and_counts_every_repository_changed() {
    let (_dir, root) = new_root();
    git_init(&root.join("kept"));
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    let roots = [root.clone()];
    let (_, mark) = index.walk_for(&roots).unwrap();
    // More events than the kernel queues (a file made and closed: two events).
    let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for i in 0..queued / 2 + 100 {
        std::fs::write(root.join(format!("f{i}")), "").unwrap();
    }
    git_init(&root.join("new"));
    let (changed, _) = changed_git_dirs(&index, mark, &roots).unwrap();
    assert_eq!(changed, vec![root.join("kept/.git"), root.join("new/.git")]);
}

#[test]
fn a_root_the_index_does_not_hold_is_left_to_a_search() {
    let (_dir, root) = new_root();
    let (_other_dir, other) = new_root();
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    assert!(index.walk_for(std::slice::from_ref(&other)).is_none());
    assert!(changed_git_dirs(&index, 0, &[root, other]).is_none());
}

#[test]
fn files_tools_load_from_parents_and_fifos_are_noted_when_they_arrive_and_all_are_known() {
    let (_dir, root) = new_root();
    std::fs::create_dir_all(root.join(".cargo")).unwrap();
    std::fs::write(root.join(".cargo/config.toml"), "").unwrap();
    std::fs::write(root.join(".envrc"), "").unwrap();
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    let roots = [root.clone()];
    let (_, mark) = index.walk_for(&roots).unwrap();
    let files = |mark| index.changes_since(mark, &roots).unwrap().arrived;
    assert_eq!(files(mark), Vec::<PathBuf>::new());
    std::fs::write(root.join(".cargo/config.toml"), "[build]\nrustc-wrapper = \"x\"\n").unwrap();
    std::fs::write(root.join("rust-toolchain.toml"), "").unwrap();
    std::fs::write(root.join("config.toml"), "").unwrap();
    nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o600))
        .unwrap();
    std::fs::create_dir_all(root.join("new/.cargo")).unwrap();
    std::fs::write(root.join("new/.cargo/config"), "").unwrap();
    let staged = root.join("staged");
    std::fs::create_dir_all(staged.join("sub")).unwrap();
    std::fs::write(staged.join("sub/.npmrc"), "").unwrap();
    std::fs::rename(&staged, root.join("arrived")).unwrap();
    assert_eq!(
        files(mark),
        vec![
            root.join(".cargo/config.toml"),
            root.join("arrived/sub/.npmrc"),
            root.join("new/.cargo/config"),
            root.join("pipe"),
            root.join("rust-toolchain.toml"),
        ]
    );
    // Every one the roots hold is known, those found at the first reading too.
    let known = index.changes_since(mark, &roots).unwrap().tool_files;
    assert!(
        known.contains(&root.join(".envrc")) && known.contains(&root.join("arrived/sub/.npmrc"))
    );
    assert!(!known.contains(&root.join("config.toml")));
}

#[test]
fn directories_swapped_moved_or_linked_to_later_are_followed() {
    let (_dir, root) = new_root();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::create_dir_all(root.join("node_modules")).unwrap();
    let index = RepositoryIndex::new(std::slice::from_ref(&root)).unwrap();
    let roots = [root.clone()];
    // Swapped in one step: both sides stay followed.
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        root.join("a"),
        rustix::fs::CWD,
        root.join("b"),
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
    let (_, mark) = index.walk_for(&roots).unwrap();
    git_init(&root.join("a/r"));
    git_init(&root.join("b/r"));
    // A link into what the reading skips, leading nowhere yet; its target made later.
    std::os::unix::fs::symlink("node_modules/x", root.join("lib")).unwrap();
    index.catch_up();
    git_init(&root.join("node_modules/x"));
    let (changed, _) = changed_git_dirs(&index, mark, &roots).unwrap();
    assert_eq!(
        changed,
        vec![root.join("a/r/.git"), root.join("b/r/.git"), root.join("node_modules/x/.git")]
    );
}
