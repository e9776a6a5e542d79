//! Running commands on another machine: a real `sshd` on a loopback port with a
//! throwaway host key and an authorized key in a temporary directory; the "remote" cordon is
//! this build, reached with `ssh … cordon executor --serve-remote`. Remote logins as root and
//! as an unprivileged user (`cordon-e2e`, created when absent). Effects are checked on the
//! file system the remote command used (the same machine) and in `/proc`.

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::executor::{Executor, output, session_id};
use super::util::*;

const SSHD: &str = "/usr/sbin/sshd";
/// The unprivileged account remote logins use (created by the suite when absent).
const REMOTE_USER: &str = "cordon-e2e";

/// Who logs in on the remote side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Login {
    Root,
    Unprivileged,
}

/// A throwaway sshd on 127.0.0.1, killed on drop.
struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    login: Login,
}

impl Sshd {
    fn start(login: Login) -> Sshd {
        let dir = tempfile::Builder::new().prefix("cordon-e2e-sshd-").tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        for name in ["host_key", "client_key"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(name))
                .status()
                .unwrap();
            assert!(status.success());
        }
        // The same key for a client running as uid 65534 (ssh wants its key owned by the user).
        let nobody_key = dir.path().join("client_key.nobody");
        std::fs::copy(dir.path().join("client_key"), &nobody_key).unwrap();
        chown_nobody(&nobody_key);
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(dir.path().join("client_key.pub"), &authorized).unwrap();
        std::fs::set_permissions(&authorized, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        // A port another test's sshd took between `free_port` and the bind makes this sshd
        // exit: then try another.
        let Some((child, port)) = (0..5).find_map(|_| Sshd::listen(dir.path(), &authorized)) else {
            panic!("sshd did not start on any of 5 free ports (see its sshd.log)");
        };
        if login == Login::Unprivileged {
            ensure_remote_user();
        }
        Sshd { child, port, dir, login }
    }

    /// Starts sshd on a free port; `None` when it exited (the port was taken meanwhile).
    fn listen(dir: &Path, authorized: &Path) -> Option<(Child, u16)> {
        let port = free_port();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 StrictModes no\nPermitRootLogin prohibit-password\nPidFile none\n\
                 LogLevel ERROR\n",
                dir.join("host_key").display(),
                authorized.display()
            ),
        )
        .unwrap();
        // Its log (each readiness probe below is a "connection closed" line) stays in the
        // directory, out of the test output.
        let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + scaled(Duration::from_secs(10));
        loop {
            if child.try_wait().unwrap().is_some() {
                return None;
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                // Something listens; it is this sshd only if this sshd is still running.
                std::thread::sleep(Duration::from_millis(20));
                return match child.try_wait().unwrap() {
                    None => Some((child, port)),
                    Some(_) => None,
                };
            }
            assert!(Instant::now() < deadline, "sshd did not listen on port {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `user@127.0.0.1:PORT`.
    fn host(&self) -> String {
        let user = match self.login {
            Login::Root => "root",
            Login::Unprivileged => REMOTE_USER,
        };
        format!("{user}@127.0.0.1:{}", self.port)
    }

    /// The cordon the remote login runs (a copy any user can execute for the unprivileged one).
    fn cordon(&self) -> PathBuf {
        match self.login {
            Login::Root => PathBuf::from(CORDON),
            Login::Unprivileged => nobody_binary(),
        }
    }

    /// `--ssh-option …` for a throwaway key and host key, and `--remote-cordon PATH`.
    fn flags(&self, remote_cordon: &Path) -> Vec<String> {
        self.flags_for(User::Root, remote_cordon)
    }

    /// [`Sshd::flags`] for a client running as `local`.
    fn flags_for(&self, local: User, remote_cordon: &Path) -> Vec<String> {
        let key = match local {
            User::Root => self.dir.path().join("client_key"),
            User::Nobody => self.dir.path().join("client_key.nobody"),
        };
        let mut flags = Vec::new();
        for option in [
            "StrictHostKeyChecking=no".to_owned(),
            "UserKnownHostsFile=/dev/null".to_owned(),
            format!("IdentityFile={}", key.display()),
            "IdentitiesOnly=yes".to_owned(),
            "BatchMode=yes".to_owned(),
            "LogLevel=ERROR".to_owned(),
        ] {
            flags.extend(["--ssh-option".to_owned(), option]);
        }
        flags.extend(["--remote-cordon".to_owned(), remote_cordon.display().to_string()]);
        // The login runs the user's shell start-up files (root's runs `pyenv rehash` here,
        // which waits on a lock while other logins hold it): far longer than the default.
        let connect = scaled(Duration::from_secs(120)).as_secs();
        flags.extend(["--connect-timeout".to_owned(), format!("{connect}s")]);
        flags
    }

    /// `cordon exec --host … <args>` (stdin /dev/null).
    fn exec(&self, remote_cordon: &Path, args: &[&str]) -> Run {
        self.exec_as(User::Root, remote_cordon, args)
    }

    /// [`Sshd::exec`] with the local cordon (and so ssh) running as `local`.
    fn exec_as(&self, local: User, remote_cordon: &Path, args: &[&str]) -> Run {
        let host = self.host();
        let flags = self.flags_for(local, remote_cordon);
        let mut all = vec!["exec", "--host", &host];
        all.extend(flags.iter().map(String::as_str));
        all.extend_from_slice(args);
        cordon_command(local, &all).output().unwrap().into()
    }

    /// `cordon executor --connect … <extra>` as a protocol client.
    fn executor(&self, extra: &[&str]) -> Executor {
        let mut args = vec!["--connect".to_owned(), self.host()];
        args.extend(self.flags(&self.cordon()));
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        Executor::start(&refs)
    }

    /// A script in the sshd directory (any user may run it).
    fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Creates the unprivileged login account when absent: a shell, a home, and a password field
/// of `*` (no password, but not locked: sshd refuses locked accounts without PAM).
fn ensure_remote_user() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let exists = Command::new("id").arg(REMOTE_USER).output().unwrap().status.success();
        if !exists {
            let status = Command::new("useradd")
                .args(["--create-home", "--shell", "/bin/bash", "--password", "*", REMOTE_USER])
                .status()
                .unwrap();
            assert!(status.success(), "useradd {REMOTE_USER} failed");
        }
    });
}

