//! Secrets stay hidden whatever `shell_environment_policy` gives the command: hidden
//! paths and writable roots follow cordon's own HOME/TMPDIR/SSH_AUTH_SOCK, never the command's;
//! credential variables are dropped by name and by value on every entry point.

#[cfg(target_os = "linux")]
use std::io::ErrorKind;
use std::io::{BufRead, BufReader, Write};
#[cfg(target_os = "linux")]
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::util::*;

/// Hidden paths need the mount view on Linux; on macOS the Seatbelt profile denies them.
macro_rules! require_mount_view {
    () => {
        require_sandbox!(1);
        skip_unless!(features().path_rules(), "hiding paths needs the mount view");
    };
}

/// Environment policies that empty or rewrite the command's HOME, TMPDIR and the like: what
/// the helper hides and makes writable must not change with them.
const ENV_SETTINGS: &[&str] = &[
    "shell_environment_policy.inherit=none",
    "shell_environment_policy.inherit=core",
    r#"shell_environment_policy.include_only=["PATH"]"#,
    "shell_environment_policy.set.HOME=/nonexistent",
    "shell_environment_policy.inherit=all",
];

const GITHUB_TOKEN_VALUE: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

/// `cordon exec -a never -C work -c setting <flags> -- argv` as `user`.
fn exec_with(user: User, work: &Path, setting: &str, flags: &[&str], argv: &[&str]) -> Command {
    let mut args = vec!["exec", "-a", "never", "-C", work.to_str().unwrap(), "-c", setting];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(argv);
    cordon_command(user, &args)
}

#[test]
fn a_key_under_home_stays_hidden_whatever_the_command_environment_holds() {
    require_mount_view!();
    let (home, key) = fake_home();
    let work = scratch();
    let script = format!("cat {}; echo \"ran-$? home=${{HOME-unset}}\"", key.display());
    for user in USERS {
        for setting in ENV_SETTINGS {
            let out = exec_with(user, work.path(), setting, &[], &["/bin/sh", "-c", &script])
                .env("HOME", home.path())
                .output()
                .unwrap();
            let run = Run::from(out);
            assert!(
                run.stdout.contains("ran-1"),
                "{user:?} {setting}: {}{}",
                run.stdout,
                run.stderr
            );
            assert!(!run.stdout.contains(FAKE_KEY), "{user:?} {setting}: the key was read");
        }
    }
    // The key is readable outside the sandbox, so the runs above really were refused it.
    assert_eq!(std::fs::read_to_string(&key).unwrap(), FAKE_KEY);
}

/// Python that connects to the UNIX socket at `path` and prints `CONNECTED` or `refused ERRNO`.
#[cfg(target_os = "linux")]
fn agent_probe(path: &Path) -> String {
    format!(
        "import socket\ntry:\n    s = socket.socket(socket.AF_UNIX); s.connect({:?}); s.sendall(b'sign'); print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)",
        path.display().to_string()
    )
}

#[cfg(target_os = "linux")]
#[test]
fn the_ssh_agent_gets_no_connection_under_any_inherit_setting_with_the_network_on() {
    require_mount_view!();
    let (home, _) = fake_home();
    let agent_dir = scratch();
    let agent = agent_dir.path().join("agent.42");
    let listener = UnixListener::bind(&agent).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o777)).unwrap();
    let work = scratch();
    let code = agent_probe(&agent);
    let network = ["-c", "sandbox_workspace_write.network_access=true"];
    let run_probe = |user: User, setting: &str, extra: &[&str]| {
        let flags: Vec<&str> = network.iter().chain(extra).copied().collect();
        let out = exec_with(user, work.path(), setting, &flags, &[python(), "-c", &code])
            .env("HOME", home.path())
            .env("SSH_AUTH_SOCK", &agent)
            .output()
            .unwrap();
        Run::from(out)
    };
    for user in USERS {
        for setting in ENV_SETTINGS {
            let run = run_probe(user, setting, &[]);
            assert!(
                run.stdout.contains("refused"),
                "{user:?} {setting}: {}{}",
                run.stdout,
                run.stderr
            );
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                listener.accept().map(|_| ()).unwrap_err().kind(),
                ErrorKind::WouldBlock,
                "{user:?} {setting}: the agent was reached"
            );
        }
    }
    // The probe can reach the agent when it is deliberately unhidden: the refusals above are
    // the hiding, not a broken probe.
    let run = run_probe(User::Root, ENV_SETTINGS[0], &["--unhide", agent.to_str().unwrap()]);
    assert!(run.stdout.contains("CONNECTED"), "{}{}", run.stdout, run.stderr);
    assert!(listener.accept().is_ok());
}

