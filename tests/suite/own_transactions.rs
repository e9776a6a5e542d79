//! A transaction of the helper's own: a caller that runs the helper directly (a harness
//! speaking Codex's argv, `cordon sandbox`, an executor call) asks for one (`--writes
//! transaction`, the request's `writes`, `exec_command`'s `writes`), and the helper's applier
//! applies the command's changes through the write gate when it is over — with no cordon front
//! end left to do it. Each effect is checked on the host afterwards, with a positive control
//! that the command's other changes arrived.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::code_runs_later::{Scene, git, repository};
use super::executor::Executor;
use super::util::*;

const WORKSPACE_WRITE: &str = r#"{"type":"workspace-write"}"#;

/// `codex-linux-sandbox --sandbox-policy-cwd WS --sandbox-policy P EXTRA -- sh -c SCRIPT` as
/// `user`, called by a link named as Codex's helper, with the scene's HOME and a CORDON_HOME in
/// it.
fn helper_command(user: User, scene: &Scene, extra: &[&str], script: &str) -> Command {
    let link = scene.outside.path().join("codex-linux-sandbox");
    if !link.exists() {
        std::os::unix::fs::symlink(cordon_for(user), &link).unwrap();
    }
    let ws = scene.ws.path();
    let mut command = command_as(user, &link);
    command
        .args(["--sandbox-policy-cwd", ws.to_str().unwrap(), "--sandbox-policy", WORKSPACE_WRITE])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .current_dir(ws)
        .env("HOME", scene.home.path())
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null());
    command
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// What the plant in [`planting_script`] leaves for git, rustup, cargo or a shell to run later,
/// relative to the workspace: none of it may arrive.
const PLANTED: &[&str] =
    &[".git/hooks/pre-commit", "rust-toolchain.toml", ".cargo/config.toml", "pipe", ".envrc"];

/// A command that changes the workspace (a modified file, a new one, a deletion, a new tree)
/// and plants code that would run later in every class the gate holds: a hook, a key git runs
/// (on the section's line, and in an included file), a file a tool loads from its parents, in
/// the workspace and in `/tmp`, a FIFO, a start-up file, a new repository with a planted config
/// deep in a new tree. Then it exits with 3.
fn planting_script(scene: &Scene, tmp_name: &str) -> String {
    let mark = scene.mark.display();
    let fsmonitor = format!("\\tfsmonitor = \\\"touch {mark}; false\\\"\\n");
    format!(
        "set -e; echo 2 > f; echo new > new; rm old; mkdir -p a/b/c && echo deep > a/b/c/file; \
         printf '#!/bin/sh\\ntouch {mark}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         printf '[core] hooksPath = .githooks\\n' >> .git/config; \
         printf '[core]\\n{fsmonitor}' >> tools/gitconfig; \
         printf '[toolchain]\\npath = \"/x\"\\n' > rust-toolchain.toml; \
         printf '[toolchain]\\npath = \"/x\"\\n' > /tmp/{tmp_name}; \
         mkdir -p .cargo && printf '[build]\\nrustc-wrapper = \"/x\"\\n' > .cargo/config.toml; \
         mkfifo pipe; echo 'touch {mark}' > .envrc; \
         mkdir -p src/m1/p2/d3/newrepo && cd src/m1/p2/d3/newrepo && git init -q . && \
         printf '[core]\\n{fsmonitor}' >> .git/config && cd - >/dev/null && \
         echo done; exit 3"
    )
}

/// A scene whose workspace is a repository (`f` = "1", an untracked `old`, an included
/// `tools/gitconfig`), `user`'s.
fn planting_scene(user: User) -> Scene {
    let scene = Scene::for_user(user);
    let ws = scene.ws.path();
    repository(ws);
    std::fs::create_dir_all(ws.join("tools")).unwrap();
    std::fs::write(ws.join("tools/gitconfig"), "[user]\n\tname = t\n").unwrap();
    git(ws, &["config", "include.path", "../tools/gitconfig"]).assert_ok();
    std::fs::write(ws.join("old"), "to delete\n").unwrap();
    if user == User::Nobody {
        chown_nobody(ws);
        chown_nobody(scene.home.path());
    }
    scene
}

