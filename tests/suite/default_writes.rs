//! How a run writes when nothing says how: through the write gate where this machine can make
//! a write layer, with `/tmp` and `$TMPDIR` its workspace's own; directly where it cannot,
//! saying why. Each test runs the real binary (as root and as uid 65534 where the user
//! matters) and looks from outside: the files on the host, the user's own git afterwards.

use std::path::Path;

use super::code_runs_later::{Scene, git, repository};
use super::util::*;

/// `cordon exec -a never -C ws ARGS…` as `user`, with `home` as HOME and its `.cordon`.
fn exec_in(user: User, ws: &Path, home: &Path, args: &[&str]) -> Run {
    let mut argv = vec!["exec", "-a", "never", "-C", ws.to_str().unwrap()];
    argv.extend_from_slice(args);
    cordon_command(user, &argv)
        .env("HOME", home)
        .env("CORDON_HOME", home.join(".cordon"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
        .into()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// With no `--writes`, a command that plants code in its repository's config gets the rest
/// of its changes applied, the config held back, and the user's next `git status` runs
/// nothing: the gate, not a search, is the default.
#[test]
fn by_default_a_run_writes_through_the_gate() {
    require_write_layer!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        repository(ws);
        chown_nobody_if(user, ws);
        let script = format!(
            "git config core.fsmonitor 'touch {}; false' && echo applied > f && \
             head -c 5000000 /dev/zero > zeros",
            scene.mark.display()
        );
        let run = exec_in(user, ws, scene.home.path(), &["--", "sh", "-c", &script]);
        run.assert_ok();
        assert_eq!(read(&ws.join("f")), "applied\n", "{user:?}: the control was not applied");
        // A large file that is no configuration passes whatever its first bytes.
        let zeros = std::fs::metadata(ws.join("zeros")).map(|meta| meta.len()).ok();
        assert_eq!(zeros, Some(5_000_000), "{user:?}: {}", run.stderr);
        assert!(run.stderr.contains("held back"), "{user:?}: {}", run.stderr);
        assert!(run.stderr.contains(".git/config"), "{user:?}: {}", run.stderr);
        git(ws, &["status"]).assert_ok();
        assert!(!scene.mark.exists(), "{user:?}: the planted fsmonitor ran");
        let plan = exec_in(user, ws, scene.home.path(), &["--dry-run", "--", "true"]);
        assert!(plan.stdout.contains("writes:       transaction"), "{user:?}: {}", plan.stdout);
    }
}

/// A file of the workspace handed to a transactional run (`< data.txt`) is the file the
/// sandbox shows by that name — read by name too (`/dev/stdin`, `/proc/self/fd/0`) — so a
/// write through it goes into the layer, to the gate, not around it through the host's
/// directory; writing directly, the same (the workspace's own file).
#[test]
fn a_workspace_file_handed_on_is_read_by_name_and_not_written_around_the_layer() {
    require_write_layer!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        std::fs::write(ws.join("data.txt"), "handed\n").unwrap();
        chown_nobody_if(user, ws);
        let script = "cat /dev/stdin; \
                      [ \"$(stat -L -c %d:%i /proc/self/fd/0)\" = \"$(stat -c %d:%i data.txt)\" ] \
                      && echo same; echo more >> /proc/self/fd/0 && echo wrote";
        for writes in ["transaction", "direct"] {
            let args = ["--writes", writes, "--", "sh", "-c", script];
            let mut argv = vec!["exec", "-a", "never", "-C", ws.to_str().unwrap()];
            argv.extend_from_slice(&args);
            let data = std::fs::File::open(ws.join("data.txt")).unwrap();
            let run: Run = cordon_command(user, &argv)
                .env("HOME", scene.home.path())
                .env("CORDON_HOME", scene.home.path().join(".cordon"))
                .stdin(data)
                .output()
                .unwrap()
                .into();
            assert_eq!(run.stdout, "handed\nsame\nwrote\n", "{user:?} {writes}: {}", run.stderr);
            assert_eq!(read(&ws.join("data.txt")), "handed\nmore\n", "{user:?} {writes}");
            std::fs::write(ws.join("data.txt"), "handed\n").unwrap();
        }
    }
}

/// A named pipe in the workspace handed to a transactional run (`< fifo`) still carries what
/// its writer sends: through the overlay the same name is another pipe, so the caller's end
/// is passed on.
#[test]
fn a_named_pipe_in_the_workspace_handed_on_still_carries_its_data() {
    require_write_layer!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let ws = scene.ws.path();
        assert!(
            std::process::Command::new("mkfifo").arg(ws.join("pipe")).status().unwrap().success()
        );
        chown_nobody_if(user, ws);
        let w = ws.display();
        let c = cordon_for(user);
        let c = c.display();
        let h = scene.home.path().display();
        let script = format!(
            "(sleep 0.5; echo through-the-pipe > {w}/pipe) & \
             HOME={h} CORDON_HOME={h}/.cordon {c} exec -a never -C {w} -- cat < {w}/pipe; wait"
        );
        let run: Run = command_as(user, "sh").args(["-c", &script]).output().unwrap().into();
        assert_eq!(run.stdout, "through-the-pipe\n", "{user:?}: {}", run.stderr);
    }
}

