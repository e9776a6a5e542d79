//! The shortest way to a sandboxed command: a spawner that gives the command no
//! terminal — the executor's and the MCP server's pipe sessions, `cordon exec` without a
//! terminal on stdin — clones the supervisor straight into the command's PID + IPC namespaces
//! as their pid 1, with no helper process between them. Seen from outside, the spawner's child
//! is pid 1 of a namespace; what the helper did there, the supervisor does itself: signals
//! reach the command, its status is passed on exactly (a signal stays a signal), and nothing
//! outlives it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::containment::{leave_children_script, marker, survivors};
use super::executor::{Executor, session_id};
use super::util::{
    CORDON, features, processes_matching, require_sandbox, scaled, scratch, skip_unless,
};

/// The only child of `parent` (waiting up to 5 s for it), and its NSpid levels.
fn only_child(parent: u32) -> (i32, Vec<String>) {
    let deadline = Instant::now() + scaled(Duration::from_secs(5));
    loop {
        let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default();
        let children: Vec<i32> =
            children.split_whitespace().filter_map(|c| c.parse().ok()).collect();
        if children.len() == 1 {
            let status = std::fs::read_to_string(format!("/proc/{}/status", children[0])).unwrap();
            let nspid = status.lines().find_map(|l| l.strip_prefix("NSpid:")).unwrap_or_default();
            return (children[0], nspid.split_whitespace().map(str::to_owned).collect());
        }
        assert!(Instant::now() < deadline, "children of {parent}: {children:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether no process matches `pattern` within 5 s.
fn gone(pattern: &str) -> bool {
    let deadline = Instant::now() + scaled(Duration::from_secs(5));
    while processes_matching(pattern) > 0 {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A pipe session's supervisor is the executor's own child, cloned straight into the command's
/// PID namespace as its pid 1 (no helper process between them): seen from outside, its NSpid
/// has two levels, the last 1. What the helper did outside it does itself: a SIGTERM sent to it
/// from outside reaches the command (pid 1 gets only signals it has a handler for), the
/// command's exit code is the session's, and a SIGKILL of it ends every process of the
/// namespace.
#[test]
fn executor_pipe_sessions_clone_the_supervisor_as_pid_1_which_passes_signals_on() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view (PID namespace)");
    let mut executor = Executor::start(&[]);
    let executor_pid = executor.child.id();
    let work = executor.work.path().to_owned();
    let supervisor = |executor: &mut Executor, script: &str| {
        let text = executor.text(
            "exec_command",
            serde_json::json!({"cmd": script, "login": false, "yield_time_ms": 500}),
        );
        let id = session_id(&text).unwrap_or_else(|| panic!("{text}"));
        let children =
            std::fs::read_to_string(format!("/proc/{executor_pid}/task/{executor_pid}/children"))
                .unwrap();
        let children: Vec<&str> = children.split_whitespace().collect();
        assert_eq!(children.len(), 1, "the executor's children: {children:?}");
        let child: i32 = children[0].parse().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap();
        let nspid = status.lines().find_map(|l| l.strip_prefix("NSpid:")).unwrap_or_default();
        let levels: Vec<&str> = nspid.split_whitespace().collect();
        pretty_assertions::assert_eq!(levels, vec![children[0], "1"]);
        (id, child)
    };
    let gone = |pattern: &str| {
        let deadline = std::time::Instant::now() + scaled(Duration::from_secs(5));
        while processes_matching(pattern) > 0 {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    };

    // Pid 1 catches exactly the signals it passes on (HUP INT QUIT USR1 USR2 ALRM TERM CONT
    // WINCH): none of the executor's own handlers (tokio's SIGCHLD) survived into it.
    let text = executor.text(
        "exec_command",
        serde_json::json!({"cmd": "grep SigCgt /proc/1/status", "login": false}),
    );
    // glibc's own two (SIGCANCEL and SIGSETXID, 32 and 33: installed once a thread has run in
    // the executor, refused to `sigaction`, and deaf to any sender but the process itself)
    // are left out.
    let caught = text
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:\t"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(caught & !(0b11 << 31), 0x8026a07, "{text}");

    let got = work.join("got");
    let ready = work.join("ready");
    let script = format!(
        "trap 'echo term > {}; exit 3' TERM; touch {}; sleep 3131 & sleep 3132 & wait",
        got.display(),
        ready.display()
    );
    let (id, pid1) = supervisor(&mut executor, &script);
    // Sent once the trap is set (an emulated kernel takes longer than the call's yield).
    let deadline = std::time::Instant::now() + scaled(Duration::from_secs(30));
    while !ready.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(pid1), Signal::SIGTERM).unwrap();
    let text =
        executor.text("write_stdin", serde_json::json!({"session_id": id, "yield_time_ms": 5000}));
    assert!(text.contains("Process exited with code 3"), "{text}");
    assert_eq!(std::fs::read_to_string(&got).unwrap(), "term\n");
    assert!(gone("sleep 313[12]"), "the command's background processes outlived it");

    let (id, pid1) = supervisor(&mut executor, "sleep 3133 & sleep 3134");
    kill(Pid::from_raw(pid1), Signal::SIGKILL).unwrap();
    let text =
        executor.text("write_stdin", serde_json::json!({"session_id": id, "yield_time_ms": 5000}));
    assert!(text.contains("Process exited with code 137"), "{text}");
    assert!(gone("sleep 313[34]"), "processes outlived their namespace's pid 1");
}

/// `cordon exec` with stdin from a pipe or a file (no terminal to hand over) takes the same way:
/// its child is pid 1 of the command's namespace. A command that dies of a signal is reported as
/// a signal (the supervisor reports the raw status; its own exit code could not tell `kill -SEGV`
/// from `exit 139`), and SIGINT to cordon reaches the command.
#[test]
fn cordon_exec_without_a_terminal_clones_the_supervisor_and_passes_status_and_signals_on() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view (PID namespace)");
    let work = scratch();
    let got = work.path().join("got");
    let ready = work.path().join("ready");
    let script = format!(
        "trap 'echo int > {}; exit 5' INT; touch {}; sleep 3135 & wait",
        got.display(),
        ready.display()
    );
    // `env --default-signal=INT`: started in the background (`cargo test &`, `nohup`), the
    // suite inherited SIGINT ignored, which cordon passes on to the command as an exec'd helper
    // would, and bash cannot trap a signal ignored on entry.
    let mut exec = Command::new("env")
        .arg("--default-signal=INT")
        .arg(CORDON)
        .args(["exec", "-a", "never", "-s", "workspace-write", "-C"])
        .arg(work.path())
        .args(["--", "bash", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (child, levels) = only_child(exec.id());
    pretty_assertions::assert_eq!(levels, vec![child.to_string(), "1".to_owned()]);
    // Until bash has set its trap (a signal before then ends the start, not the command).
    let deadline = Instant::now() + scaled(Duration::from_secs(5));
    while !ready.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    kill(Pid::from_raw(i32::try_from(exec.id()).unwrap()), Signal::SIGINT).unwrap();
    // A deadline, not a wait that may never end: a signal lost on the way leaves the command
    // sleeping for an hour.
    let deadline = Instant::now() + scaled(Duration::from_secs(20));
    let status = loop {
        if let Some(status) = exec.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = exec.kill();
            let _ = exec.wait();
            panic!("cordon exec did not end within its deadline after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(5));
    assert_eq!(std::fs::read_to_string(&got).unwrap(), "int\n");
    assert!(gone("sleep 3135"), "the command's background process outlived it");

    let exit_of = |script: &str| {
        let out = Command::new(CORDON)
            .args(["exec", "--json", "-a", "never", "-s", "workspace-write", "-C"])
            .arg(work.path())
            .args(["--", "bash", "-c", script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        report["attempts"][0]["exit"].clone()
    };
    let signal = serde_json::json!({"kind": "signal", "value": 11});
    pretty_assertions::assert_eq!(exit_of("kill -SEGV $$"), signal);
    let code = serde_json::json!({"kind": "code", "value": 139});
    pretty_assertions::assert_eq!(exit_of("exit 139"), code);
}

/// When `cordon exec`'s child is pid 1 of the command's namespace, every process the command
/// started is gone by the time cordon exits — at once, not within a grace period: the kernel
/// ends every process of a PID namespace before its pid 1's exit completes, which is why
/// cordon looks for no orphans of its own after such a child (`spawn.rs`). A background, a
/// double-forked, a `setsid` and a `nohup` child alike.
#[test]
fn cordon_exec_returns_only_once_every_process_of_the_namespace_is_gone() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view (PID namespace)");
    let dir = scratch();
    let marker = marker();
    // Prints `started` once all four run, then how many of them it sees inside.
    let script = leave_children_script(&marker, "pgrep -c -f \"^sleep $M\\.\"");
    let out = Command::new(CORDON)
        .args(["exec", "-a", "never", "-s", "workspace-write", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Not vacuous: all four ran inside.
    assert_eq!(stdout.trim(), "started\n4", "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
    let left = survivors(&marker);
    if left > 0 {
        let _ = Command::new("pkill").args(["-9", "-f", &format!("^sleep {marker}\\.")]).status();
    }
    assert_eq!(left, 0, "processes of the namespace outlived cordon exec");
}