/// The host after [`planting_script`]: every ordinary change arrived, nothing planted did, and
/// the user's own git afterwards runs nothing.
fn check_host(user: User, scene: &Scene, tmp_name: &str) {
    let ws = scene.ws.path();
    assert_eq!(read(&ws.join("f")), "2\n", "{user:?}");
    assert_eq!(read(&ws.join("new")), "new\n", "{user:?}");
    assert_eq!(read(&ws.join("a/b/c/file")), "deep\n", "{user:?}");
    assert!(!exists(&ws.join("old")), "{user:?}: the deletion was not applied");
    assert!(ws.join("src/m1/p2/d3/newrepo/.git/HEAD").is_file(), "{user:?}");
    for planted in PLANTED {
        assert!(!exists(&ws.join(planted)), "{user:?}: {planted} reached the workspace");
    }
    assert!(!exists(&Path::new("/tmp").join(tmp_name)), "{user:?}: /tmp is the host's");
    assert!(!read(&ws.join(".git/config")).contains("hooksPath"), "{user:?}");
    assert!(!read(&ws.join("tools/gitconfig")).contains("fsmonitor"), "{user:?}");
    assert!(!ws.join("src/m1/p2/d3/newrepo/.git/config").exists(), "{user:?}");
    for dir in [ws.to_path_buf(), ws.join("src/m1/p2/d3/newrepo")] {
        git(&dir, &["status", "--short"]).assert_ok();
    }
    git(ws, &["commit", "-qam", "after"]).assert_ok();
    assert!(!scene.mark.exists(), "{user:?}: planted code ran outside the sandbox");
}

/// Called as a harness calls Codex's helper, with `--writes transaction`: the helper's exit
/// status is the command's, and by the time it exits the changes are applied and what would
/// run code later is held back and named. As root and as uid 65534.
#[test]
fn the_helper_called_directly_applies_its_own_transaction_through_the_gate() {
    require_write_layer!();
    for user in USERS {
        let scene = planting_scene(user);
        let tmp_name = format!("cordon-e2e-own-{}-{user:?}", std::process::id());
        let script = planting_script(&scene, &tmp_name);
        let run: Run = helper_command(user, &scene, &["--writes", "transaction"], &script)
            .output()
            .unwrap()
            .into();
        assert_eq!(run.code, Some(3), "{user:?}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("done"), "{user:?}: {}", run.stderr);
        assert!(run.stderr.contains("held back"), "{user:?}: {}", run.stderr);
        assert!(run.stderr.contains("rust-toolchain.toml"), "{user:?}: {}", run.stderr);
        check_host(user, &scene, &tmp_name);
        // The held changes are kept for the user, out of the runs in flight.
        let cordon_home = scene.home.path().join(".cordon");
        assert_eq!(std::fs::read_dir(cordon_home.join("runs")).unwrap().count(), 0, "{user:?}");
        let held: Run = cordon_command(user, &["held"])
            .env("CORDON_HOME", &cordon_home)
            .output()
            .unwrap()
            .into();
        let ws = scene.ws.path().display().to_string();
        assert!(held.stdout.contains(&ws), "{user:?}: {}{}", held.stdout, held.stderr);
    }
}

/// A harness's timeout kills the helper's whole process group while the command runs: the
/// command's processes are gone, none of its half-made changes reach the workspace, and the
/// run is kept for the user (listed by `cordon held`) rather than lost.
#[test]
fn a_helper_killed_while_its_command_runs_applies_nothing_and_keeps_the_run() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    repository(scene.ws.path());
    let marker = format!("cordon-e2e-killed-{}", std::process::id());
    let script = format!("echo half > half; echo started > /tmp/{marker}; exec sleep 59.7");
    let mut command = helper_command(User::Root, &scene, &["--writes", "transaction"], &script);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // The command's /tmp is the workspace's own: its first write shows there.
    let cordon_home = scene.home.path().join(".cordon");
    let deadline = Instant::now() + scaled(Duration::from_secs(20));
    let started =
        || walk_names(&cordon_home.join("temporary")).iter().any(|name| name.ends_with(&marker));
    while !started() {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
    nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.wait();
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    let kept = cordon_home.join("kept");
    let interrupted = || {
        std::fs::read_dir(&kept).into_iter().flatten().flatten().any(|entry| {
            std::fs::read_to_string(entry.path().join("state")).is_ok_and(|s| s == "interrupted")
        })
    };
    while !interrupted() {
        assert!(Instant::now() < deadline, "the run was not kept: {:?}", walk_names(&kept));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!scene.ws.path().join("half").exists(), "a half-run command's change was applied");
    let held: Run = cordon_command(User::Root, &["held"])
        .env("CORDON_HOME", &cordon_home)
        .output()
        .unwrap()
        .into();
    assert!(held.stdout.contains("interrupted"), "{}{}", held.stdout, held.stderr);
    let sleeping = Command::new("pgrep").args(["-f", "sleep 59.7"]).output().unwrap();
    assert!(sleeping.stdout.is_empty(), "the command outlived the helper");
}

/// Every name under `dir`, as paths.
fn walk_names(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            names.push(path.display().to_string());
        }
    }
    names
}