/// Where no write layer can be made (here: the mount view turned off), the run writes its
/// roots directly and says why, in `--json` and in `--dry-run`.
#[test]
fn where_no_write_layer_can_be_made_the_run_writes_directly_and_says_why() {
    require_sandbox!(1);
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path();
    let home = scene.home.path();
    let args = ["--json", "--best-effort", "--no-mount-view", "--", "sh", "-c", "echo d > f"];
    let run = exec_in(User::Root, ws, home, &args);
    run.assert_ok();
    assert_eq!(read(&ws.join("f")), "d\n");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let why = v["attempts"][0]["writes_direct_because"].as_str().unwrap_or_default();
    assert!(why.contains("mount view is turned off"), "{v}");
    let plan = exec_in(User::Root, ws, home, &["--dry-run", "--no-mount-view", "--", "true"]);
    assert!(
        plan.stdout.contains("writes:       direct (no write layer here: the mount view"),
        "{}",
        plan.stdout
    );
    // Named, a transaction is never replaced by direct writes.
    let args = ["--writes", "transaction", "--best-effort", "--no-mount-view", "--", "true"];
    let run = exec_in(User::Root, ws, home, &args);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
}

/// A command reads the host's `/tmp` and `$TMPDIR` but writes its workspace's own: what it
/// leaves there (a `rust-toolchain.toml` that would run its `cargo` in every project below)
/// never reaches the host, the workspace's next run finds it, another workspace's does not,
/// and what it deleted is still on the host.
#[test]
fn a_commands_temporary_directories_are_its_workspaces_own() {
    require_write_layer!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let (ws, home) = (scene.ws.path(), scene.home.path());
        let other = scratch();
        let tmpdir = scratch();
        chown_nobody_if(user, other.path());
        chown_nobody_if(user, tmpdir.path());
        let tag = format!("/tmp/cordon-e2e-private-{}-{user:?}", std::process::id());
        let host_file = format!("{tag}-host");
        std::fs::write(&host_file, "host\n").unwrap();
        chown_nobody_if(user, Path::new(&host_file));
        let with_tmpdir = |ws: &Path, script: &str| -> Run {
            let argv = ["exec", "-a", "never", "-C", ws.to_str().unwrap(), "--", "sh", "-c"];
            cordon_command(user, &argv)
                .arg(script)
                .env("HOME", home)
                .env("CORDON_HOME", home.join(".cordon"))
                .env("TMPDIR", tmpdir.path())
                .output()
                .unwrap()
                .into()
        };
        let first = with_tmpdir(
            ws,
            &format!(
                "cat {host_file} && mkdir -p {tag} && \
                 printf '[toolchain]\\npath = \"/x\"\\n' > {tag}/rust-toolchain.toml && \
                 echo mine > {tag}-mine && echo t > \"$TMPDIR/t\" && rm {host_file} && echo done"
            ),
        );
        first.assert_ok();
        assert_eq!(first.stdout, "host\ndone\n", "{user:?}: {}", first.stderr);
        assert!(!Path::new(&tag).exists(), "{user:?}: the command's /tmp reached the host");
        assert!(!Path::new(&format!("{tag}-mine")).exists(), "{user:?}");
        assert!(!tmpdir.path().join("t").exists(), "{user:?}: its $TMPDIR reached the host");
        assert_eq!(read(Path::new(&host_file)), "host\n", "{user:?}: its deletion reached it");
        let again = with_tmpdir(
            ws,
            &format!("cat {tag}-mine \"$TMPDIR/t\"; test -e {host_file} || echo deleted"),
        );
        assert_eq!(again.stdout, "mine\nt\ndeleted\n", "{user:?}: {}", again.stderr);
        let elsewhere = with_tmpdir(
            other.path(),
            &format!("test -e {tag}-mine || echo absent; cat {host_file}"),
        );
        assert_eq!(elsewhere.stdout, "absent\nhost\n", "{user:?}: {}", elsewhere.stderr);
        let _ = std::fs::remove_file(&host_file);
    }
}

