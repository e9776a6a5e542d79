//! The helper called directly (Codex, a harness — no cordon front end after it) has a step
//! after the run of its own: what a read-only bind cannot keep from being created — a protected
//! name that did not exist — and a bound
//! name that another run's step renamed away and the command made anew, is moved aside once
//! nothing of the command is left; and so it is when the harness kills the helper with SIGKILL.
//! Each effect is checked on the host after the run, with a control that the command's other
//! writes stayed.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::util::*;

const WORKSPACE_WRITE: &str =
    r#"{"type":"workspace-write","exclude_slash_tmp":true,"exclude_tmpdir_env_var":true}"#;

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether `dir` holds `name` itself (not moved aside).
fn holds(dir: &Path, name: &str) -> bool {
    std::fs::symlink_metadata(dir.join(name)).is_ok()
}

#[test]
fn what_a_direct_run_plants_is_moved_aside_after_it() {
    require_mount_view!();
    let work = scratch();
    let run = helper(
        WORKSPACE_WRITE,
        work.path(),
        &[
            "sh",
            "-c",
            "mkdir .codex && echo x > .codex/config.toml && echo y > .envrc && echo kept > kept",
        ],
    );
    run.assert_ok();
    for name in [".codex", ".envrc"] {
        assert!(!holds(work.path(), name), "{name} stayed: {:?}", names(work.path()));
    }
    assert!(holds(work.path(), "kept"), "the command's own file went too");
    assert!(run.stderr.contains("moved aside"), "{}", run.stderr);
}

#[test]
fn a_harness_that_kills_the_helper_with_sigkill_still_gets_the_step_after_the_run() {
    require_mount_view!();
    let work = scratch();
    let mut cmd = helper_cmd(
        WORKSPACE_WRITE,
        work.path(),
        &[],
        &[
            "bash",
            "-c",
            "trap '' TERM; mkdir .vscode; echo x > .vscode/tasks.json; echo kept > kept; sleep 60",
        ],
    );
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + scaled(Duration::from_secs(20));
    while !holds(work.path(), "kept") {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
    nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.wait();
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while holds(work.path(), ".vscode") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!holds(work.path(), ".vscode"), "planted after SIGKILL: {:?}", names(work.path()));
    assert!(holds(work.path(), "kept"));
}

/// A bound name a concurrent run's step renamed away (the bind goes with it) and the command
/// made anew is moved aside too.
#[test]
fn a_bound_name_made_anew_after_another_run_moved_it_is_moved_aside() {
    require_mount_view!();
    let work = scratch();
    std::fs::create_dir(work.path().join(".codex")).unwrap();
    let mut cmd = helper_cmd(
        WORKSPACE_WRITE,
        work.path(),
        &[],
        &[
            "sh",
            "-c",
            "touch ready; while [ -e .codex ]; do sleep 0.05; done; mkdir .codex && echo x > .codex/config.toml",
        ],
    );
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + scaled(Duration::from_secs(20));
    while !holds(work.path(), "ready") {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    // What another run's step after it does with a name it saw appear.
    std::fs::rename(work.path().join(".codex"), work.path().join("elsewhere")).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!holds(work.path(), ".codex"), "stayed: {:?}", names(work.path()));
    assert!(holds(work.path(), "elsewhere"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("moved aside"));
}

/// A repository the command creates, or plants in, is looked at after a direct run too, as a
/// user as root and as uid 65534 would call the helper: its hook and its `core.fsmonitor` are
/// moved aside, the user's next `git status` and `git commit` there run nothing, and the
/// command's other files stay. The same for a hook planted where an existing repository's
/// `core.hooksPath` (on the section's line) leads.
#[test]
fn a_repository_a_direct_run_creates_is_cleaned_after_it() {
    require_mount_view!();
    for user in [User::Root, User::Nobody] {
        let work = scratch();
        let outside = scratch();
        let mark = outside.path().join("ran");
        let existing = work.path().join("existing");
        super::code_runs_later::git(work.path(), &["init", "-q", "existing"]).assert_ok();
        let config = existing.join(".git/config");
        let text = std::fs::read_to_string(&config).unwrap() + "[core] hooksPath = .husky\n";
        std::fs::write(&config, text).unwrap();
        if user == User::Nobody {
            chown_nobody(work.path());
            chown_nobody(outside.path());
        }
        let script = format!(
            "git init -q made/deeper/repo && \
             printf '#!/bin/sh\\ntouch {mark}\\n' > made/deeper/repo/.git/hooks/pre-commit && \
             chmod +x made/deeper/repo/.git/hooks/pre-commit && \
             git -C made/deeper/repo config core.fsmonitor 'touch {mark}' && \
             mkdir -p existing/.husky && printf '#!/bin/sh\\ntouch {mark}\\n' > existing/.husky/pre-commit && \
             chmod +x existing/.husky/pre-commit && echo kept > made/kept",
            mark = mark.display()
        );
        // Called as a harness calls it: by a link named as Codex's helper.
        let link = outside.path().join("codex-linux-sandbox");
        std::os::unix::fs::symlink(cordon_for(user), &link).unwrap();
        let run: Run = command_as(user, &link)
            .args(["--sandbox-policy-cwd", work.path().to_str().unwrap()])
            .args(["--sandbox-policy", WORKSPACE_WRITE, "--", "sh", "-c", &script])
            .current_dir(work.path())
            .env("HOME", outside.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
            .into();
        run.assert_ok();
        let repo = work.path().join("made/deeper/repo");
        assert!(!repo.join(".git/hooks/pre-commit").exists(), "{user:?}: the hook stayed");
        assert!(!existing.join(".husky").exists(), "{user:?}: the hooks path stayed");
        assert_eq!(std::fs::read_to_string(work.path().join("made/kept")).unwrap(), "kept\n");
        for dir in [&repo, &existing] {
            super::code_runs_later::git(dir, &["status", "--short"]).assert_ok();
            super::code_runs_later::git(dir, &["commit", "--allow-empty", "-qm", "x"]).assert_ok();
        }
        assert!(!mark.exists(), "{user:?}: planted code ran outside the sandbox");
        assert!(run.stderr.contains("moved aside"), "{user:?}: {}", run.stderr);
    }
}
