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