/// A workspace that lies in `/tmp` (a `mktemp -d` project) gets both: its own changes are
/// applied through the gate, the rest of `/tmp` stays the run's.
#[test]
fn a_workspace_under_tmp_is_applied_while_the_rest_of_tmp_stays_its_own() {
    require_write_layer!();
    for user in USERS {
        let ws = tempfile::Builder::new().prefix("cordon-e2e-ws-").tempdir_in("/tmp").unwrap();
        let ws = std::fs::canonicalize(ws.path()).map(|path| (ws, path)).unwrap();
        let (_keep, ws) = ws;
        let home = scratch();
        let mark = home.path().join("marker");
        repository(&ws);
        chown_nobody_if(user, &ws);
        chown_nobody_if(user, home.path());
        let stray = format!("/tmp/cordon-e2e-stray-{}-{user:?}", std::process::id());
        let script = format!(
            "echo applied > f && git config core.fsmonitor 'touch {}; false'; echo x > {stray}",
            mark.display()
        );
        let run = exec_in(user, &ws, home.path(), &["--", "sh", "-c", &script]);
        run.assert_ok();
        assert_eq!(read(&ws.join("f")), "applied\n", "{user:?}: {}", run.stderr);
        assert!(!Path::new(&stray).exists(), "{user:?}: /tmp reached the host");
        git(&ws, &["status"]).assert_ok();
        assert!(!mark.exists(), "{user:?}: the planted fsmonitor ran");
    }
}

fn chown_nobody_if(user: User, path: &Path) {
    if user == User::Nobody {
        chown_nobody(path);
    }
}

/// `git mv` of a directory that existed fails through a write layer (`EXDEV`): cordon names
/// it as that, never as a sandbox denial, and a person asked after a failure is offered the
/// same command again in the sandbox with direct writes — which then moves the directory.
#[test]
fn a_rename_a_transaction_cannot_make_is_offered_again_with_direct_writes() {
    require_write_layer!();
    let (ws, home) = (scratch(), scratch());
    repository(ws.path());
    std::fs::create_dir(ws.path().join("d")).unwrap();
    std::fs::write(ws.path().join("d/a"), "a\n").unwrap();
    git(ws.path(), &["add", "d"]).assert_ok();
    git(ws.path(), &["commit", "-qm", "d"]).assert_ok();
    // Not asked (`-a never`): the run fails, named, with its remedy.
    let run =
        exec_in(User::Root, ws.path(), home.path(), &["--json", "--", "git", "mv", "d", "d2"]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["attempts"][0]["verdict"], "renamed_existing_directory", "{v}");
    assert_eq!(v["attempts"].as_array().unwrap().len(), 1, "{v}");
    assert!(ws.path().join("d/a").is_file(), "the failed rename changed the workspace");
    // Asked at a terminal, and approved: the second attempt writes directly, still sandboxed.
    let args = ["-a", "on-failure", "--", "git", "mv", "d", "d2"];
    let (transcript, code) =
        super::exec::exec_on_terminal(&home.path().join(".cordon"), ws.path(), &args, &["y"]);
    assert!(transcript.contains("writing the workspace directly"), "{transcript}");
    assert!(!transcript.contains("WITHOUT the sandbox"), "{transcript}");
    assert_eq!(code, 0, "{transcript}");
    assert_eq!(read(&ws.path().join("d2/a")), "a\n", "{transcript}");
    assert!(!ws.path().join("d").exists(), "{transcript}");
}