/// Where no transaction can be made (here: CORDON_HOME inside the workspace, where the command
/// could write its own layers), `--writes transaction` fails closed with the reason and runs
/// nothing, and `--writes auto` writes directly and says why.
#[test]
fn a_transaction_that_cannot_be_made_is_refused_or_named() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path();
    let mut command =
        helper_command(User::Root, &scene, &["--writes", "transaction"], "echo x > x");
    command.env("CORDON_HOME", ws.join("state"));
    let run: Run = command.output().unwrap().into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("transactional writes"), "{}", run.stderr);
    assert!(!ws.join("x").exists(), "a refused run ran");
    let mut command = helper_command(User::Root, &scene, &["--writes", "auto"], "echo y > y");
    command.env("CORDON_HOME", ws.join("state"));
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    assert!(run.stderr.contains("writing the roots directly"), "{}", run.stderr);
    assert_eq!(read(&ws.join("y")), "y\n");
}

/// An executor call asks for a transaction with `writes`: its changes arrive when it ends and
/// what would run code later is held and named in its output; a terminal session cannot ask
/// (it writes as it runs), and a call that does not ask writes directly as before.
#[test]
fn an_executor_call_can_ask_for_a_transaction() {
    require_write_layer!();
    let mut ex = Executor::start(&[]);
    let ws = ex.work.path().to_path_buf();
    let outside = scratch();
    let mark = outside.path().join("ran");
    repository(&ws);
    let plant = format!(
        "echo applied > made && printf '#!/bin/sh\\ntouch {}\\n' > .git/hooks/pre-commit && \
         chmod +x .git/hooks/pre-commit && git config core.fsmonitor 'touch {}' && echo planted",
        mark.display(),
        mark.display()
    );
    let text = ex.text("exec_command", serde_json::json!({"cmd": plant, "writes": "transaction"}));
    assert!(text.contains("planted") && text.contains("held back"), "{text}");
    assert_eq!(read(&ws.join("made")), "applied\n");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "the hook arrived");
    assert!(!read(&ws.join(".git/config")).contains("fsmonitor"), "the config arrived");
    git(&ws, &["status"]).assert_ok();
    git(&ws, &["commit", "--allow-empty", "-qm", "x"]).assert_ok();
    assert!(!mark.exists(), "planted code ran outside the sandbox");
    let refused = ex.call(
        "exec_command",
        serde_json::json!({"cmd": "echo t > t", "writes": "transaction", "tty": true}),
    );
    assert!(refused.to_string().contains("tty"), "{refused}");
    assert!(!ws.join("t").exists(), "a refused call ran");
    // An escalated call runs without the sandbox: no transaction to make, said by name.
    let escalated = ex.call(
        "exec_command",
        serde_json::json!({"cmd": "echo e > e", "writes": "transaction",
            "sandbox_permissions": "require_escalated", "justification": "test"}),
    );
    assert!(escalated.to_string().contains("needs the sandbox"), "{escalated}");
    assert!(!ws.join("e").exists(), "a refused call ran");
    let direct = ex.text("exec_command", serde_json::json!({"cmd": "echo d > direct"}));
    assert!(direct.contains("exited with code 0"), "{direct}");
    assert_eq!(read(&ws.join("direct")), "d\n");
}

