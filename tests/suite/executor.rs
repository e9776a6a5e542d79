//! `cordon executor`: the JSON-lines protocol and interactive sessions, driven
//! as a child process over pipes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::util::*;

pub(super) struct Executor {
    pub(super) child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Messages read while waiting for another one.
    backlog: Vec<Value>,
    pub(super) next_id: u64,
    pub(super) home: tempfile::TempDir,
    pub(super) work: tempfile::TempDir,
}

impl Executor {
    pub(super) fn start(extra: &[&str]) -> Executor {
        Executor::start_with_env(extra, &[])
    }

    /// [`Executor::start`] with extra environment variables for the executor.
    pub(super) fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Executor {
        let home = scratch();
        let work = scratch();
        // The keyboard's and the terminal's signals at their defaults, as a harness in the
        // foreground has them: started in the background or under `nohup`, the suite inherited
        // them ignored, and an ignored signal stays ignored for every command.
        // And with the soft limit of open files most machines give a program (systemd's 1024),
        // whatever the machine running the suite gives it.
        let mut child = Command::new("sh")
            .args(["-c", "ulimit -Sn 1024 2>/dev/null; exec \"$@\"", "sh", "env"])
            .args(["--default-signal=HUP,INT,QUIT", CORDON])
            .arg("executor")
            .args(["-C", work.path().to_str().unwrap()])
            .args(extra)
            .envs(env.iter().copied())
            .env("CORDON_HOME", home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Executor { child, stdin, lines, backlog: Vec::new(), next_id: 0, home, work }
    }

    pub(super) fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    pub(super) fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message matching `pred`, within `limit`.
    pub(super) fn wait_for(&mut self, limit: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.backlog.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no matching message within {limit:?}; got {:?}", self.backlog)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the executor closed stdout; got {:?}", self.backlog)
                }
            }
        }
    }

    pub(super) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        self.send(&json!({"type": "call_tool", "requestId": id, "toolName": tool, "arguments": arguments}));
        self.wait_for(Duration::from_secs(60), |v| {
            v["requestId"] == id && v["type"] == "call_tool_response"
        })
    }

    /// A successful call's result text.
    pub(super) fn text(&mut self, tool: &str, arguments: Value) -> String {
        let response = self.call(tool, arguments);
        assert_eq!(response["outcome"]["status"], "success", "{response}");
        response["outcome"]["content"][0]["text"].as_str().unwrap().to_owned()
    }

    /// `exec_command` with `arguments`, then, while the command runs on past its yield (a
    /// loaded machine), the texts of empty `write_stdin` polls until it has exited: every text,
    /// joined. Two minutes (scaled) at most.
    pub(super) fn text_until_exited(&mut self, arguments: Value) -> String {
        let mut text = self.text("exec_command", arguments);
        let deadline = std::time::Instant::now() + scaled(Duration::from_secs(120));
        while let Some(id) = session_id(&text) {
            assert!(std::time::Instant::now() < deadline, "still running: {text}");
            let more = self
                .text("write_stdin", json!({"session_id": id, "chars": "", "yield_time_ms": 5000}));
            text = format!("{text}\n{more}");
            if session_id(&more).is_none() {
                break;
            }
        }
        text
    }

    pub(super) fn stdin_mut(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().unwrap()
    }

    pub(super) fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn session_id(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Process running with session ID "))
        .map(|id| id.trim().parse().unwrap())
}

pub(super) fn output(text: &str) -> &str {
    text.split_once("Output:\n").map_or("", |(_, o)| o)
}

#[test]
fn an_interactive_shell_keeps_state_and_sessions_are_separate() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let first = ex
        .text("exec_command", json!({"cmd": "bash --norc -i", "tty": true, "yield_time_ms": 2000}));
    let a = session_id(&first).expect(&first);
    let second = ex
        .text("exec_command", json!({"cmd": "bash --norc -i", "tty": true, "yield_time_ms": 2000}));
    let b = session_id(&second).expect(&second);
    assert_ne!(a, b);
    ex.text(
        "write_stdin",
        json!({"session_id": a, "chars": "export V=cordon\n", "yield_time_ms": 2000}),
    );
    let seen = ex.text(
        "write_stdin",
        json!({"session_id": a, "chars": "echo V=$V.\n", "yield_time_ms": 2000}),
    );
    assert!(output(&seen).contains("V=cordon."), "{seen}");
    let other = ex.text(
        "write_stdin",
        json!({"session_id": b, "chars": "echo V=$V.\n", "yield_time_ms": 2000}),
    );
    assert!(output(&other).contains("V=."), "{other}");
}