/// What a command makes of its workspace's `/tmp` never turns into a way past the gate or a
/// way to stop the workspace's later runs: a path named as an allowed socket that is a
/// directory is not bound from the host (the command writes its own copy); a link left where a
/// later `--add-dir` root under `/tmp` lies is cleared before that run; another run's state in
/// `$CORDON_HOME` is not readable inside.
#[test]
fn the_workspaces_tmp_is_no_way_past_the_gate_and_no_way_to_stop_its_runs() {
    require_write_layer!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let (ws, home) = (scene.ws.path(), scene.home.path());
        let tag = format!("/tmp/cordon-e2e-way-{}-{user:?}", std::process::id());
        // A directory where a socket is allowed: written inside, never on the host.
        let dir = format!("{tag}-dir");
        std::fs::create_dir_all(&dir).unwrap();
        chown_nobody_if(user, Path::new(&dir));
        let script = format!("echo w > {dir}/w && cat {dir}/w");
        let run = exec_in(
            user,
            ws,
            home,
            &["--network", "--allow-unix-socket", &dir, "--", "sh", "-c", &script],
        );
        run.assert_ok();
        assert!(!Path::new(&dir).join("w").exists(), "{user:?}: the host's /tmp was written");
        // A link planted where a later run's root under /tmp lies: that run still starts.
        let root = format!("{tag}-root");
        std::fs::create_dir_all(&root).unwrap();
        chown_nobody_if(user, Path::new(&root));
        let plant = format!("rm -rf {root}; ln -s / {root}");
        exec_in(user, ws, home, &["--", "sh", "-c", &plant]).assert_ok();
        let later = exec_in(
            user,
            ws,
            home,
            &["--add-dir", &root, "--", "sh", "-c", &format!("echo r > {root}/r")],
        );
        later.assert_ok();
        assert_eq!(read(&Path::new(&root).join("r")), "r\n", "{user:?}: {}", later.stderr);
        // cordon's run state is not readable inside.
        let cordon_home = home.join(".cordon");
        let look = format!(
            "find {0}/temporary {0}/runs -mindepth 1 2>/dev/null | wc -l",
            cordon_home.display()
        );
        let run = exec_in(user, ws, home, &["--", "sh", "-c", &look]);
        assert_eq!(run.stdout.trim(), "0", "{user:?}: {}", run.stdout);
        assert!(cordon_home.join("temporary").is_dir(), "{user:?}: nothing was kept to hide");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// A workspace that is `/tmp` itself has its writes applied, not kept as scratch.
#[test]
fn a_workspace_that_is_tmp_has_its_writes_applied() {
    require_write_layer!();
    let home = scratch();
    let name = format!("/tmp/cordon-e2e-tmp-workspace-{}", std::process::id());
    let run = exec_in(
        User::Root,
        Path::new("/tmp"),
        home.path(),
        &["--", "sh", "-c", &format!("echo a > {name}")],
    );
    run.assert_ok();
    assert_eq!(read(Path::new(&name)), "a\n", "{}", run.stderr);
    let _ = std::fs::remove_file(&name);
}

/// What a run held back is listed by `cordon held` (each entry described: kind, mode, size,
/// where a link leads), taken in by `--take` when the user says so (a copy from where it was
/// kept, with its mode), and removed by `--drop`.
#[test]
fn what_was_held_is_listed_taken_in_on_request_and_dropped() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let (ws, home) = (scene.ws.path(), scene.home.path());
    repository(ws);
    let script = "printf '#!/bin/sh\\necho hook\\n' > .git/hooks/pre-commit && \
                  chmod 755 .git/hooks/pre-commit && echo ok > ok";
    exec_in(User::Root, ws, home, &["--", "sh", "-c", script]).assert_ok();
    let hook = ws.join(".git/hooks/pre-commit");
    assert!(!hook.exists(), "the hook was applied");
    let held = |args: &[&str]| -> Run {
        cordon_command(User::Root, &[&["held"][..], args].concat())
            .env("HOME", home)
            .env("CORDON_HOME", home.join(".cordon"))
            .output()
            .unwrap()
            .into()
    };
    let list = held(&["--json"]);
    list.assert_ok();
    let runs: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    let id = runs[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(runs[0]["held"][0]["path"], hook.to_str().unwrap(), "{runs}");
    let shown = held(&[&id]);
    assert!(shown.stdout.contains(".git/hooks/pre-commit"), "{}", shown.stdout);
    // What is kept is described before anything is taken: its kind, mode and size.
    assert!(shown.stdout.contains("file, mode 0755, 20 bytes"), "{}", shown.stdout);
    let one: serde_json::Value = serde_json::from_str(&held(&[&id, "--json"]).stdout).unwrap();
    assert_eq!(one["held"][0]["contents"][0]["what"], "file, mode 0755, 20 bytes", "{one}");
    // Not held: refused, naming it.
    let other = ws.join("ok");
    let refused = held(&[&id, "--take", other.to_str().unwrap()]);
    assert_ne!(refused.code, Some(0));
    assert!(refused.stderr.contains("held nothing"), "{}", refused.stderr);
    held(&[&id, "--take", hook.to_str().unwrap()]).assert_ok();
    assert_eq!(read(&hook), "#!/bin/sh\necho hook\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&hook).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755);
    held(&[&id, "--drop"]).assert_ok();
    let list = held(&["--json"]);
    assert_eq!(list.stdout.trim(), "[]", "{}", list.stdout);
}