/// A write layer is applied when the supervisor has ended, and only a PID namespace ends every
/// process of the command with it: without one (`--no-pid-namespace`, or a kernel that refuses
/// the namespace while it grants the mount view) a transaction fails closed and runs nothing,
/// and `auto` writes directly and says why. The same for a policy without a sandbox.
#[test]
fn a_transaction_without_a_pid_namespace_or_a_sandbox_is_refused() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path();
    let no_pid = ["--no-pid-namespace", "--writes", "transaction"];
    let run: Run =
        helper_command(User::Root, &scene, &no_pid, "echo x > x").output().unwrap().into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("PID namespace"), "{}", run.stderr);
    assert!(!ws.join("x").exists(), "a refused run ran");
    let auto = ["--no-pid-namespace", "--writes", "auto"];
    let run: Run = helper_command(User::Root, &scene, &auto, "echo y > y").output().unwrap().into();
    run.assert_ok();
    assert!(run.stderr.contains("writing the roots directly"), "{}", run.stderr);
    assert_eq!(read(&ws.join("y")), "y\n");
    // A user namespace whose PID namespaces are used up: the mount view, no PID namespace.
    let helper = helper_command(User::Root, &scene, &["--writes", "transaction"], "echo z > z");
    let mut argv = vec![helper.get_program().to_owned()];
    argv.extend(helper.get_args().map(|arg| arg.to_owned()));
    let link = scene.outside.path().join("codex-linux-sandbox");
    let script = "echo 0 > /proc/sys/user/max_pid_namespaces && exec \"$@\"";
    let run: Run = Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", script, "sh"])
        .arg(&link)
        .args(&argv[1..])
        .current_dir(ws)
        .env("HOME", scene.home.path())
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("PID namespace"), "{}", run.stderr);
    assert!(!ws.join("z").exists(), "a refused run ran");
    let policy = r#"{"type":"danger-full-access"}"#;
    let run: Run = Command::new(&link)
        .args(["--sandbox-policy-cwd", ws.to_str().unwrap(), "--sandbox-policy", policy])
        .args(["--writes", "transaction", "--", "sh", "-c", "echo w > w"])
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(!ws.join("w").exists(), "a refused run ran");
}

/// Every directory the command writes goes through a layer in a transaction: `/tmp` when the
/// policy's directory does not exist (no workspace to keep it for: the run's own), and a
/// `$TMPDIR` whose path is too long to name its kept layer by: nothing reaches the host's.
#[test]
fn a_transactions_temporary_directories_never_reach_the_host() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let marker = format!("cordon-e2e-own-tmp-{}", std::process::id());
    let missing = scene.outside.path().join("no-such-workspace");
    let command = helper_command(
        User::Root,
        &scene,
        &["--writes", "transaction"],
        &format!("echo x > /tmp/{marker}"),
    );
    let args: Vec<std::ffi::OsString> = command
        .get_args()
        .map(|arg| if arg == scene.ws.path() { missing.clone().into() } else { arg.to_owned() })
        .collect();
    let mut command = Command::new(command.get_program());
    command
        .args(args)
        .current_dir(scene.ws.path())
        .env("HOME", scene.home.path())
        .env("CORDON_HOME", scene.home.path().join(".cordon"));
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    assert!(!Path::new("/tmp").join(&marker).exists(), "{}", run.stderr);
    let long = scene.outside.path().join("d".repeat(100)).join("e".repeat(110));
    std::fs::create_dir_all(&long).unwrap();
    let mut command = helper_command(
        User::Root,
        &scene,
        &["--writes", "transaction"],
        "echo x > \"$TMPDIR/made\" && mkdir -p \"$TMPDIR/repo/.git/hooks\"",
    );
    command.env("TMPDIR", &long);
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    assert!(!long.join("made").exists(), "$TMPDIR was written directly: {}", run.stderr);
    assert!(!long.join("repo").exists(), "$TMPDIR was written directly: {}", run.stderr);
    assert!(!run.stderr.contains("written directly"), "{}", run.stderr);
}

/// The applier killed (from outside) while the command runs: the helper does not exit as if
/// the changes were in place — it fails (125) naming the run, whose changes are kept.
#[test]
fn a_helper_whose_applier_is_killed_says_its_changes_are_not_in_place() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    repository(scene.ws.path());
    let script = "sleep 1; echo important > work.txt; sleep 1";
    let child = helper_command(User::Root, &scene, &["--writes", "transaction"], script)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The applier: the helper's child that leads a session of its own.
    let helper = child.id().to_string();
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    let applier = loop {
        let listing = Command::new("ps").args(["-eo", "pid=,ppid=,sid="]).output().unwrap();
        let found = String::from_utf8_lossy(&listing.stdout).lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() == 3 && fields[1] == helper && fields[0] == fields[2])
                .then(|| fields[0].to_owned())
        });
        if let Some(pid) = found {
            break pid;
        }
        assert!(Instant::now() < deadline, "no applier found");
        std::thread::sleep(Duration::from_millis(20));
    };
    let pid = nix::unistd::Pid::from_raw(applier.parse().unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let output = child.wait_with_output().unwrap();
    let run: Run = output.into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("not in place"), "{}", run.stderr);
    assert!(!scene.ws.path().join("work.txt").exists());
}