/// Skips unless the test can start sshd: it needs root and Debian's openssh-server.
macro_rules! require_sshd {
    () => {
        skip_unless!(is_root(), "starting sshd needs root");
        skip_unless!(
            Path::new(SSHD).exists(),
            "needs {SSHD} (apt-get install openssh-server; .ci/run installs it)"
        );
    };
}

/// Processes whose command line contains `needle`, read from `/proc`.
fn proc_count(needle: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| {
            let text = String::from_utf8_lossy(cmdline).replace('\0', " ");
            text.trim_end() == needle
        })
        .count()
}

/// The pids of `parent`'s children named `comm`, from `/proc`.
fn children_named(parent: u32, comm: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((name, rest)) = stat.split_once(") ") else { return false };
            let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
            name.ends_with(&format!("({comm}")) && ppid == Some(parent)
        })
        .collect()
}

#[test]
fn a_remote_command_writes_inside_its_workspace_and_is_denied_outside() {
    require_sshd!();
    require_sandbox!(1);
    // Who runs cordon here (and so ssh), and who logs in there.
    for (local, login) in [
        (User::Root, Login::Root),
        (User::Root, Login::Unprivileged),
        (User::Nobody, Login::Unprivileged),
    ] {
        let sshd = Sshd::start(login);
        let work = scratch();
        let outside = scratch();
        let (inside, escaped) = (work.path().join("inside"), outside.path().join("escaped"));
        let script = format!(
            "echo in > {} && echo wrote-inside; echo out > {}",
            inside.display(),
            escaped.display()
        );
        let run = sshd.exec(
            &sshd.cordon(),
            &[
                "-s",
                "workspace-write",
                "-C",
                work.path().to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &script,
            ],
        );
        assert_ne!(run.code, Some(0), "{local:?}->{login:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stdout.contains("wrote-inside"),
            "{local:?}->{login:?}: {}{}",
            run.stdout,
            run.stderr
        );
        assert_eq!(std::fs::read_to_string(&inside).unwrap(), "in\n", "{local:?}->{login:?}");
        assert!(
            !escaped.exists(),
            "{local:?}->{login:?}: the remote command wrote outside its workspace"
        );
        // The remote user owns what it wrote: the command ran as that login, over there.
        let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&inside).unwrap());
        assert_eq!(
            owner == 0,
            login == Login::Root,
            "{local:?}->{login:?}: file owned by uid {owner}"
        );

        // The retry decision is taken here: with -a on-failure the denial is judged locally and
        // the retry question asked locally (no terminal here: no), so nothing runs unsandboxed.
        let run = sshd.exec(
            &sshd.cordon(),
            &[
                "--json",
                "-a",
                "on-failure",
                "-C",
                work.path().to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &script,
            ],
        );
        let document: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
            panic!("{local:?}->{login:?}: not JSON ({e}): {}{}", run.stdout, run.stderr)
        });
        assert_eq!(document["attempts"].as_array().unwrap().len(), 1, "{document}");
        assert_eq!(document["attempts"][0]["verdict"], "likely_sandbox_denied", "{document}");
        assert_eq!(document["approvals"][0]["stage"], "retry_without_sandbox", "{document}");
        assert_eq!(document["approvals"][0]["answer"], "denied", "{document}");
        assert!(!escaped.exists(), "{local:?}->{login:?}: an unapproved retry ran");
    }
}

