use std::fs;
use std::path::{Path, PathBuf};

use super::*;

/// A run directory with one layer over a fresh root; the upper directory is filled by hand,
/// as the overlay would (no whiteouts: making one needs a device node).
struct Run {
    _dir: tempfile::TempDir,
    run: PathBuf,
    root: PathBuf,
    upper: PathBuf,
}

fn run() -> Run {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    let run = base.join("run");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(run.join("0/upper")).unwrap();
    std::os::unix::fs::symlink(&root, run.join("0/root")).unwrap();
    let upper = run.join("0/upper");
    Run { _dir: dir, run, root, upper }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// What `report` held, by path below `root` (sorted), with why.
fn held_in(report: &ApplyReport, root: &Path) -> Vec<(String, Held)> {
    let mut held: Vec<(String, Held)> = report
        .held
        .iter()
        .map(|h| (h.path.strip_prefix(root).unwrap().display().to_string(), h.why.clone()))
        .collect();
    held.sort_by(|a, b| a.0.cmp(&b.0));
    held
}

fn context() -> ApplyContext {
    ApplyContext {
        home: None,
        protected_names: vec![".envrc".into()],
        // Far in the future: nothing the test made counts as changed during the run.
        started: (i64::MAX, 0),
        direct_roots: Vec::new(),
    }
}

#[test]
fn new_and_modified_files_reach_the_root_and_the_upper_directory_empties() {
    let r = run();
    write(&r.root.join("src/a.rs"), "old");
    write(&r.upper.join("src/a.rs"), "new");
    write(&r.upper.join("target/debug/out"), "built");
    let report = apply_layers(&r.run, &context());
    assert_eq!(report.held, Vec::new());
    assert_eq!(fs::read_to_string(r.root.join("src/a.rs")).unwrap(), "new");
    assert_eq!(fs::read_to_string(r.root.join("target/debug/out")).unwrap(), "built");
    assert_eq!(fs::read_dir(&r.upper).unwrap().count(), 0);
}

#[test]
fn hooks_configs_that_gain_code_and_tool_files_are_held_and_the_rest_applied() {
    let r = run();
    write(&r.root.join(".git/HEAD"), "ref: refs/heads/main\n");
    fs::create_dir_all(r.root.join(".git/objects")).unwrap();
    fs::create_dir_all(r.root.join(".git/refs")).unwrap();
    write(&r.root.join(".git/config"), "[core]\n\tbare = false\n");
    write(&r.upper.join(".git/hooks/pre-commit"), "#!/bin/sh\nevil\n");
    write(&r.upper.join(".git/config"), "[core]\n\tbare = false\n[core] hooksPath = .h\n");
    write(&r.upper.join(".git/refs/heads/topic"), "0123\n");
    write(&r.upper.join("rust-toolchain.toml"), "[toolchain]\npath = \"/tmp/x\"\n");
    write(&r.upper.join(".envrc"), "evil\n");
    write(&r.upper.join("README"), "fine\n");
    let report = apply_layers(&r.run, &context());
    let held = held_in(&report, &r.root);
    assert_eq!(
        held,
        vec![
            (".envrc".to_owned(), Held::StartUp),
            (".git/config".to_owned(), Held::GitConfig),
            (".git/hooks/pre-commit".to_owned(), Held::GitDirectory),
            ("rust-toolchain.toml".to_owned(), Held::ToolConfig { tool: "rustup" }),
        ]
    );
    assert!(!r.root.join(".git/hooks/pre-commit").exists());
    assert_eq!(fs::read_to_string(r.root.join(".git/config")).unwrap(), "[core]\n\tbare = false\n");
    assert_eq!(fs::read_to_string(r.root.join(".git/refs/heads/topic")).unwrap(), "0123\n");
    assert_eq!(fs::read_to_string(r.root.join("README")).unwrap(), "fine\n");
    assert!(r.run.join("held/0/.git/hooks/pre-commit").is_file());
}

#[test]
fn a_new_repository_deep_in_a_new_tree_is_judged_before_the_tree_moves_in() {
    let r = run();
    let repo = r.upper.join("a/b/c/newrepo/.git");
    write(&repo.join("HEAD"), "ref: refs/heads/main\n");
    fs::create_dir_all(repo.join("objects")).unwrap();
    fs::create_dir_all(repo.join("refs")).unwrap();
    write(&repo.join("config"), "[core]\n\tfsmonitor = ./evil\n");
    write(&r.upper.join("a/b/c/newrepo/file"), "data");
    let report = apply_layers(&r.run, &context());
    assert_eq!(report.held.len(), 1, "{:?}", report.held);
    assert_eq!(report.held[0].why, Held::GitConfig);
    assert!(r.root.join("a/b/c/newrepo/.git/HEAD").is_file());
    assert!(!r.root.join("a/b/c/newrepo/.git/config").exists());
    assert_eq!(fs::read_to_string(r.root.join("a/b/c/newrepo/file")).unwrap(), "data");
}

#[test]
fn a_file_the_host_changed_during_the_run_is_a_conflict_and_keeps_the_hosts_version() {
    let r = run();
    write(&r.root.join("notes"), "host");
    write(&r.upper.join("notes"), "sandbox");
    let report = apply_layers(&r.run, &ApplyContext { started: (0, 0), ..context() });
    assert_eq!(report.held.len(), 1);
    assert_eq!(report.held[0].why, Held::Conflict);
    assert_eq!(fs::read_to_string(r.root.join("notes")).unwrap(), "host");
    assert_eq!(fs::read_to_string(&report.held[0].kept_at).unwrap(), "sandbox");
}

#[test]
fn set_id_bits_never_reach_the_root() {
    let r = run();
    write(&r.upper.join("tool"), "#!/bin/sh\n");
    fs::set_permissions(r.upper.join("tool"), fs::Permissions::from_mode(0o6755)).unwrap();
    apply_layers(&r.run, &context());
    let mode = fs::metadata(r.root.join("tool")).unwrap().mode();
    assert_eq!(mode & 0o7777, 0o755);
}

#[test]
fn a_link_in_the_root_leading_out_is_never_followed_by_the_apply() {
    let r = run();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), r.root.join("out")).unwrap();
    write(&r.upper.join("out/x"), "planted");
    // The command replaced the link with a directory of its own: the directory replaces the
    // link, and nothing is written where the link led.
    let report = apply_layers(&r.run, &context());
    assert!(report.held.is_empty() && report.failed.is_empty(), "{report:?}");
    assert!(!outside.path().join("x").exists());
    assert!(fs::symlink_metadata(r.root.join("out")).unwrap().is_dir());
    assert_eq!(fs::read_to_string(r.root.join("out/x")).unwrap(), "planted");
}

