//! What a transactional run leaves in `CORDON_HOME` when it keeps nothing: its directory goes
//! to the trash in one rename, and the next run empties the trash while its own command runs
//! — through `cordon exec` (the front end waits then) and through `cordon sandbox` (the
//! helper's applier waits then). Looked at from outside, as root and as uid 65534.

use std::path::Path;

use super::code_runs_later::Scene;
use super::util::*;

/// The names in `dir` but cordon's own stamps (`.pruned`); none when it does not exist.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into()).collect()
        })
        .unwrap_or_default();
    names.retain(|name: &String| !name.starts_with('.'));
    names.sort();
    names
}

/// Runs `command` (`true`, `sleep 2`) through `launcher` in the scene's workspace with
/// transactional writes; its exit status must be 0.
fn run(user: User, scene: &Scene, launcher: &[&str], command: &[&str]) {
    let ws = scene.ws.path().to_str().unwrap();
    let mut args: Vec<&str> = launcher.to_vec();
    args.extend(["--writes", "transaction", "-C", ws, "--"]);
    args.extend(command);
    let run: Run = cordon_command(user, &args)
        .env("HOME", scene.home.path())
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(0), "{user:?} {launcher:?}: {}\n{}", run.stdout, run.stderr);
}

#[test]
fn a_run_that_keeps_nothing_leaves_its_directory_to_the_trash_which_the_next_run_empties() {
    require_write_layer!();
    let launchers: [&[&str]; 2] = [
        &["exec", "-a", "never", "-s", "workspace-write"],
        &["sandbox", "linux", "-s", "workspace-write"],
    ];
    for user in USERS {
        for launcher in launchers {
            let scene = Scene::for_user(user);
            let cordon_home = scene.home.path().join(".cordon");
            run(user, &scene, launcher, &["true"]);
            assert_eq!(names(&cordon_home.join("runs")), Vec::<String>::new(), "{user:?}");
            assert_eq!(names(&cordon_home.join("kept")), Vec::<String>::new(), "{user:?}");
            let first = names(&cordon_home.join("trash"));
            assert_eq!(first.len(), 1, "{user:?} {launcher:?}: the run's directory: {first:?}");
            // Long enough for the trash to be emptied while it runs: only this run's own
            // directory is left in it afterwards.
            run(user, &scene, launcher, &["sleep", "2"]);
            let second = names(&cordon_home.join("trash"));
            assert_eq!(second.len(), 1, "{user:?} {launcher:?}: {second:?}");
            assert_ne!(first, second, "{user:?} {launcher:?}: the earlier run's is still there");
        }
    }
}
