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

/// The directories under `dir`, itself included (none when it does not exist).
fn directories_under(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    1 + entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| directories_under(&e.path()))
        .sum::<usize>()
}

/// A tree in the trash far deeper than removal descends (a command can make one in a run's
/// own `/tmp` layer), every level of it read-only: each run removes part of it and the trash is
/// empty of it after a few runs, as root and as uid 65534.
#[test]
fn a_tree_in_the_trash_far_deeper_than_removal_descends_is_gone_after_a_few_runs() {
    require_write_layer!();
    let launcher: &[&str] = &["exec", "-a", "never", "-s", "workspace-write"];
    for user in USERS {
        let scene = Scene::for_user(user);
        let trash = scene.home.path().join(".cordon/trash");
        let mut deep = trash.join("1000000000000000000-1-planted");
        for _ in 0..400 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "x").unwrap();
        if user == User::Nobody {
            chown_nobody(&scene.home.path().join(".cordon"));
        }
        // Every level read-only, as a command can leave them: removal and the move of what lies
        // too deep into a new trash entry both need the owner's rights given back first.
        let mut level = deep.clone();
        while level != trash {
            let read_only = std::os::unix::fs::PermissionsExt::from_mode(0o500);
            std::fs::set_permissions(&level, read_only).unwrap();
            level.pop();
        }
        let planted = directories_under(&trash);
        let mut left = Vec::new();
        for _ in 0..6 {
            // Long enough for the run's thread to get through what it can reach.
            run(user, &scene, launcher, &["sleep", "1"]);
            left.push(directories_under(&trash));
            if names(&trash).len() == 1 && *left.last().unwrap() < 50 {
                break;
            }
        }
        assert!(left[0] < planted, "{user:?}: the first run removed nothing of it: {left:?}");
        assert_eq!(names(&trash).len(), 1, "{user:?}: only the last run's own is left: {left:?}");
        assert!(*left.last().unwrap() < 50, "{user:?}: {planted} directories, then {left:?}");
    }
}