#[test]
fn an_interactive_pty_session_works_over_the_link() {
    require_sshd!();
    require_sandbox!(1);
    for login in [Login::Root, Login::Unprivileged] {
        let sshd = Sshd::start(login);
        let mut ex = sshd.executor(&[]);
        let first = ex.text(
            "exec_command",
            json!({"cmd": "bash --norc -i", "tty": true, "yield_time_ms": 3000}),
        );
        let id = session_id(&first).unwrap_or_else(|| panic!("{login:?}: {first}"));
        ex.text(
            "write_stdin",
            json!({"session_id": id, "chars": "export V=remote\n", "yield_time_ms": 2000}),
        );
        let seen = ex.text(
            "write_stdin",
            json!({"session_id": id, "chars": "echo V=$V. tty=$(tty | cut -c1-8) uid=$(id -u)\n", "yield_time_ms": 3000}),
        );
        let uid = if login == Login::Root { "uid=0" } else { "uid=" };
        assert!(output(&seen).contains("V=remote. tty=/dev/pts"), "{login:?}: {seen}");
        assert!(output(&seen).contains(uid), "{login:?}: {seen}");
        let bye = ex.text(
            "write_stdin",
            json!({"session_id": id, "chars": "exit 7\n", "yield_time_ms": 3000}),
        );
        assert!(bye.contains("Process exited with code 7"), "{login:?}: {bye}");
    }
}

#[test]
fn an_approval_for_a_remote_command_is_answered_locally() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Root);
    let mut ex = sshd.executor(&["-a", "untrusted"]);
    let work = ex.work.path().to_path_buf();
    for (name, decision) in [("approved-file", "approved"), ("denied-file", "denied")] {
        ex.next_id += 1;
        let id = format!("r{}", ex.next_id);
        ex.send(&json!({"type": "call_tool", "requestId": id, "toolName": "exec_command",
            "arguments": {"cmd": format!("touch {name}")}}));
        let request =
            ex.wait_for(scaled(Duration::from_secs(20)), |v| v["type"] == "approval_request");
        assert_eq!(request["callRequestId"], id.as_str());
        assert_eq!(request["command"], json!(["/bin/bash", "-lc", format!("touch {name}")]));
        assert_eq!(request["cwd"], work.to_str().unwrap());
        assert_eq!(request["sandboxMode"], "workspace-write");
        ex.send(&json!({"type": "approval_response", "requestId": request["requestId"], "decision": decision}));
        let response =
            ex.wait_for(scaled(Duration::from_secs(20)), |v| v["requestId"] == id.as_str());
        let ran = response["outcome"]["status"] == "success";
        assert_eq!(ran, decision == "approved", "{response}");
        assert_eq!(work.join(name).exists(), decision == "approved", "{name}: {response}");
    }
}