#[test]
fn tmpdir_set_for_the_command_does_not_make_that_directory_writable() {
    require_sandbox!(1);
    let work = scratch();
    let outside = scratch();
    let cordon_home = scratch();
    for user in USERS {
        for target in [outside.path(), cordon_home.path()] {
            let setting = format!("shell_environment_policy.set.TMPDIR={}", target.display());
            let script = "echo \"tmpdir=$TMPDIR\"; echo allow > \"$TMPDIR/rules.toml\"; echo rc=$?";
            let out = exec_with(user, work.path(), &setting, &[], &["/bin/sh", "-c", script])
                .env("CORDON_HOME", cordon_home.path())
                .output()
                .unwrap();
            let run = Run::from(out);
            let seen = format!("tmpdir={}\n", target.display());
            assert!(run.stdout.contains(&seen), "{user:?}: {}{}", run.stdout, run.stderr);
            assert!(!run.stdout.contains("rc=0"), "{user:?}: {}", run.stdout);
            assert!(!target.join("rules.toml").exists(), "{user:?}: wrote {}", target.display());
        }
    }
}

#[test]
fn cordons_own_tmpdir_stays_writable_when_the_command_is_not_told_about_it() {
    require_sandbox!(1);
    let work = scratch();
    let tmpdir = scratch();
    let made = tmpdir.path().join("made");
    let script = format!(
        "echo \"tmpdir=${{TMPDIR-unset}}\"; echo x > {made} && cat {made}",
        made = made.display()
    );
    let setting = "shell_environment_policy.inherit=none";
    let out = exec_with(User::Root, work.path(), setting, &[], &["/bin/sh", "-c", &script])
        .env("TMPDIR", tmpdir.path())
        .output()
        .unwrap();
    let run = Run::from(out);
    run.assert_ok();
    // Written (where write layers are made, into the workspace's own $TMPDIR).
    assert_eq!(run.stdout, "tmpdir=unset\nx\n");
}

#[test]
fn cordon_sandbox_applies_the_environment_policy_unless_inherit_env_is_given() {
    require_sandbox!(1);
    let work = scratch();
    let cordon_home = scratch();
    std::fs::write(
        cordon_home.path().join("config.toml"),
        "[shell_environment_policy]\nexclude = [\"EDITOR\"]\n",
    )
    .unwrap();
    let env_of = |flags: &[&str]| {
        let out = sandbox_command(flags, work.path(), &["env"])
            .env("CORDON_HOME", cordon_home.path())
            .env("DEPLOY_TOKEN", "tok-value-123")
            .env("NOTES", GITHUB_TOKEN_VALUE)
            .env("DATABASE_URL", "postgres://app:pw-secret@db.internal/app")
            .env("EDITOR", "vi")
            .output()
            .unwrap();
        let run = Run::from(out);
        run.assert_ok();
        run.stdout
    };
    let filtered = env_of(&[]);
    for gone in ["DEPLOY_TOKEN=", "NOTES=", "EDITOR=", "pw-secret"] {
        assert!(!filtered.contains(gone), "{gone} reached the command:\n{filtered}");
    }
    assert!(filtered.contains("\nDATABASE_URL=postgres://db.internal/app\n"), "{filtered}");
    assert!(filtered.contains(&format!("CORDON_SANDBOX={SANDBOX}")), "{filtered}");
    let inherited = env_of(&["--inherit-env"]);
    assert!(inherited.contains("DEPLOY_TOKEN=tok-value-123"), "{inherited}");
    assert!(inherited.contains("EDITOR=vi"), "{inherited}");

    let help = cordon(&["sandbox", PLATFORM, "--help"]);
    assert!(help.stdout.contains("--inherit-env"), "{}", help.stdout);
}