/// A writable root that is a git directory (a linked worktree's repository, granted with
/// `--add-dir REPO/.git` so that `git commit` works there) is judged as that git directory:
/// the commit arrives, a hook planted in it does not. As root and as uid 65534.
#[test]
fn a_root_that_is_a_git_directory_is_judged_as_one() {
    require_write_layer!();
    for user in USERS {
        let scene = Scene::for_user(user);
        let main = scene.ws.path().join("main");
        repository(&main);
        let worktree = scene.ws.path().join("wt");
        git(&main, &["worktree", "add", "-q", worktree.to_str().unwrap()]).assert_ok();
        if user == User::Nobody {
            chown_nobody(scene.ws.path());
        }
        let script = format!(
            "echo x > g && git add g && git -c user.name=t -c user.email=t@example.test commit -qm wt \
             && printf '#!/bin/sh\\ntouch {}\\n' > {}/.git/hooks/post-checkout \
             && chmod +x {}/.git/hooks/post-checkout && echo planted",
            scene.mark.display(),
            main.display(),
            main.display()
        );
        let git_dir = main.join(".git");
        let args = [
            "exec",
            "-a",
            "never",
            "--writes",
            "transaction",
            "--add-dir",
            git_dir.to_str().unwrap(),
            "-C",
            worktree.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ];
        let run: Run = cordon_command(user, &args)
            .env("HOME", scene.home.path())
            .env("CORDON_HOME", scene.home.path().join(".cordon"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
            .into();
        assert!(run.stdout.contains("planted"), "{user:?}: {}{}", run.stdout, run.stderr);
        let log = git(&worktree, &["log", "--oneline", "-1"]);
        assert!(log.stdout.contains("wt"), "{user:?}: the commit did not arrive: {}", log.stdout);
        assert!(!git_dir.join("hooks/post-checkout").exists(), "{user:?}: the hook arrived");
        git(&main, &["checkout", "-q", "-b", "later"]).assert_ok();
        assert!(!scene.mark.exists(), "{user:?}: planted code ran outside the sandbox");
    }
}

/// `--add-dir` naming a file says it is not a root, and it is not: the command cannot write
/// it, in any way of writing.
#[test]
fn an_added_file_is_not_a_writable_root() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    repository(scene.ws.path());
    let outside = scratch();
    let file = outside.path().join("config");
    std::fs::write(&file, "before\n").unwrap();
    for writes in ["transaction", "direct"] {
        let script = format!("echo after >> {}", file.display());
        let args = [
            "exec",
            "-a",
            "never",
            "--writes",
            writes,
            "--add-dir",
            file.to_str().unwrap(),
            "-C",
            scene.ws.path().to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ];
        let run: Run = cordon_command(User::Root, &args)
            .env("CORDON_HOME", scene.home.path().join(".cordon"))
            .output()
            .unwrap()
            .into();
        assert!(run.stderr.contains("not a writable root"), "{writes}: {}", run.stderr);
        assert_eq!(read(&file), "before\n", "{writes}: {}", run.stderr);
    }
}

/// A command that makes its workspace root itself a bare repository (which git then finds
/// from there) gets its hooks and configuration judged as that repository's: held.
#[test]
fn a_root_the_command_makes_a_git_directory_is_judged_as_one() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path();
    let script = format!(
        "git init -q --bare . && printf '[core]\\n\\tfsmonitor = touch {m}\\n' >> config && \
         printf '#!/bin/sh\\ntouch {m}\\n' > hooks/post-checkout && chmod +x hooks/post-checkout \
         && echo made",
        m = scene.mark.display()
    );
    let args = ["exec", "-a", "never", "--writes", "transaction", "-C", ws.to_str().unwrap(), "--"];
    let run: Run = cordon_command(User::Root, &args)
        .args(["sh", "-c", &script])
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .output()
        .unwrap()
        .into();
    assert!(run.stdout.contains("made"), "{}{}", run.stdout, run.stderr);
    assert!(ws.join("HEAD").is_file(), "the repository's own files did not arrive");
    assert!(!ws.join("hooks/post-checkout").exists(), "the hook arrived");
    assert!(!ws.join("config").exists() || !read(&ws.join("config")).contains("fsmonitor"));
    let _ = Command::new("git").args(["-C", ws.to_str().unwrap(), "status"]).output();
    assert!(!scene.mark.exists(), "planted code ran outside the sandbox");
}