#[test]
fn a_long_command_yields_and_a_later_poll_collects_the_rest() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let started = Instant::now();
    let text = ex.text("exec_command", json!({"cmd": "sleep 2 && echo done", "yield_time_ms": 10}));
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert!(!output(&text).contains("done"), "{text}");
    let id = session_id(&text).expect(&text);
    std::thread::sleep(Duration::from_millis(2200));
    let text = ex.text("write_stdin", json!({"session_id": id, "yield_time_ms": 2000}));
    assert!(output(&text).contains("done"), "{text}");
    assert!(text.contains("Process exited with code 0"), "{text}");
}

#[test]
fn a_finished_command_keeps_no_session_and_unknown_ids_are_errors_naming_them() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let text = ex.text("exec_command", json!({"cmd": "echo hi; exit 3"}));
    assert!(text.contains("Process exited with code 3"), "{text}");
    assert!(session_id(&text).is_none());
    assert!(output(&text).ends_with("hi\n"), "{text}");
    for id in [1, 4242] {
        let response = ex.call("write_stdin", json!({"session_id": id, "chars": "x"}));
        assert_eq!(response["outcome"]["status"], "error", "{response}");
        assert!(
            response["outcome"]["message"].as_str().unwrap().contains(&id.to_string()),
            "{response}"
        );
    }
}

#[test]
fn output_is_cut_in_the_middle_with_the_original_token_count() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let cmd = format!(
        "{} -c \"import sys; sys.stdout.write('BEGIN' + 'x' * 1000000 + 'END')\"",
        python()
    );
    let text =
        ex.text("exec_command", json!({"cmd": cmd, "login": false, "max_output_tokens": 100}));
    let out = output(&text);
    assert!(out.starts_with("BEGIN") && out.ends_with("END"), "{out}");
    let marker_start = out.find('…').unwrap();
    let marker_end = out.rfind('…').unwrap() + '…'.len_utf8();
    assert!(out[marker_start..marker_end].contains("tokens truncated"));
    assert!(out.len() - (marker_end - marker_start) <= 400, "{} bytes of output", out.len());
    assert!(
        text.contains("Warning: truncated output (original token count: 250002, 1000008 bytes)"),
        "{}",
        &text[..200]
    );
}

#[test]
fn sessions_are_sandboxed_and_escalation_asks_the_harness() {
    require_sandbox!(1);
    let mut ex = Executor::start(&["-a", "on-request"]);
    let outside = scratch();
    let target = outside.path().join("escaped");
    let text = ex.text("exec_command", json!({"cmd": format!("echo x > {}", target.display())}));
    assert!(!text.contains("exited with code 0"), "{text}");
    assert!(!target.exists());

    ex.next_id += 1;
    let id = format!("r{}", ex.next_id);
    ex.send(
        &json!({"type": "call_tool", "requestId": id, "toolName": "exec_command", "arguments": {
        "cmd": format!("echo x > {}", target.display()),
        "sandbox_permissions": "require_escalated", "justification": "write outside"}}),
    );
    let request = ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    assert_eq!(request["callRequestId"], id.as_str());
    assert_eq!(request["command"][0], "/bin/bash");
    ex.send(&json!({"type": "approval_response", "requestId": request["requestId"], "decision": "denied"}));
    let response = ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == id.as_str());
    assert_eq!(response["outcome"]["status"], "error", "{response}");
    assert!(!target.exists());
}