#[test]
fn killing_the_ssh_connection_leaves_no_process_on_the_remote_host() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Unprivileged);
    let mut ex = sshd.executor(&[]);
    let marker = format!("{}", 60_000 + std::process::id() % 10_000);
    let piped = ex.text(
        "exec_command",
        json!({"cmd": format!("exec sleep {marker}.1"), "yield_time_ms": 250}),
    );
    let tty = ex.text("exec_command", json!({"cmd": format!("trap '' HUP; exec sleep {marker}.2"), "tty": true, "yield_time_ms": 250}));
    let ids = [session_id(&piped).expect(&piped), session_id(&tty).expect(&tty)];
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while proc_count(&format!("sleep {marker}.1")) + proc_count(&format!("sleep {marker}.2")) < 2 {
        assert!(Instant::now() < deadline, "the remote sessions did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ssh = children_named(ex.child.id(), "ssh");
    assert_eq!(ssh.len(), 1, "expected one ssh child of the executor: {ssh:?}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(ssh[0]), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    loop {
        let left = proc_count(&format!("sleep {marker}.1"))
            + proc_count(&format!("sleep {marker}.2"))
            + proc_count(&format!("{} executor --serve-remote", nobody_binary().display()));
        if left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{left} remote processes outlived the connection");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The local side says which sessions were lost, and keeps answering.
    let response = ex.call("write_stdin", json!({"session_id": ids[0]}));
    let message = response["outcome"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("connection to") && message.contains("lost"), "{response}");
    for id in ids {
        assert!(message.contains(&format!("{id} (")), "session {id} not named: {message}");
    }
}

#[test]
fn a_remote_that_cannot_enforce_the_policy_is_refused_with_125() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Root);
    // The documented test switch: the remote cordon runs under a seccomp filter that makes
    // landlock_create_ruleset fail with ENOSYS (tests/helpers/under_filter.py), as on a kernel
    // without Landlock. Its `doctor` then reports it, and this side refuses before running.
    let masked = sshd.script(
        "cordon-without-landlock",
        &format!(
            "#!/bin/sh\nexec {} {} 1 {} {} {CORDON} cordon \"$@\"\n",
            python(),
            helper_program("under_filter.py").display(),
            libc::SYS_landlock_create_ruleset,
            libc::ENOSYS
        ),
    );
    let work = scratch();
    let marker = work.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let cd = work.path().to_str().unwrap();
    let run = sshd.exec(&masked, &["-C", cd, "--", "sh", "-c", &touch]);
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("cannot enforce workspace-write"), "{}", run.stderr);
    assert!(run.stderr.contains("Landlock"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(!marker.exists(), "the command ran on a remote that cannot enforce the policy");

    let run = sshd.exec(&masked, &["--best-effort", "-C", cd, "--", "sh", "-c", &touch]);
    run.assert_ok();
    assert!(run.stderr.contains("not enforced on"), "{}", run.stderr);
    assert!(marker.exists(), "--best-effort did not run the command");
}

#[test]
fn a_version_mismatch_is_one_error_naming_both_versions() {
    require_sshd!();
    let sshd = Sshd::start(Login::Root);
    // A newer cordon that no longer speaks protocol 5 answers hello with its versions.
    let newer = sshd.script(
        "cordon-newer",
        &format!(
            "#!{}\nimport json, sys\nhello = json.loads(sys.stdin.readline())\n\
             print(json.dumps({{'type': 'error', 'requestId': hello['requestId'], 'message': \
             'version mismatch: the peer (protocol 5) and this executor (cordon 9.0.0, \
             protocol 6..=6) share no protocol version'}}), flush=True)\n",
            python()
        ),
    );
    let run = sshd.exec(&newer, &["-C", "/", "--", "true"]);
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let ours = env!("CARGO_PKG_VERSION");
    assert!(
        run.stderr.contains(&format!("this cordon is {ours} (executor protocol 5)")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("is 9.0.0 (protocol 6..=6)"), "{}", run.stderr);
}

#[test]
fn the_far_end_refuses_the_high_level_form_and_a_local_executor_refuses_the_resolved_one() {
    // The resolved form carries "approval granted": only --serve-remote, whose peer is the
    // orchestrator, may accept it; a harness-facing executor must not.
    let mut ex = Executor::start(&[]);
    ex.send(&json!({"type": "hello", "requestId": "h", "protocolVersion": 2}));
    let hello = ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "h");
    assert_eq!(hello["type"], "hello_response", "{hello}");
    assert_eq!(hello["forms"], json!(["exec_command"]));
    ex.send(&json!({"type": "exec_resolved", "requestId": "x", "exec": {
        "argv": ["touch", "resolved"], "cwd": ex.work.path(), "env": [],
        "sandbox": {"kind": "none"}, "approval": "granted"}}));
    let refused = ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "x");
    assert_eq!(refused["outcome"]["status"], "error", "{refused}");
    assert!(!ex.work.path().join("resolved").exists());

    let lines = far_end(&[
        json!({"type": "call_tool", "requestId": "1", "toolName": "exec_command", "arguments": {"cmd": "true"}}),
        json!({"type": "hello", "requestId": "2", "protocolVersion": 1}),
    ]);
    let by_id = |id: &str| lines.iter().find(|v| v["requestId"] == id).cloned().unwrap();
    // Refused before any hello, and would be after one (the high-level form).
    assert_eq!(by_id("1")["type"], "error", "{lines:?}");
    let mismatch = by_id("2");
    assert_eq!(mismatch["type"], "error", "{mismatch}");
    assert!(mismatch["message"].as_str().unwrap().contains("protocol 5..=5"), "{mismatch}");
}

