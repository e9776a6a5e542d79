//! Bad input never takes down a server, nothing is lost silently: executor input
//! as bytes, lifecycle on EOF and signals, the session cap, and closed output pipes.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::executor::{Executor, session_id};
use super::util::*;

#[test]
fn non_utf8_and_invalid_json_lines_are_answered_while_a_session_keeps_working() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let first = ex
        .text("exec_command", json!({"cmd": "bash --norc -i", "tty": true, "yield_time_ms": 1000}));
    let id = session_id(&first).expect(&first);
    // Raw bytes: invalid UTF-8 (with a readable id), invalid JSON, a truncated request, a
    // `chars` string with a lone surrogate escape, an unknown tool.
    let stdin = ex_stdin(&mut ex);
    stdin
        .write_all(b"{\"type\":\"list_tools\",\"requestId\":\"bad1\",\"x\":\"\xff\xfe\"}\n")
        .unwrap();
    stdin.write_all(b"\xc3\x28 not json at all\n").unwrap();
    stdin.write_all(b"{\"type\":\"call_tool\",\"requestId\":\"bad3\"\n").unwrap();
    stdin.flush().unwrap();
    let error =
        ex.wait_for(Duration::from_secs(5), |v| v["type"] == "error" && v["requestId"] == "bad1");
    assert!(error["message"].as_str().unwrap().contains("UTF-8"), "{error}");
    ex.wait_for(Duration::from_secs(5), |v| v["type"] == "error" && v["requestId"].is_null());
    ex.wait_for(Duration::from_secs(5), |v| v["type"] == "error" && v["requestId"] == "bad3");
    let unknown = ex.call("no_such_tool", json!({}));
    assert_eq!(unknown["outcome"]["status"], "error");
    let seen = ex.text(
        "write_stdin",
        json!({"session_id": id, "chars": "echo still-$((40+2))\n", "yield_time_ms": 2000}),
    );
    assert!(seen.contains("still-42"), "{seen}");
    assert!(ex.child.try_wait().unwrap().is_none(), "the executor died");
}

fn ex_stdin(ex: &mut Executor) -> &mut std::process::ChildStdin {
    ex.stdin_mut()
}

#[test]
fn eof_during_a_pending_approval_exits_promptly() {
    require_sandbox!(1);
    let mut ex = Executor::start(&["-a", "untrusted"]);
    ex.send(&json!({"type": "call_tool", "requestId": "p1", "toolName": "exec_command",
        "arguments": {"cmd": "touch approved-by-nobody", "login": false}}));
    ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    ex.close_stdin();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = ex.child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(2), "no exit within 2 s");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    assert!(!ex.work.path().join("approved-by-nobody").exists());
}

#[test]
fn sigterm_leaves_no_process_and_no_temporary_directory() {
    require_sandbox!(1);
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130), (libc::SIGHUP, 129)] {
        let tmp = scratch();
        let work = scratch();
        let home = scratch();
        let marker = format!("{}.{signal}", 60_000 + std::process::id() % 10_000);
        // With SIGHUP and SIGINT as the executor's own defaults even when the suite runs under
        // `nohup` or in the background (an ignored signal stays ignored across exec).
        let mut child = Command::new("env")
            .args([
                "--default-signal=HUP,INT,QUIT",
                CORDON,
                "executor",
                "-C",
                work.path().to_str().unwrap(),
            ])
            .env("CORDON_HOME", home.path())
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for (i, tty) in [false, true].iter().enumerate() {
            let call = json!({"type": "call_tool", "requestId": i, "toolName": "exec_command",
                "arguments": {"cmd": format!("{SETSID} sleep {marker}1 & exec sleep {marker}{i}"), "tty": tty, "yield_time_ms": 250}});
            writeln!(stdin, "{call}").unwrap();
        }
        stdin.flush().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        for _ in 0..2 {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        }
        assert!(eventually_matching(&format!("^sleep {marker}"), 2) >= 2);
        // The executor makes nothing under $TMPDIR (the helper is started through a
        // descriptor), so nothing there can be left behind either.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "files in $TMPDIR");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::try_from(signal).unwrap(),
        )
        .unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(2), "no exit within 2 s");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(code), "signal {signal}");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(processes_matching(&format!("^sleep {marker}0$")), 0, "signal {signal}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "temporary files left");
        // A `setsid` daemon escapes a process-group kill; the containment issue covers it.
        let _ = Command::new("pkill").args(["-f", &format!("^sleep {marker}")]).status();
    }
}

