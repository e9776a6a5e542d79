//! What a long-lived server's sessions write goes straight to the roots; what a session's
//! command leaves there for git or another tool to run later is kept out of reach all the
//! same — read-only where it exists, moved aside after the call where it was made — in every
//! spelling git reads, checked from outside.

use std::path::Path;

use super::code_runs_later::git;
use super::executor::Executor;
use super::util::*;

/// Whether `dir` holds `name` moved aside (renamed `NAME.cordon-planted-…`).
fn moved(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&format!("{name}.cordon-planted-")))
}

/// The include graph, `core.hooksPath` on a section's line and repeated, files tools load from
/// a directory and its parents (in the workspace and in `/tmp`) and a FIFO, planted in one
/// executor call. Writing directly, the command wrote the repository's index too, so a tool's
/// file it edited is moved aside even where git tracks it. The controls in the same call: a
/// plain file stays, and nothing planted runs at the user's next `git status` and `git commit`.
#[test]
fn what_a_session_plants_for_git_or_a_tool_is_kept_out_of_reach() {
    require_mount_view!();
    let mut ex = Executor::start(&[]);
    let work = ex.work.path().to_path_buf();
    let outside = scratch();
    let mark = outside.path().join("ran");
    git(&work, &["init", "-q"]).assert_ok();
    std::fs::create_dir_all(work.join("pinned")).unwrap();
    std::fs::write(work.join("pinned/rust-toolchain.toml"), "[toolchain]\n").unwrap();
    git(&work, &["add", "pinned"]).assert_ok();
    git(&work, &["commit", "-qm", "one"]).assert_ok();
    std::fs::create_dir_all(work.join("tools")).unwrap();
    std::fs::write(work.join("tools/gitconfig"), "[user]\n\tname = t\n").unwrap();
    let config = work.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += "[core] hooksPath = .husky\n[include]\n\tpath = ../tools/gitconfig\n\
             [includeIf \"gitdir:/\"]\n\tpath = ../tools/later.cfg\n";
    std::fs::write(&config, text).unwrap();
    let second = work.join("second");
    git(&work, &["init", "-q", "second"]).assert_ok();
    let mut text = std::fs::read_to_string(second.join(".git/config")).unwrap();
    text += "[core]\n\thooksPath = first\n\thooksPath = .hooks2\n";
    std::fs::write(second.join(".git/config"), text).unwrap();
    std::fs::create_dir_all(second.join(".hooks2")).unwrap();
    let tmp = tempfile::Builder::new().prefix("cordon-e2e-").tempdir_in("/tmp").unwrap();
    // The first call makes the server's index.
    let first = ex.text("exec_command", serde_json::json!({"cmd": "true"}));
    assert!(first.contains("exited with code 0"), "{first}");

    let hook = format!("#!/bin/sh\\ntouch {}\\n", mark.display());
    let code = format!("[core]\\n\\tfsmonitor = touch {}\\n", mark.display());
    let plant = format!(
        "printf '{code}' >> tools/gitconfig 2>/dev/null; \
         printf '{code}' > tools/later.cfg; \
         mkdir -p .husky && printf '{hook}' > .husky/pre-commit && chmod +x .husky/pre-commit; \
         printf '{hook}' > second/.hooks2/pre-commit 2>/dev/null; \
         printf '[toolchain]\\npath = \"/x\"\\n' > {tmp}/rust-toolchain.toml; \
         mkdir -p .cargo && printf '[build]\\nrustc-wrapper = \"/x\"\\n' > .cargo/config.toml; \
         mkdir -p sub && printf 'script-shell=/x\\n' > sub/.npmrc; \
         mkfifo pipe; echo 'channel = \"1.80\"' >> pinned/rust-toolchain.toml; echo kept > control; echo planted",
        tmp = tmp.path().display()
    );
    let text = ex.text("exec_command", serde_json::json!({"cmd": plant}));
    assert!(text.contains("planted") && text.contains("moved aside"), "{text}");
    assert_eq!(
        std::fs::read_to_string(work.join("tools/gitconfig")).unwrap(),
        "[user]\n\tname = t\n"
    );
    for gone in [
        work.join("tools/later.cfg"),
        work.join(".husky"),
        second.join(".hooks2/pre-commit"),
        tmp.path().join("rust-toolchain.toml"),
        work.join(".cargo/config.toml"),
        work.join("sub/.npmrc"),
        work.join("pipe"),
    ] {
        assert!(
            std::fs::symlink_metadata(&gone).is_err(),
            "{} reached the host: {text}",
            gone.display()
        );
    }
    assert!(moved(&work.join("pinned"), "rust-toolchain.toml"), "{text}");
    // The controls.
    assert_eq!(std::fs::read_to_string(work.join("control")).unwrap(), "kept\n");
    for repo in [work.as_path(), second.as_path()] {
        git(repo, &["status", "--short"]).assert_ok();
        git(repo, &["commit", "--allow-empty", "-qm", "two"]).assert_ok();
    }
    assert!(!mark.exists(), "planted code ran outside the sandbox");
    let moved = |dir: &Path, name: &str| {
        std::fs::read_dir(dir).unwrap().flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with(&format!("{name}.cordon-planted-"))
        })
    };
    // Moved aside, not lost: the user can look.
    assert!(moved(&work.join(".cargo"), "config.toml"), "{text}");
    assert!(moved(tmp.path(), "rust-toolchain.toml"), "{text}");
}