/// `cordon executor --serve-remote` fed `messages`, one per line, then EOF: every line it
/// answered (it must exit 0).
fn far_end(messages: &[Value]) -> Vec<Value> {
    use std::io::{BufRead, Write};
    let mut far = Command::new(CORDON)
        .args(["executor", "--serve-remote"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = far.stdin.take().unwrap();
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    // End of input shuts the far end down, ending what still runs: it stays open until every
    // message has its answer (a slow machine takes a while to run a sandboxed command).
    let mut waiting: Vec<Value> = messages.iter().map(|m| m["requestId"].clone()).collect();
    let mut stdin = Some(stdin);
    let mut lines: Vec<Value> = Vec::new();
    for line in std::io::BufReader::new(far.stdout.take().unwrap()).lines() {
        let value: Value = serde_json::from_str(&line.unwrap()).unwrap();
        waiting.retain(|id| *id != value["requestId"]);
        lines.push(value);
        if waiting.is_empty() {
            drop(stdin.take());
        }
    }
    drop(stdin);
    assert_eq!(far.wait().unwrap().code(), Some(0));
    lines
}

#[test]
fn the_far_end_refuses_a_sandbox_setting_it_does_not_know_and_runs_nothing() {
    // The known request must run sandboxed for the refusal to mean something.
    require_sandbox!(1);
    // An orchestrator newer than this executor sends a sandbox setting the far end cannot
    // apply: the call is an error, the command never runs (with or without the sandbox).
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let marker = work.path().join("ran");
    let exec = |request: Value| {
        json!({"type": "exec_resolved", "requestId": "x", "exec": {
            "argv": ["touch", marker], "cwd": work.path(), "env": [],
            "sandbox": {"kind": "platform", "request": request}, "approval": "not_needed"}})
    };
    let known = json!({"policy": {"type": "workspace-write"}, "policy_cwd": work.path()});
    let mut unknown = known.clone();
    unknown["memory_limit"] = "1G".into();
    let hello = json!({"type": "hello", "requestId": "h", "protocolVersion": 5});
    let lines = far_end(&[hello.clone(), exec(unknown)]);
    let refused = lines.iter().find(|v| v["requestId"] == "x").cloned().unwrap();
    assert_ne!(refused["outcome"]["status"], "success", "{lines:?}");
    assert!(refused.to_string().contains("memory_limit"), "{refused}");
    assert!(!marker.exists(), "the command ran without a setting it was sent");
    // Nor before a hello, nor with a field beside `exec`, nor with a request beside a `none`
    // sandbox (which would run without the sandbox the request names).
    let mut extra = exec(known.clone());
    extra["priority"] = "high".into();
    let mut mixed = exec(known.clone());
    mixed["exec"]["sandbox"] = json!({"kind": "none", "request": known});
    let unannounced = vec![exec(known.clone())];
    for messages in [unannounced, vec![hello.clone(), extra], vec![hello.clone(), mixed]] {
        let message = messages.last().cloned().unwrap();
        let lines = far_end(&messages);
        let answer = lines.iter().find(|v| v["requestId"] == "x").cloned().unwrap();
        assert_ne!(answer["outcome"]["status"], "success", "{message}: {lines:?}");
        assert!(!marker.exists(), "{message} ran");
    }
    // The same request without the unknown field runs: the refusal was about the field.
    let lines = far_end(&[hello, exec(known)]);
    assert!(marker.exists(), "the known request did not run: {lines:?}");
}

/// The far end's home directory as a writable root is refused here, as this machine's would be,
/// before anything runs there; `--allow-home-root` is named.
#[test]
fn the_far_ends_home_as_a_writable_root_is_refused_unless_allowed() {
    require_sshd!();
    let sshd = Sshd::start(Login::Root);
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(0)).unwrap().unwrap().dir;
    let outside = scratch();
    let marker = outside.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let dotted = format!("{}/no-such-dir/..", home.display());
    let slashed = format!("{}//./", home.display());
    for workspace in [home.to_str().unwrap(), "/", &dotted, &slashed] {
        let run = sshd.exec(&sshd.cordon(), &["-C", workspace, "--", "sh", "-c", &touch]);
        assert_eq!(run.code, Some(125), "{workspace}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("--allow-home-root"), "{}", run.stderr);
        assert!(!marker.exists(), "{workspace}: the command ran");
    }
}

/// What a far end says reaches this terminal as text: a version string full of escape
/// sequences and a newline is shown escaped, on one line.
#[test]
fn a_far_ends_words_reach_the_terminal_escaped() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let ssh = dir.path().join("ssh");
    std::fs::write(
        &ssh,
        "#!/bin/sh\nread l\nprintf '%s\\n' '{\"type\":\"hello_response\",\"requestId\":\"c1\",\
         \"protocolVersion\":2,\"cordonVersion\":\"9\\u001b]0;PWNED\\u0007\\u001b[2J\\u009b31m\\nFORGED: \
         cordon: approved\",\"forms\":[\"exec_resolved\"]}'\nsleep 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run: Run = Command::new(CORDON)
        .args(["exec", "--host", "127.0.0.1", "--ssh-program", ssh.to_str().unwrap()])
        .args(["-C", "/tmp", "--", "true"])
        .env("CORDON_HOME", dir.path().join("cordon-home"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("PWNED"), "{}", run.stderr);
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{:?}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{:?}", run.stderr);
}

#[test]
fn a_remote_timeout_exits_124_and_ends_the_command_there() {
    require_sshd!();
    require_sandbox!(1);
    // The run's timeout bounds ssh's login too: the unprivileged login's start-up files are
    // quick (root's run `pyenv rehash` here).
    let sshd = Sshd::start(Login::Unprivileged);
    let marker = format!("{}", 50_000 + std::process::id() % 10_000);
    let started = Instant::now();
    let timeout = format!("{}s", scaled(Duration::from_secs(5)).as_secs());
    let run = sshd.exec(
        &sshd.cordon(),
        &["--timeout", &timeout, "-C", "/tmp", "--", "sleep", &format!("{marker}.3")],
    );
    assert_eq!(run.code, Some(124), "{}{}", run.stdout, run.stderr);
    assert!(started.elapsed() < scaled(Duration::from_secs(25)), "{:?}", started.elapsed());
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while proc_count(&format!("sleep {marker}.3")) > 0 {
        assert!(Instant::now() < deadline, "the remote command outlived the timeout");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mcp-server --connect` arguments for `sshd`, the workspace `work` and `extra`.
fn mcp_remote_args(sshd: &Sshd, work: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--connect".to_owned(), sshd.host()];
    args.extend(sshd.flags(&sshd.cordon()));
    args.extend(["-C".to_owned(), work.display().to_string()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

#[test]
fn an_mcp_escalation_over_ssh_is_elicited_here_and_runs_there_only_when_accepted() {
    require_sshd!();
    super::mcp::require_mcp_client!();
    let sshd = Sshd::start(Login::Root);
    for answer in ["accept", "decline"] {
        let dirs = super::mcp::Dirs::new();
        let target = dirs.outside.path().join(format!("escalated-{answer}"));
        let cmd = format!("touch {}", target.display());
        let args = mcp_remote_args(&sshd, dirs.work.path(), &["-a", "on-request"]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let report =
            super::mcp::client("escalate", &dirs, &["--cmd", &cmd, "--answer", answer], &refs);
        let asked = report["elicitations"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{report}");
        let message = asked[0]["message"].as_str().unwrap();
        assert!(message.contains("UNSANDBOXED"), "{message}");
        assert!(message.contains(dirs.work.path().to_str().unwrap()), "{message}");
        let host = format!("Host: {} (the command runs there)", sshd.host());
        assert!(message.contains(&host), "{message}");
        assert_eq!(report["result"]["is_error"], answer != "accept", "{report}");
        assert_eq!(target.exists(), answer == "accept", "{answer}: {report}");
    }
}

#[test]
fn mcp_cancellation_and_close_session_over_ssh_kill_the_remote_command() {
    require_sshd!();
    super::mcp::require_mcp_client!();
    let sshd = Sshd::start(Login::Unprivileged);
    let dirs = super::mcp::Dirs::new();
    let args = mcp_remote_args(&sshd, dirs.work.path(), &[]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();

    let marker = format!("37{}.1", std::process::id());
    let report = super::mcp::client("cancel", &dirs, &["--marker", &marker], &refs);
    assert_eq!(report["seen"], true, "the remote command never started: {report}");
    assert_eq!(report["cancelled"], true, "{report}");
    assert_eq!(report["gone"], true, "the remote command outlived the cancellation: {report}");
    assert_eq!(report["sessions"]["text"], "[]", "{report}");

    let marker = format!("37{}.2", std::process::id());
    let report = super::mcp::client("close", &dirs, &["--marker", &marker], &refs);
    assert_eq!(report["seen"], true, "{report}");
    let listed = report["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{report}");
    assert_eq!(report["closed"]["is_error"], false, "{report}");
    assert_eq!(report["gone"], true, "close_session left the remote command running: {report}");
    assert_eq!(report["again"]["is_error"], true, "{report}");
    assert_eq!(proc_count(&format!("sleep {marker}")), 0);
}

#[test]
fn a_denial_over_ssh_is_retried_unsandboxed_only_after_a_yes_on_this_terminal() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Root);
    let home = scratch();
    let work = scratch();
    let outside = scratch();
    for answer in ["n", "y"] {
        let escaped = outside.path().join(format!("escaped-{answer}"));
        let script = format!("echo out > {}", escaped.display());
        let host = sshd.host();
        let mut args = vec!["--host".to_owned(), host];
        args.extend(sshd.flags(&sshd.cordon()));
        args.extend(
            ["-a", "on-failure", "-C", work.path().to_str().unwrap(), "--", "sh", "-c", &script]
                .map(str::to_owned),
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (transcript, code) =
            super::exec::exec_on_terminal(home.path(), work.path(), &refs, &[answer]);
        // The question is asked here, after the remote's sandboxed attempt was judged here.
        assert!(transcript.contains("WITHOUT"), "{answer}: {transcript}");
        match answer {
            "y" => {
                assert_eq!(code, 0, "{transcript}");
                assert!(escaped.exists(), "the approved retry did not run there: {transcript}");
            }
            _ => {
                assert_ne!(code, 0, "{transcript}");
                assert!(!escaped.exists(), "the declined retry ran: {transcript}");
            }
        }
    }
}

#[test]
fn an_unreachable_host_or_a_missing_remote_cordon_is_an_error_saying_so() {
    require_sshd!();
    let sshd = Sshd::start(Login::Root);
    let run = sshd.exec(Path::new("/nonexistent/cordon"), &["--", "true"]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("no executor answered over ssh"), "{}", run.stderr);
    assert!(run.stderr.contains("--remote-cordon"), "{}", run.stderr);

    let closed = free_port();
    let run = cordon(&["exec", "--host", &format!("root@127.0.0.1:{closed}"), "--", "true"]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("no executor answered over ssh"), "{}", run.stderr);
}

/// What a remote command prints reaches this terminal through the same escape filter as a
/// local command's: colours stay, a window title and a report request do not.
#[test]
fn remote_output_on_this_terminal_loses_sequences_that_act_beyond_the_screen() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Root);
    let (home, work) = (scratch(), scratch());
    let printf = r"printf 'A\033]0;TITLE-SET\007B\033[6nC\033[31mRED\033[0m\n'";
    let mut args = vec!["--host".to_owned(), sshd.host()];
    args.extend(sshd.flags(&sshd.cordon()));
    args.extend(
        ["-a", "never", "-C", work.path().to_str().unwrap(), "--", "sh", "-c", printf]
            .map(str::to_owned),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (transcript, code) = super::exec::exec_on_terminal(home.path(), work.path(), &refs, &[]);
    assert_eq!(code, 0, "{transcript}");
    assert!(transcript.contains("ABC\u{1b}[31mRED\u{1b}[0m"), "{transcript:?}");
    assert!(!transcript.contains("TITLE-SET"), "{transcript:?}");
    assert!(!transcript.contains("\u{1b}[6n"), "{transcript:?}");
}

/// A workdir that leads elsewhere on the far end through a symbolic link (planted there by an
/// earlier command) is refused, naming where it leads: the question here showed the path as
/// given, and the command runs there or nowhere.
#[test]
fn a_remote_workdir_that_leads_elsewhere_through_a_link_is_refused() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Root);
    let mut ex = sshd.executor(&[]);
    let elsewhere = scratch();
    std::os::unix::fs::symlink(elsewhere.path(), ex.work.path().join("link")).unwrap();
    let response = ex.call("exec_command", json!({"cmd": "touch ran-here", "workdir": "link"}));
    assert_eq!(response["outcome"]["status"], "error", "{response}");
    let message = response["outcome"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&*elsewhere.path().to_string_lossy()), "{response}");
    assert!(!elsewhere.path().join("ran-here").exists());
    // The path itself works.
    std::fs::create_dir(ex.work.path().join("real")).unwrap();
    let text = ex.text("exec_command", json!({"cmd": "touch ran-here", "workdir": "real"}));
    assert!(text.contains("Process exited with code 0"), "{text}");
    assert!(ex.work.path().join("real/ran-here").exists());
}

/// A command killed by a signal over there is a signal here, over a real ssh connection too:
/// never a denial, never retried without the sandbox.
#[test]
fn a_signal_over_ssh_stays_a_signal_and_is_not_retried() {
    require_sshd!();
    require_sandbox!(1);
    let sshd = Sshd::start(Login::Root);
    let work = scratch();
    let script = "echo cannot create /etc/x: Permission denied; kill -TERM $$";
    let cd = work.path().to_str().unwrap();
    let run = sshd
        .exec(&sshd.cordon(), &["--json", "-a", "on-failure", "-C", cd, "--", "sh", "-c", script]);
    assert_eq!(run.code, Some(143), "{}{}", run.stdout, run.stderr);
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["attempts"].as_array().unwrap().len(), 1, "{document}");
    assert_eq!(document["attempts"][0]["verdict"], "signal", "{document}");
    assert_eq!(document["attempts"][0]["exit"], json!({"kind": "signal", "value": 15}));
    assert_eq!(document["approvals"], json!([]), "{document}");
}

/// A command the far end stopped at a resource limit is named here as a local one is: `cordon
/// exec --host` exits 122 with the line and `--json` names the key; the executor with
/// `--connect` shows the `Limit:` line. The same command under a generous limit succeeds.
#[test]
fn a_remote_command_stopped_at_a_limit_is_named_here() {
    require_sshd!();
    require_sandbox!(1);
    for login in [Login::Root, Login::Unprivileged] {
        let sshd = Sshd::start(login);
        let work = scratch();
        let big = work.path().join("big");
        let write = format!("head -c 5M /dev/zero > {}", big.display());
        let w = work.path().to_str().unwrap();
        let args = |limit: &'static str, json: bool| {
            let mut args = vec!["--limit", limit, "-s", "workspace-write", "-C", w];
            if json {
                args.push("--json");
            }
            args.extend(["--", "sh", "-c", write.as_str()]);
            args
        };
        let run = sshd.exec(&sshd.cordon(), &args("file-size=1M", false));
        assert_eq!(run.code, Some(122), "{login:?}: {}{}", run.stdout, run.stderr);
        let line = "cordon: the command exceeded its file-size limit (1 MiB)";
        assert!(run.stderr.contains(line), "{login:?}: {}", run.stderr);
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 1 << 20, "{login:?}");
        let run = sshd.exec(&sshd.cordon(), &args("file-size=1M", true));
        let document: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{login:?}: not JSON ({e}): {}{}", run.stdout, run.stderr));
        assert_eq!(document["result"]["exit"]["kind"], "limit_exceeded", "{login:?}: {document}");
        assert_eq!(document["result"]["exit"]["value"], "file-size", "{login:?}: {document}");
        let run = sshd.exec(&sshd.cordon(), &args("file-size=10M", false));
        assert_eq!(run.code, Some(0), "{login:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 5 << 20, "{login:?}");

        let mut ex = sshd.executor(&["--limit", "file-size=1M", "-s", "workspace-write"]);
        // In the executor's own workspace (its writable root).
        let write = format!("head -c 5M /dev/zero > {}", ex.work.path().join("big").display());
        let text =
            ex.text_until_exited(json!({"cmd": write, "login": false, "yield_time_ms": 10000}));
        assert!(
            text.contains("Limit: the command exceeded its file-size limit (1 MiB)"),
            "{login:?}: {text}"
        );
    }
}

/// `--writes transaction` on another machine: the helper there makes the transaction of its
/// own, the command's changes arrive there when it is over, and what it planted for git is
/// held there and named here. A terminal session cannot ask for one.
#[test]
fn a_remote_command_can_run_as_a_transaction() {
    require_sshd!();
    require_write_layer!();
    let sshd = Sshd::start(Login::Root);
    let work = scratch();
    super::code_runs_later::repository(work.path());
    let outside = scratch();
    let mark = outside.path().join("ran");
    let script = format!(
        "echo applied > made && printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit && \
         chmod +x .git/hooks/pre-commit && git config core.fsmonitor 'touch {m}' && echo planted",
        m = mark.display()
    );
    let ws = work.path().to_str().unwrap();
    let args = ["-s", "workspace-write", "--writes", "transaction", "-C", ws, "--", "sh", "-c"];
    let mut all: Vec<&str> = args.to_vec();
    all.push(&script);
    // The far end's state where a layer can be kept: the login's home may be a tmpfs that
    // cannot hold one (as on the 6.1 kernel of the matrix).
    let far_state = scratch();
    let far_cordon = sshd.script(
        "cordon-with-state",
        &format!(
            "#!/bin/sh\nCORDON_HOME={}/home exec {} \"$@\"\n",
            far_state.path().display(),
            sshd.cordon().display()
        ),
    );
    let run = sshd.exec(&far_cordon, &all);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("planted"), "{}{}", run.stdout, run.stderr);
    // The far end's output, its applier's words included, arrives merged on stdout.
    assert!(run.stdout.contains("held back"), "{}{}", run.stdout, run.stderr);
    assert_eq!(std::fs::read_to_string(work.path().join("made")).unwrap(), "applied\n");
    assert!(!work.path().join(".git/hooks/pre-commit").exists(), "the hook arrived");
    let config = std::fs::read_to_string(work.path().join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    super::code_runs_later::git(work.path(), &["status"]).assert_ok();
    assert!(!mark.exists(), "planted code ran outside the sandbox");
}