#[test]
fn the_65th_session_prunes_the_least_recently_used_one() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let marker = format!("{}", 70_000 + std::process::id() % 10_000);
    let mut ids = Vec::new();
    for i in 0..65 {
        let text = ex.text(
            "exec_command",
            json!({"cmd": format!("exec sleep {marker}.{i}"), "yield_time_ms": 250}),
        );
        ids.push(session_id(&text).expect(&text));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_matching(&format!("^sleep {marker}.0$")),
        0,
        "the pruned session's process is still alive"
    );
    assert_eq!(processes_matching(&format!("^sleep {marker}.1$")), 1);
    let response = ex.call("write_stdin", json!({"session_id": ids[0]}));
    assert_eq!(response["outcome"]["status"], "error", "{response}");
    let response = ex.call("write_stdin", json!({"session_id": ids[64]}));
    assert_eq!(response["outcome"]["status"], "success", "{response}");
}

#[test]
fn eof_terminates_every_session_and_exits_zero_promptly() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let marker = format!("{}", 80_000 + std::process::id() % 10_000);
    ex.text("exec_command", json!({"cmd": format!("exec sleep {marker}.5"), "yield_time_ms": 250}));
    ex.text("exec_command", json!({"cmd": format!("sleep {marker}.6 & exec sleep {marker}.7"), "tty": true, "yield_time_ms": 250}));
    // A loaded machine may start the background sleep after the call returned.
    assert_eq!(eventually_matching(&format!("^sleep {marker}"), 3), 3);
    ex.close_stdin();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = ex.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the executor did not exit within a second"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        processes_matching(&format!("^sleep {marker}")),
        0,
        "a session process outlived the executor"
    );
}

#[test]
fn bad_lines_get_errors_and_the_executor_keeps_serving() {
    let mut ex = Executor::start(&[]);
    ex.send_raw("this is not json");
    let e = ex.wait_for(Duration::from_secs(5), |v| v["type"] == "error");
    assert!(e.get("requestId").is_none());
    ex.send(&json!({"type": "teleport", "requestId": "t1"}));
    let e = ex.wait_for(Duration::from_secs(5), |v| v["type"] == "error");
    assert_eq!(e["requestId"], "t1");
    ex.send(&json!({"type": "call_tool", "requestId": "t2"}));
    let e = ex.wait_for(Duration::from_secs(5), |v| v["requestId"] == "t2");
    assert_eq!(e["type"], "error");
    let unknown = ex.call("launch_missiles", json!({}));
    assert_eq!(unknown["outcome"]["status"], "error");
    let missing = ex.call("exec_command", json!({"tty": true}));
    assert_eq!(missing["outcome"]["status"], "error");
    assert!(missing["outcome"]["message"].as_str().unwrap().contains("cmd"));
    ex.send(&json!({"type": "list_tools", "requestId": "l"}));
    let tools = ex.wait_for(Duration::from_secs(5), |v| v["requestId"] == "l");
    let names: Vec<&str> =
        tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["exec_command", "write_stdin"]);
    assert_eq!(tools["tools"][0]["inputSchema"]["required"][0], "cmd");
    ex.send(&json!({"type": "shutdown", "requestId": "s"}));
    ex.wait_for(Duration::from_secs(5), |v| v["type"] == "shutdown_response");
    assert_eq!(ex.child.wait().unwrap().code(), Some(0));
}

/// Linux: `PR_SET_PDEATHSIG`; macOS has no parent-death signal (docs/trust-boundary.md).
#[cfg(target_os = "linux")]
#[test]
fn killing_the_executor_kills_its_terminal_sessions_too() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let marker = format!("{}", 90_000 + std::process::id() % 10_000);
    // `nohup`-style: the command ignores the hangup a closing terminal sends.
    ex.text("exec_command", json!({"cmd": format!("trap '' HUP; exec sleep {marker}.1"), "tty": true, "yield_time_ms": 250}));
    ex.text("exec_command", json!({"cmd": format!("exec sleep {marker}.2"), "yield_time_ms": 250}));
    assert_eq!(eventually_matching(&format!("^sleep {marker}"), 2), 2);
    ex.child.kill().unwrap();
    ex.child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_matching(&format!("^sleep {marker}")),
        0,
        "a session outlived a killed executor"
    );
}