/// The ways round the index a review found, each tried in an executor session: a tool's file
/// staged in `node_modules` and moved in with its directory (its change time is old), an
/// ignored `.npmrc` rewritten through a hard link made where nothing is watched, two
/// directories swapped in one step, a link into `node_modules` made before its target, a hook
/// under a linked worktree's `core.hooksPath` (existing, added in the call, and of a repository
/// outside the workspace), and an included
/// file that is a link replaced by the command. Each is moved aside; the user's next git runs
/// nothing planted.
#[test]
fn the_ways_round_a_servers_index_are_closed() {
    require_mount_view!();
    let mut ex = Executor::start(&[]);
    let work = ex.work.path().to_path_buf();
    let outside = scratch();
    let mark = outside.path().join("ran");
    git(&work, &["init", "-q"]).assert_ok();
    git(&work, &["commit", "--allow-empty", "-qm", "one"]).assert_ok();
    std::fs::write(work.join(".gitignore"), ".npmrc\n").unwrap();
    std::fs::write(work.join(".npmrc"), "registry=https://example.test/\n").unwrap();
    std::fs::create_dir_all(work.join("tools")).unwrap();
    std::fs::write(work.join("tools/real.cfg"), "[user]\n\tname = t\n").unwrap();
    std::os::unix::fs::symlink("real.cfg", work.join("tools/gitconfig")).unwrap();
    let config = work.join(".git/config");
    let text = std::fs::read_to_string(&config).unwrap()
        + "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../tools/gitconfig\n";
    std::fs::write(&config, text).unwrap();
    git(&work, &["worktree", "add", "-q", "wt"]).assert_ok();
    // A linked worktree in the workspace of a repository elsewhere, whose hooks path does not
    // exist yet.
    let elsewhere = scratch();
    git(elsewhere.path(), &["init", "-q"]).assert_ok();
    git(elsewhere.path(), &["commit", "--allow-empty", "-qm", "one"]).assert_ok();
    git(elsewhere.path(), &["config", "core.hooksPath", ".hooks3"]).assert_ok();
    let wt3 = work.join("wt3");
    git(elsewhere.path(), &["worktree", "add", "-q", wt3.to_str().unwrap()]).assert_ok();
    for dir in ["a", "b", "node_modules/stash/sub"] {
        std::fs::create_dir_all(work.join(dir)).unwrap();
    }
    std::fs::write(work.join("node_modules/stash/sub/rust-toolchain.toml"), "[toolchain]\n")
        .unwrap();
    let first = ex.text("exec_command", serde_json::json!({"cmd": "true"}));
    assert!(first.contains("exited with code 0"), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let hook = format!("#!/bin/sh\\ntouch {}\\n", mark.display());
    let code = format!("[core]\\n\\tfsmonitor = touch {}\\n", mark.display());
    let plant = format!(
        "mv node_modules/stash/sub moved-in; \
         ln .npmrc node_modules/h && printf 'script-shell=/x\\n' > node_modules/h; \
         python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); \
         l.renameat2(-100,b\"a\",-100,b\"b\",2)'; \
         ln -s node_modules/x lib; \
         mkdir -p wt/.husky && printf '{hook}' > wt/.husky/pre-commit && chmod +x wt/.husky/pre-commit; \
         git worktree add -q wt2 && mkdir -p wt2/.husky && printf '{hook}' > wt2/.husky/pre-commit && \
         chmod +x wt2/.husky/pre-commit; \
         mkdir -p wt3/.hooks3 && printf '{hook}' > wt3/.hooks3/pre-commit && chmod +x wt3/.hooks3/pre-commit; \
         rm tools/gitconfig && printf '{code}' > tools/gitconfig; echo kept > control; echo planted"
    );
    let text = ex.text("exec_command", serde_json::json!({"cmd": plant}));
    assert!(text.contains("planted") && text.contains("moved aside"), "{text}");
    // Later calls: a repository in the swapped directory; then, in a call that changes nothing
    // the index watches, the link's target.
    let later = format!(
        "git init -q b/r && git -C b/r config core.fsmonitor 'touch {m}' && echo later",
        m = mark.display()
    );
    let text2 = ex.text("exec_command", serde_json::json!({"cmd": later}));
    assert!(text2.contains("later") && text2.contains("moved aside"), "{text2}");
    let linked = format!(
        "git init -q node_modules/x && git -C node_modules/x config core.fsmonitor 'touch {m}' && \
         echo linked",
        m = mark.display()
    );
    let text3 = ex.text("exec_command", serde_json::json!({"cmd": linked}));
    assert!(text3.contains("linked") && text3.contains("moved aside"), "{text3}");
    for (dir, name) in [
        (work.join("moved-in"), "rust-toolchain.toml"),
        (work.clone(), ".npmrc"),
        (work.join("wt"), ".husky"),
        (work.join("tools"), "gitconfig"),
    ] {
        assert!(moved(&dir, name), "{}/{name} stayed: {text}", dir.display());
    }
    assert!(!work.join("wt2/.husky/pre-commit").exists(), "{text}");
    assert!(!wt3.join(".hooks3/pre-commit").exists(), "{text}");
    assert!(moved(&work.join("b/r/.git"), "config"), "{text2}");
    assert!(moved(&work.join("node_modules/x/.git"), "config"), "{text3}");
    assert_eq!(std::fs::read_to_string(work.join("control")).unwrap(), "kept\n");
    for repo in
        [work.clone(), work.join("wt"), work.join("wt2"), work.join("b/r"), work.join("lib")]
    {
        git(&repo, &["status", "--short"]).assert_ok();
    }
    for repo in [work.join("wt"), work.join("wt2"), wt3] {
        git(&repo, &["commit", "--allow-empty", "-qm", "x"]).assert_ok();
    }
    assert!(!mark.exists(), "planted code ran outside the sandbox");
}