#[test]
fn a_hundred_concurrent_calls_are_never_silently_killed() {
    require_sandbox!(1);
    let mut ex = Executor::start(&["-a", "never"]);
    for i in 0..100 {
        ex.send(
            &json!({"type": "call_tool", "requestId": format!("c{i}"), "toolName": "exec_command",
            "arguments": {"cmd": "sleep 2; echo done", "login": false, "yield_time_ms": 10000}}),
        );
    }
    let (mut done, mut refused) = (0, 0);
    for _ in 0..100 {
        let response = ex.wait_for(Duration::from_secs(30), |v| v["type"] == "call_tool_response");
        match response["outcome"]["status"].as_str() {
            Some("success") => {
                let text = response["outcome"]["content"][0]["text"].as_str().unwrap();
                assert!(
                    text.contains("Process exited with code 0") && text.contains("done"),
                    "{text}"
                );
                done += 1;
            }
            _ => {
                let message = response["outcome"]["message"].as_str().unwrap();
                assert!(message.contains("at most 64 sessions"), "{message}");
                refused += 1;
            }
        }
    }
    assert_eq!(done + refused, 100);
    assert!(done >= 64, "{done} finished, {refused} refused");
}

#[test]
fn a_closed_output_pipe_ends_the_command_like_a_shell_pipeline() {
    require_sandbox!(1);
    let dir = scratch();
    let started = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{CORDON} exec -a never -- yes | head -c1; echo \" status=${{?}}\""))
        .current_dir(dir.path())
        .env("CORDON_HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "y status=0\n");
    // cordon's own status, as a shell pipeline reports it with pipefail.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; {CORDON} exec -a never -- yes | head -c1 >/dev/null; echo $?"
        ))
        .current_dir(dir.path())
        .env("CORDON_HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "141");
}

/// Linux: cordon is the child subreaper of its command. macOS has no subreaper, so a daemon an
/// unsandboxed command starts with `setsid` outlives it there (docs/trust-boundary.md).
#[cfg(target_os = "linux")]
#[test]
fn an_unsandboxed_command_leaves_no_process_behind_either() {
    let dir = scratch();
    let marker = format!("{}", 50_000 + std::process::id() % 10_000);
    // danger-full-access: no helper, no PID namespace; cordon is the subreaper.
    let script = format!(
        "setsid sleep {marker}.1 & nohup sleep {marker}.2 >/dev/null 2>&1 & (sleep {marker}.3 &) ; echo started"
    );
    let started = Instant::now();
    let out = Command::new(CORDON)
        .args(["exec", "-a", "never", "-s", "danger-full-access", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .env("CORDON_HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        processes_matching(&format!("^sleep {marker}")),
        0,
        "a process outlived its command"
    );
}

/// A script whose shape makes tree-sitter's error recovery quadratic (`${` fifty thousand
/// times: over a minute on main) is given up within seconds and read as unreadable, so a
/// forbidding rule still refuses it.
#[test]
fn a_script_the_parser_cannot_read_quickly_is_unreadable_within_seconds() {
    let home = scratch();
    let work = scratch();
    std::fs::write(
        home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n",
    )
    .unwrap();
    let script = format!("echo {}", "${".repeat(50_000));
    let child = Command::new(CORDON)
        .args(["policy", "check", "-a", "on-request", "--", "bash", "-c", &script])
        .current_dir(work.path())
        .env("CORDON_HOME", home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The answer quotes the script (over 64 KiB): it is read while cordon writes it.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    let limit = Duration::from_secs(20 * u64::from(time_scale()));
    let Ok(out) = receiver.recv_timeout(limit) else {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        panic!("cordon policy check still reading the script after {limit:?}");
    };
    let out = out.unwrap();
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(decision["decision"]["kind"], "ask", "{decision}");
    assert!(decision["unreadable"].as_str().is_some_and(|u| u.contains("parse")), "{decision}");
}