/// `cordon exec --writes transaction -- sh -c SCRIPT` in the scene's workspace, as root, with
/// the scene's `CORDON_HOME` and no system git configuration.
fn transactional_git_script(scene: &Scene, script: &str) -> Run {
    let ws = scene.ws.path().to_str().unwrap();
    let args = ["exec", "-a", "never", "--writes", "transaction", "-C", ws, "--", "sh", "-c"];
    cordon_command(User::Root, &args)
        .arg(script)
        .env("CORDON_HOME", scene.home.path().join(".cordon"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
        .into()
}

/// `core.worktree` is plain data when it leads to a checkout inside the root (what `git
/// submodule` writes), never when it leads into a git directory: a work tree of `.git/hooks`
/// makes the user's next `git checkout` write a hook from a commit the command made, and run
/// it.
#[test]
fn a_work_tree_inside_a_git_directory_is_held() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path();
    repository(ws);
    let script = format!(
        "set -e; G=$(git rev-parse --absolute-git-dir); \
         printf '#!/bin/sh\\ntouch {m}\\n' > /tmp/hook-$$; \
         B=$(git hash-object -w /tmp/hook-$$); \
         T=$(printf '100755 blob %s\\tpost-checkout\\n' $B | git mktree); \
         C=$(GIT_AUTHOR_NAME=n GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=n GIT_COMMITTER_EMAIL=a@b \
             git commit-tree -m feature $T); \
         git update-ref refs/heads/feature $C; git config core.worktree \"$G/hooks\"; echo planted",
        m = scene.mark.display()
    );
    let run = transactional_git_script(&scene, &script);
    assert!(run.stdout.contains("planted"), "{}{}", run.stdout, run.stderr);
    assert!(!read(&ws.join(".git/config")).contains("worktree"), "{}", run.stderr);
    // The branch itself arrived (objects and refs are ordinary): the control.
    git(ws, &["rev-parse", "--verify", "feature"]).assert_ok();
    let _ = git(ws, &["checkout", "-q", "feature"]);
    assert!(!scene.mark.exists(), "planted code ran outside the sandbox");
}

/// The same through a link the command makes: `core.worktree = ../lnk/..` with `lnk` leading
/// to `.git/hooks` reads lexically as the workspace, and git takes the `..` from where the link
/// leads — the git directory.
#[test]
fn a_work_tree_reached_through_a_link_and_dot_dot_is_held() {
    require_write_layer!();
    let scene = Scene::for_user(User::Root);
    let ws = scene.ws.path();
    repository(ws);
    let script = format!(
        "set -e; printf '#!/bin/sh\\ntouch {m}\\n' > /tmp/hook-$$; \
         B=$(git hash-object -w /tmp/hook-$$); \
         H=$(printf '100755 blob %s\\tpost-checkout\\n' $B | git mktree); \
         T=$(printf '040000 tree %s\\thooks\\n' $H | git mktree); \
         C=$(GIT_AUTHOR_NAME=n GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=n GIT_COMMITTER_EMAIL=a@b \
             git commit-tree -m feature $T); \
         git update-ref refs/heads/feature $C; ln -s .git/hooks lnk; \
         git config core.worktree ../lnk/..; echo planted",
        m = scene.mark.display()
    );
    let run = transactional_git_script(&scene, &script);
    assert!(run.stdout.contains("planted"), "{}{}", run.stdout, run.stderr);
    assert!(!read(&ws.join(".git/config")).contains("worktree"), "{}", run.stderr);
    let _ = git(ws, &["checkout", "-q", "feature"]);
    assert!(!ws.join(".git/hooks/post-checkout").exists(), "the checkout wrote a hook");
    assert!(!scene.mark.exists(), "planted code ran outside the sandbox");
}