#[test]
fn an_approval_request_carries_the_raw_argv_and_its_escaped_display() {
    let mut ex = Executor::start(&["-a", "untrusted"]);
    let script = "touch PWNED\r\x1b[2Kecho harmless";
    ex.send(&json!({"type": "call_tool", "requestId": "r1", "toolName": "exec_command",
        "arguments": {"cmd": script}}));
    let request = ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    let fields =
        ["callRequestId", "command", "display", "hiddenCharacters", "stage", "sandboxMode"];
    let shown: serde_json::Map<String, Value> =
        fields.iter().map(|f| ((*f).to_owned(), request[*f].clone())).collect();
    pretty_assertions::assert_eq!(
        Value::Object(shown),
        json!({
            "callRequestId": "r1",
            "command": ["/bin/bash", "-lc", script],
            "display": r"/bin/bash -lc $'touch PWNED\r\x1b[2Kecho harmless'",
            "hiddenCharacters": true,
            "stage": "before_run",
            "sandboxMode": "workspace-write",
        })
    );
    assert_eq!(request["evidence"], json!([]));
    ex.send(&json!({"type": "approval_response", "requestId": request["requestId"], "decision": "denied"}));
    let response = ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "r1");
    assert_eq!(response["outcome"]["status"], "error", "{response}");
}

/// The idle-prompt check does not end a wait while typed input is still unread: a program
/// blocked in `read(0)` that has not taken the input yet is not at its prompt. Here it is
/// stopped, which keeps it in `read(0)` with the input queued for as long as the test needs;
/// under load the same happens for a few milliseconds to a shell the scheduler has not run yet
/// (the flake this fixes: a `write_stdin` answered with only the echo of its own line).
#[test]
fn typed_input_the_program_has_not_read_yet_keeps_the_wait_going() {
    // Unsandboxed, so the program's pid is one the test can signal.
    let mut ex = Executor::start(&["-s", "danger-full-access"]);
    let code = "import os; print(os.getpid(), flush=True); os.read(0, 100); print('got it')";
    // Python's start-up takes seconds on an emulated machine: a yield long enough for its first
    // line there.
    let start_up = scaled(Duration::from_secs(5)).min(Duration::from_secs(30)).as_millis();
    let first = ex.text(
        "exec_command",
        json!({"cmd": format!("python3 -c \"{code}\""), "tty": true, "login": false,
               "yield_time_ms": start_up}),
    );
    let id = session_id(&first).expect(&first);
    // The call may end before the first line (a quiet start): poll until the pid has come.
    let mut printed = output(&first).to_owned();
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while printed.trim().is_empty() && Instant::now() < deadline {
        let more = ex.text("write_stdin", json!({"session_id": id, "yield_time_ms": 500}));
        printed.push_str(output(&more));
    }
    let pid: i32 = printed.trim().parse().expect(&first);
    let pid = nix::unistd::Pid::from_raw(pid);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let stopped = || {
        let state = Command::new("ps").args(["-o", "stat=", "-p", &pid.to_string()]).output();
        String::from_utf8_lossy(&state.unwrap().stdout).trim_start().starts_with('T')
    };
    while !stopped() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    let text =
        ex.text("write_stdin", json!({"session_id": id, "chars": "x\n", "yield_time_ms": 1500}));
    let waited = started.elapsed();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert!(waited >= Duration::from_millis(1400), "answered after {waited:?}: {text}");
    let rest = ex.text("write_stdin", json!({"session_id": id, "yield_time_ms": 5000}));
    assert!(rest.contains("got it"), "{rest}");
}

/// An unsandboxed session's command that double-forks out of its process group (`setsid`,
/// a background subshell) leaves nothing once the executor shuts down on EOF.
#[cfg(target_os = "linux")]
#[test]
fn what_an_unsandboxed_session_leaves_behind_ends_with_the_executor() {
    let tag = 40_000 + std::process::id() % 10_000;
    let mut ex = Executor::start(&["-a", "never", "-s", "danger-full-access"]);
    let cmd = format!("setsid sh -c '(sleep {tag}.1 &); sleep {tag}.2' & sleep {tag}.3");
    let result = ex.call("exec_command", json!({"cmd": cmd, "yield_time_ms": 500}));
    assert!(result.to_string().contains("session"), "{result}");
    let left = |needle: &str| {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).replace('\0', " ").trim_end() == needle)
            .count()
    };
    // Slow machines (a VM without acceleration) take a while to start it.
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while left(&format!("sleep {tag}.1")) == 0 {
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    ex.close_stdin();
    assert_eq!(ex.child.wait().unwrap().code(), Some(0));
    for step in 1..=3 {
        assert_eq!(
            left(&format!("sleep {tag}.{step}")),
            0,
            "sleep {tag}.{step} outlived the executor"
        );
    }
}