#[test]
fn exec_json_lists_the_removed_names_and_never_their_values() {
    require_sandbox!(1);
    let work = scratch();
    let out = cordon_command(User::Root, &["exec", "--json", "-a", "never", "-C"])
        .arg(work.path())
        .args(["--", "true"])
        .env("DEPLOY_TOKEN", "tok-value-123")
        .env("NOTES", GITHUB_TOKEN_VALUE)
        .env("DATABASE_URL", "postgres://app:pw-secret@db.internal/app")
        .output()
        .unwrap();
    let run = Run::from(out);
    run.assert_ok();
    for value in ["tok-value-123", GITHUB_TOKEN_VALUE, "pw-secret"] {
        assert!(!run.stdout.contains(value), "a value leaked: {value}");
    }
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    let removed = document["env_removed"].as_array().unwrap();
    for expected in [
        json!({"name": "DATABASE_URL", "reason": "url_credentials"}),
        json!({"name": "DEPLOY_TOKEN", "reason": "secret_name"}),
        json!({"name": "NOTES", "reason": "secret_value"}),
    ] {
        assert!(removed.contains(&expected), "{expected} missing from {removed:?}");
    }
}

/// A workspace-write policy: `root` and `$TMPDIR` writable, not `/tmp`.
#[cfg(target_os = "linux")]
fn root_and_tmpdir_policy(root: &Path) -> String {
    json!({"type": "workspace-write", "writable_roots": [root], "exclude_slash_tmp": true})
        .to_string()
}