#[test]
fn links_and_pointers_that_lead_where_the_command_writes_directly_are_held() {
    let r = run();
    let direct = tempfile::tempdir().unwrap();
    let direct_root = fs::canonicalize(direct.path()).unwrap();
    // A link to the directly written place, a pointer through a link made in the same run, a
    // pointer that leads out by its text, and a link inside a git directory.
    std::os::unix::fs::symlink(&direct_root, r.upper.join("tools")).unwrap();
    std::os::unix::fs::symlink(direct_root.join("evil"), r.upper.join("lnk")).unwrap();
    write(&r.upper.join("sub/.git"), "gitdir: ../lnk\n");
    write(&r.upper.join("out/.git"), &format!("gitdir: {}\n", direct_root.display()));
    write(&r.root.join(".git/HEAD"), "ref: refs/heads/main\n");
    fs::create_dir_all(r.root.join(".git/refs")).unwrap();
    fs::create_dir_all(r.upper.join(".git")).unwrap();
    std::os::unix::fs::symlink(&direct_root, r.upper.join(".git/worktrees")).unwrap();
    // A pointer that stays inside, to a git directory made in the same run, passes.
    write(&r.upper.join("wt/.git"), "gitdir: ../.git\n");
    fs::create_dir_all(r.upper.join(".git/worktrees-not")).unwrap();
    let context = ApplyContext { direct_roots: vec![direct_root], ..context() };
    let report = apply_layers(&r.run, &context);
    let held = held_in(&report, &r.root);
    assert_eq!(
        held,
        vec![
            (".git/worktrees".to_owned(), Held::GitDirectory),
            (".git/worktrees-not".to_owned(), Held::GitDirectory),
            ("lnk".to_owned(), Held::LeadsOut),
            ("out/.git".to_owned(), Held::GitPointer),
            ("sub/.git".to_owned(), Held::GitPointer),
            ("tools".to_owned(), Held::LeadsOut),
        ],
        "{report:?}"
    );
    assert!(r.root.join("wt/.git").is_file());
}

#[test]
fn a_directory_with_head_and_a_commondir_is_judged_as_a_git_directory() {
    let r = run();
    write(&r.upper.join("almost/HEAD"), "ref: refs/heads/main\n");
    write(&r.upper.join("almost/commondir"), "../elsewhere\n");
    write(&r.upper.join("almost/config"), "[core]\n\tpager = evil\n");
    let report = apply_layers(&r.run, &context());
    let held: Vec<&Path> =
        report.held.iter().map(|h| h.path.strip_prefix(&r.root).unwrap()).collect();
    assert!(held.contains(&Path::new("almost/config")), "{report:?}");
    assert!(held.contains(&Path::new("almost/commondir")), "{report:?}");
}