/// Under `on-failure` a session's command that the sandbox likely blocked is offered a retry
/// without the sandbox, as a question to the client with the evidence; approved, it runs again
/// unsandboxed and the result says so; denied, nothing more runs. `on-request` reports the
/// denial to the program, which asks for escalation itself.
#[test]
fn a_session_the_sandbox_blocked_is_offered_an_unsandboxed_retry_under_on_failure() {
    require_sandbox!(1);
    let outside = scratch();
    let target = outside.path().join("written");
    let cmd = format!("echo x > {}", target.display());
    for (answer, written) in [("denied", false), ("approved", true)] {
        let mut ex = Executor::start(&["-a", "on-failure"]);
        ex.send(&json!({"type": "call_tool", "requestId": "r1", "toolName": "exec_command",
            "arguments": {"cmd": cmd}}));
        let request = ex.wait_for(Duration::from_secs(20), |v| v["type"] == "approval_request");
        assert_eq!(request["stage"], "retry_without_sandbox", "{request}");
        assert!(request["evidence"].to_string().contains("written"), "{request}");
        assert!(!target.exists(), "the sandboxed attempt wrote outside the roots");
        ex.send(&json!({"type": "approval_response", "requestId": request["requestId"],
            "decision": answer}));
        let response = ex.wait_for(Duration::from_secs(20), |v| v["requestId"] == "r1");
        assert_eq!(target.exists(), written, "{answer}: {response}");
        if written {
            assert!(response.to_string().contains("WITHOUT the sandbox"), "{response}");
        }
        let _ = std::fs::remove_file(&target);
    }
    let mut ex = Executor::start(&["-a", "on-request"]);
    let text = ex.text("exec_command", json!({"cmd": cmd}));
    assert!(!target.exists(), "{text}");
    assert!(!text.contains("WITHOUT"), "{text}");
}

/// The executor raises its own soft limit of open files (64 sessions hold more than 1024), and
/// the commands it starts get the one it was given back (the suite starts it with 1024).
#[test]
fn a_session_gets_the_open_file_limit_the_executor_was_given() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    for tty in [false, true] {
        let text = ex.text("exec_command", json!({"cmd": "ulimit -Sn", "tty": tty}));
        assert!(text.lines().any(|line| line.trim() == "1024"), "tty {tty}: {text}");
    }
}

/// Sessions write the roots directly: a long-running command (a dev server) sees what the user
/// edits while it runs, and the user sees what it writes.
#[test]
fn a_long_running_session_sees_the_users_edits_and_the_user_sees_its_writes() {
    require_sandbox!(1);
    let mut ex = Executor::start(&[]);
    let work = ex.work.path().to_path_buf();
    std::fs::write(work.join("page"), "before\n").unwrap();
    let script = "while ! grep -q edited page; do sleep 0.05; done; echo served > out; \
                  echo seen-the-edit; sleep 30";
    let text = ex.text("exec_command", json!({"cmd": script, "yield_time_ms": 500}));
    let id = session_id(&text).unwrap_or_else(|| panic!("no session: {text}"));
    std::fs::write(work.join("page"), "edited\n").unwrap();
    let mut seen = String::new();
    for _ in 0..20 {
        seen += &ex.text("write_stdin", json!({"session_id": id, "yield_time_ms": 500}));
        if seen.contains("seen-the-edit") {
            break;
        }
    }
    assert!(seen.contains("seen-the-edit"), "{seen}");
    assert_eq!(std::fs::read_to_string(work.join("out")).unwrap(), "served\n");
}