#[cfg(target_os = "linux")]
#[test]
fn the_helper_given_a_user_view_follows_it_and_not_its_own_environment() {
    require_mount_view!();
    let (home, key) = fake_home();
    let root = scratch();
    let outside = scratch();
    let planted = outside.path().join("planted");
    let view = json!({"home": home.path(), "uid": nix::unistd::getuid().as_raw()}).to_string();
    let script = format!("cat {}; echo x > {}; echo ran", key.display(), planted.display());
    let out = helper_cmd(
        &root_and_tmpdir_policy(root.path()),
        root.path(),
        &["--user-view", &view],
        &["/bin/sh", "-c", &script],
    )
    // What a filtered command environment looks like: no HOME, another TMPDIR.
    .env_clear()
    .env("PATH", "/usr/bin:/bin")
    .env("TMPDIR", outside.path())
    .output()
    .unwrap();
    let run = Run::from(out);
    assert!(run.stdout.contains("ran"), "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains(FAKE_KEY), "the key was read: {}", run.stdout);
    assert!(!planted.exists(), "the command's TMPDIR became writable");
}

#[cfg(target_os = "linux")]
#[test]
fn the_helper_called_directly_without_a_user_view_uses_its_own_environment() {
    require_mount_view!();
    let (home, key) = fake_home();
    let root = scratch();
    let tmpdir = scratch();
    let made = tmpdir.path().join("made");
    let script = format!("cat {}; echo x > {}; echo ran", key.display(), made.display());
    let out = helper_cmd(
        &root_and_tmpdir_policy(root.path()),
        root.path(),
        &[],
        &["/bin/sh", "-c", &script],
    )
    .env("HOME", home.path())
    .env("TMPDIR", tmpdir.path())
    .output()
    .unwrap();
    let run = Run::from(out);
    assert!(run.stdout.contains("ran"), "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains(FAKE_KEY), "the key was read: {}", run.stdout);
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "x\n");
}

/// Runs one `exec_command` through `cordon executor -C work <flags>` and returns its text.
fn executor_output(flags: &[&str], work: &Path, envs: &[(&str, &str)], cmd: &str) -> String {
    let mut child = Command::new(CORDON)
        .arg("executor")
        .arg("-C")
        .arg(work)
        .args(flags)
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = json!({"type": "call_tool", "requestId": "1", "toolName": "exec_command",
                      "arguments": {"cmd": cmd, "login": false}});
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    let mut text = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if message["type"] == "call_tool_response" {
            text = message["outcome"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
    text
}

#[test]
fn the_executor_hides_the_same_secrets_and_drops_the_same_variables() {
    require_mount_view!();
    let (home, key) = fake_home();
    let work = scratch();
    let home_str = home.path().to_str().unwrap();
    let script = format!("cat {}; echo \"ran-$?\"", key.display());
    let text = executor_output(
        &["-c", "shell_environment_policy.inherit=none"],
        work.path(),
        &[("HOME", home_str)],
        &script,
    );
    assert!(text.contains("ran-1"), "{text}");
    assert!(!text.contains(FAKE_KEY), "the key was read: {text}");

    let text = executor_output(
        &[],
        work.path(),
        &[("HOME", home_str), ("DEPLOY_TOKEN", "tok-value-123"), ("NOTES", GITHUB_TOKEN_VALUE)],
        "env",
    );
    assert!(text.contains("NO_COLOR=1"), "{text}");
    assert!(!text.contains("DEPLOY_TOKEN") && !text.contains("NOTES="), "{text}");
}

#[test]
fn doctor_shows_the_environment_patterns_in_force() {
    let cordon_home = scratch();
    let doctor = || {
        let out = cordon_command(User::Root, &["doctor", "--json"])
            .env("CORDON_HOME", cordon_home.path())
            .output()
            .unwrap();
        let run = Run::from(out);
        // 1: this kernel cannot enforce the default policy; the report is complete either way.
        assert!(matches!(run.code, Some(0 | 1)), "{}", run.stderr);
        serde_json::from_str::<Value>(&run.stdout).unwrap()["environment"].clone()
    };
    let env = doctor();
    for pattern in ["*KEY*", "*PASS*", "*PWD*", "*_PAT", "*AUTH*", "*SESSION*"] {
        assert!(env["default_excludes"].as_array().unwrap().contains(&json!(pattern)), "{env}");
    }
    assert!(env["kept_despite_default_excludes"].as_array().unwrap().contains(&json!("PWD")));
    assert!(env["value_rules"].to_string().contains("PEM private key"), "{env}");

    std::fs::write(
        cordon_home.path().join("config.toml"),
        "[shell_environment_policy]\nignore_default_excludes = true\nexclude = [\"AWS_*\"]\n",
    )
    .unwrap();
    let env = doctor();
    assert_eq!(env["default_excludes"], json!([]));
    assert_eq!(env["value_rules"], json!([]));
    assert_eq!(env["exclude"], json!(["AWS_*"]));
}

/// Searches every process the command can see — `/proc/PID/environ` and the readable memory
/// of `/proc/PID/mem` — for the string given reversed in argv[1] (reversed, so the argv of the
/// processes that pass it on does not match). Prints `CLEAN` or `FOUND` with where.
#[cfg(target_os = "linux")]
const PROCESS_SCAN: &str = r#"
import os, sys
secret = sys.argv[1][::-1].encode()
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    try:
        if secret in open(f"/proc/{pid}/environ", "rb").read():
            found.append(f"{pid} environ")
    except OSError:
        pass
    try:
        regions = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in regions:
                span, perms = line.split()[:2]
                if "r" not in perms:
                    continue
                low, high = (int(x, 16) for x in span.split("-"))
                try:
                    mem.seek(low)
                    if secret in mem.read(high - low):
                        found.append(f"{pid} memory")
                        break
                except (OSError, OverflowError, ValueError):
                    continue
    except OSError:
        pass
print("FOUND" if found else "CLEAN", found, "in", sys.argv[0])
"#;

#[cfg(target_os = "linux")]
#[test]
fn a_removed_secret_cannot_be_read_from_any_process_the_command_can_see() {
    require_sandbox!(1);
    let work = scratch();
    let secret = "cordon-probe-secret-5f3a9c";
    let reversed: String = secret.chars().rev().collect();
    // With the mount view the command sees its PID namespace (the supervisor is pid 1); without
    // it, the host's processes (the supervisor, the helper, cordon itself).
    let views: &[&[&str]] = &[&[], &["--no-mount-view", "--best-effort"]];
    for user in USERS {
        for view in views {
            // cordon's helper in its forked child (which holds cordon's whole environment in
            // memory), and the exec'd helper.
            for helper in [None, Some(cordon_for(user))] {
                let mut args = vec!["exec", "-a", "never", "-C", work.path().to_str().unwrap()];
                args.extend_from_slice(view);
                args.extend_from_slice(&["--", python(), "-c", PROCESS_SCAN, &reversed]);
                let mut command = cordon_command(user, &args);
                command.env("CORDON_PROBE_TOKEN", secret);
                if let Some(helper) = &helper {
                    command.env("CORDON_LINUX_SANDBOX_EXE", helper);
                }
                let out = Run::from(command.output().unwrap());
                assert!(
                    out.stdout.starts_with("CLEAN"),
                    "{user:?} {view:?} helper {helper:?}: {}\n{}",
                    out.stdout,
                    out.stderr
                );
            }
        }
    }
}

/// Connects to each socket path in argv and sends `hi`; prints `PATH connected` or `PATH refused`.
const SOCKET_PROBE: &str = r#"
import socket, sys
for path in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(b"hi")
        s.close()
        print(path, "connected")
    except OSError as error:
        print(path, "refused", error)
"#;

/// What a listener received, without waiting: one entry per accepted connection.
fn received(listener: &UnixListener) -> Vec<Vec<u8>> {
    use std::io::Read;
    let mut got = Vec::new();
    while let Ok((mut connection, _)) = listener.accept() {
        connection.set_nonblocking(false).unwrap();
        connection.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut bytes = Vec::new();
        let _ = connection.read_to_end(&mut bytes);
        got.push(bytes);
    }
    got
}

#[cfg(target_os = "linux")]
#[test]
fn an_allowed_socket_in_a_hidden_directory_is_reachable_and_nothing_else_there_is() {
    require_mount_view!();
    let work = scratch();
    // Stands for $XDG_RUNTIME_DIR, which is hidden by default.
    let runtime = scratch();
    let engine = runtime.path().join("engine");
    std::fs::create_dir(&engine).unwrap();
    std::fs::set_permissions(&engine, std::fs::Permissions::from_mode(0o777)).unwrap();
    let allowed_path = engine.join("engine.sock");
    let other_path = runtime.path().join("bus");
    let listen = |path: &Path| {
        let listener = UnixListener::bind(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
        listener.set_nonblocking(true).unwrap();
        listener
    };
    let (allowed, other) = (listen(&allowed_path), listen(&other_path));
    let (allowed_arg, other_arg) = (allowed_path.to_str().unwrap(), other_path.to_str().unwrap());
    // With a domain list, a named socket is reached alone only through Landlock ABI 9; below
    // it reaching one means reaching them all, which takes --best-effort (see below).
    let domain_list: &[&str] = if features().landlock_abi >= 9 {
        &["--allow-domain", "example.test"]
    } else {
        &["--allow-domain", "example.test", "--best-effort"]
    };
    for user in USERS {
        for network in [&["--network"][..], domain_list] {
            let mut args = vec!["exec", "-a", "never", "-C", work.path().to_str().unwrap()];
            args.extend_from_slice(network);
            args.extend_from_slice(&["--allow-unix-socket", allowed_arg, "--"]);
            args.extend_from_slice(&[python(), "-c", SOCKET_PROBE, allowed_arg, other_arg]);
            let out = Run::from(
                cordon_command(user, &args)
                    .env("XDG_RUNTIME_DIR", runtime.path())
                    .output()
                    .unwrap(),
            );
            assert!(
                out.stdout.contains(&format!("{allowed_arg} connected")),
                "{user:?} {network:?}: {}\n{}",
                out.stdout,
                out.stderr
            );
            assert!(out.stdout.contains(&format!("{other_arg} refused")), "{}", out.stdout);
            // Checked from outside: the allowed listener got the bytes, the other nothing.
            assert_eq!(received(&allowed), vec![b"hi".to_vec()], "{user:?} {network:?}");
            assert!(received(&other).is_empty(), "{user:?} {network:?}");
        }
        // Without it the socket stays hidden like the rest of the directory.
        let args = ["exec", "-a", "never", "--network", "-C", work.path().to_str().unwrap(), "--"];
        let mut args = args.to_vec();
        args.extend_from_slice(&[python(), "-c", SOCKET_PROBE, allowed_arg]);
        let out = Run::from(
            cordon_command(user, &args).env("XDG_RUNTIME_DIR", runtime.path()).output().unwrap(),
        );
        assert!(out.stdout.contains(&format!("{allowed_arg} refused")), "{}", out.stdout);
        assert!(received(&allowed).is_empty(), "{user:?}");
    }
    if features().landlock_abi < 9 {
        // Without --best-effort: refused before the command runs, saying why.
        let dir = work.path().to_str().unwrap();
        let args = ["exec", "-a", "never", "-C", dir, "--allow-domain", "example.test"];
        let mut args = args.to_vec();
        args.extend_from_slice(&["--allow-unix-socket", allowed_arg, "--"]);
        args.extend_from_slice(&[python(), "-c", SOCKET_PROBE, allowed_arg]);
        let out = Run::from(
            cordon_command(User::Root, &args)
                .env("XDG_RUNTIME_DIR", runtime.path())
                .output()
                .unwrap(),
        );
        assert_eq!(out.code, Some(125), "{}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("needs Landlock ABI 9"), "{}", out.stderr);
        assert!(!out.stdout.contains("connected"), "{}", out.stdout);
        assert!(received(&allowed).is_empty());
    }
    // With the network off no connect() passes seccomp: a usage error, before anything runs.
    let out = cordon(&["exec", "-a", "never", "--allow-unix-socket", allowed_arg, "--", "true"]);
    assert_eq!(out.code, Some(125), "{}", out.stderr);
    assert!(out.stderr.contains("needs the network on or a domain list"), "{}", out.stderr);
}

#[test]
fn per_user_container_engine_sockets_are_hidden_with_the_network_on() {
    require_mount_view!();
    let work = scratch();
    // Docker Desktop, Colima, Lima, OrbStack and a Podman machine keep a socket under HOME that
    // reaches a root container.
    let engines = [
        ".docker/run/docker.sock",
        ".colima/default/docker.sock",
        ".lima/default/sock/docker.sock",
        ".orbstack/run/docker.sock",
        ".local/share/containers/podman/machine/podman.sock",
    ];
    for user in USERS {
        let home = scratch();
        let mut listeners = Vec::new();
        for engine in engines {
            let path = home.path().join(engine);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let listener = UnixListener::bind(&path).unwrap();
            listener.set_nonblocking(true).unwrap();
            listeners.push((path, listener));
        }
        chown_nobody(home.path());
        let paths: Vec<&str> = listeners.iter().map(|(p, _)| p.to_str().unwrap()).collect();
        let mut args =
            vec!["exec", "-a", "never", "--network", "-C", work.path().to_str().unwrap()];
        args.extend_from_slice(&["--", python(), "-c", SOCKET_PROBE]);
        args.extend_from_slice(&paths);
        let out = Run::from(cordon_command(user, &args).env("HOME", home.path()).output().unwrap());
        for (path, listener) in &listeners {
            assert!(
                out.stdout.contains(&format!("{} refused", path.display())),
                "{user:?}: {}\n{}",
                out.stdout,
                out.stderr
            );
            assert!(received(listener).is_empty(), "{user:?}: {} was reached", path.display());
        }
        // Outside the sandbox the same probe reaches them: the refusals are the hiding.
        let outside = Run::from(
            Command::new(python()).arg("-c").arg(SOCKET_PROBE).args(&paths).output().unwrap(),
        );
        assert_eq!(
            outside.stdout.matches(" connected").count(),
            engines.len(),
            "{}",
            outside.stdout
        );
    }
}

/// Credentials in variables of any name — by shape, in a header, inside a connection string,
/// a webhook — never reach the command; everyday variables beside them do.
#[test]
fn credential_values_and_names_are_dropped_and_everyday_variables_pass() {
    require_sandbox!(1);
    let work = scratch();
    let secrets = [
        ("DB_PW", "hunter2x"),
        ("DB_CREDS", "admin:hunter2x"),
        ("STORAGE", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abcDEF123456=="),
        ("NOTIFY", "https://hooks.slack.com/services/T0000/B0000/abcdefghijklmnopqrstuvwx"),
        ("PROXY_HEADER", "Authorization: Basic dXNlcjpwYXNzd29yZA=="),
        ("AWS_LINE", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("MAILER", "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"),
        ("MAPS", "AIza0123456789abcdefghijABCDEFGHIJ01234"),
    ];
    let everyday = [
        ("PASSWORD_STORE_DIR", "/home/u/.password-store"),
        ("HISTCONTROL", "ignoreboth"),
        ("PROMPT_COMMAND", "history -a; echo basic setup done"),
        ("JAVA_TOOL_OPTIONS", "-Dfile.encoding=UTF-8"),
    ];
    let mut command =
        exec_with(User::Root, work.path(), "shell_environment_policy.inherit=all", &[], &["env"]);
    command.envs(secrets).envs(everyday);
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    for (name, value) in secrets {
        assert!(!run.stdout.contains(value), "{name} reached the command");
    }
    for (name, value) in everyday {
        assert!(run.stdout.contains(&format!("{name}={value}")), "{name} was dropped");
    }
}
