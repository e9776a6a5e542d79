//! `cordon mcp-server` driven by a real MCP client: the Python `mcp` package from PyPI
//! (`tests/helpers/mcp_client.py`), with the effects checked from outside (files on disk,
//! the process list). The wire-level robustness checks (malformed lines, SIGTERM, progress) speak raw
//! JSON-RPC over pipes.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::executor::Executor;
use super::util::*;

/// An interpreter with the `mcp` package: `$CORDON_TEST_MCP_PYTHON`, else the venv `.ci/run`
/// makes (`.ci/venv`), else the suite's python3. `None` when none of them can import it.
pub(super) fn mcp_python() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/python3");
            let candidates = [
                std::env::var_os("CORDON_TEST_MCP_PYTHON").map(PathBuf::from),
                Some(venv),
                Some(PathBuf::from(python())),
            ];
            candidates.into_iter().flatten().find(|python| {
                Command::new(python)
                    .args(["-c", "import mcp.client.stdio, jsonschema"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
        })
        .as_deref()
}

/// Skips (fatal under `CORDON_TEST_REQUIRE_SANDBOX=1`) without the Python MCP client.
macro_rules! require_mcp_client {
    () => {
        // Every MCP test runs sandboxed commands.
        require_sandbox!(1);
        skip_unless!(
            $crate::suite::mcp::mcp_python().is_some(),
            "needs the Python `mcp` package (pip install mcp; .ci/run makes .ci/venv)"
        );
    };
}
#[cfg(target_os = "linux")]
pub(super) use require_mcp_client;

/// A workspace, a directory outside it, and a `$CORDON_HOME`.
pub(super) struct Dirs {
    pub(super) work: tempfile::TempDir,
    pub(super) outside: tempfile::TempDir,
    pub(super) home: tempfile::TempDir,
}

impl Dirs {
    pub(super) fn new() -> Dirs {
        Dirs { work: scratch(), outside: scratch(), home: scratch() }
    }
}

/// Runs one scenario of the Python client; returns its JSON report.
pub(super) fn client(scenario: &str, dirs: &Dirs, options: &[&str], server_args: &[&str]) -> Value {
    let python = mcp_python().unwrap();
    let out = Command::new(python)
        .arg(helper_program("mcp_client.py"))
        .arg(scenario)
        .args(["--cordon", CORDON, "--workdir"])
        .arg(dirs.work.path())
        .args(options)
        .arg("--")
        .args(server_args)
        .env("CORDON_HOME", dirs.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "cordon panicked: {stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("no report ({e}); status {}\n{stdout}\n{stderr}", out.status))
}

/// A command line nothing else on the machine runs: `sleep 36NN.<pid><n>`.
fn unique_sleep(n: u32) -> String {
    format!("36{n:02}.{}{n}", std::process::id())
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

#[test]
fn mcp_tools_have_the_executors_schemas_and_annotations_that_follow_the_policy() {
    require_mcp_client!();
    let mut executor = Executor::start(&[]);
    executor.send(&json!({"type": "list_tools", "requestId": "t"}));
    let listed = executor.wait_for(Duration::from_secs(10), |m| m["type"] == "list_tools_response");
    let dirs = Dirs::new();
    for (server_args, hints) in [
        (&[][..], (false, true, false)),
        (&["-s", "read-only"][..], (true, false, false)),
        (&["--network"][..], (false, true, true)),
    ] {
        let report = client("tools", &dirs, &[], server_args);
        assert_eq!(report["server"], "cordon");
        assert_eq!(
            report["schema_verdicts"],
            json!({"valid": true, "cmd_not_a_string": false, "unknown_field": false, "missing_cmd": false})
        );
        let tools = report["tools"].as_array().unwrap();
        for spec in listed["tools"].as_array().unwrap() {
            let tool = tools.iter().find(|t| t["name"] == spec["name"]).unwrap();
            assert_eq!(tool["inputSchema"], spec["inputSchema"], "{}", spec["name"]);
            assert_eq!(tool["description"], spec["description"]);
            let a = &tool["annotations"];
            assert_eq!(
                (
                    a["readOnlyHint"].as_bool(),
                    a["destructiveHint"].as_bool(),
                    a["openWorldHint"].as_bool()
                ),
                (Some(hints.0), Some(hints.1), Some(hints.2)),
                "{server_args:?} {}",
                spec["name"]
            );
        }
    }
}

#[test]
fn mcp_exec_command_runs_a_command_and_reports_like_the_executor() {
    require_mcp_client!();
    let dirs = Dirs::new();
    let report = client("run", &dirs, &["--cmd", "echo hello from mcp; pwd"], &[]);
    let result = &report["result"];
    assert_eq!(result["is_error"], false, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(text.starts_with("Wall time: "), "{text}");
    assert!(text.contains("Process exited with code 0\nOutput:\nhello from mcp\n"), "{text}");
    assert!(text.contains(dirs.work.path().to_str().unwrap()), "{text}");
}

#[test]
fn mcp_write_outside_the_workspace_is_denied_and_the_file_is_absent() {
    require_mcp_client!();
    require_sandbox!(1);
    let dirs = Dirs::new();
    let target = dirs.outside.path().join("escaped");
    let inside = dirs.work.path().join("inside");
    let cmd = format!("echo x > {}; echo y > {}", target.display(), inside.display());
    let report = client("run", &dirs, &["--cmd", &cmd], &[]);
    let text = report["result"]["text"].as_str().unwrap();
    assert!(text.contains("Process exited with code 0"), "the last write succeeds: {text}");
    assert!(text.contains("Read-only file system") || text.contains("Permission denied"), "{text}");
    assert!(!target.exists(), "the write outside the workspace happened");
    assert!(inside.exists(), "the write inside the workspace did not happen: {text}");
}

#[test]
fn mcp_pty_session_is_driven_with_write_stdin() {
    require_mcp_client!();
    let dirs = Dirs::new();
    let report = client("pty", &dirs, &[], &[]);
    let first = report["first"]["text"].as_str().unwrap();
    assert!(first.contains("Process running with session ID "), "{first}");
    let second = report["second"]["text"].as_str().unwrap();
    assert!(second.contains("got:hello"), "{second}");
    assert!(second.contains("Process exited with code 0"), "{second}");
}

/// An escalation (`require_escalated`) under `-a on-request`, answered `answer` (or not asked,
/// for a client without elicitation). Returns the report and the file the command creates
/// outside the workspace.
fn escalate(answer: Option<&str>) -> (Value, PathBuf, Dirs) {
    let dirs = Dirs::new();
    let target = dirs.outside.path().join(format!("escalated-{}", answer.unwrap_or("none")));
    let cmd = format!("touch {}", target.display());
    let mut options = vec!["--cmd", cmd.as_str()];
    if let Some(answer) = answer {
        options.extend(["--answer", answer]);
    }
    let report = client("escalate", &dirs, &options, &["-a", "on-request"]);
    (report, target, dirs)
}

#[test]
fn mcp_escalation_accepted_through_elicitation_runs_once_unsandboxed() {
    require_mcp_client!();
    let (report, target, dirs) = escalate(Some("accept"));
    let asked = report["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert_eq!(asked[0]["mode"], "form");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(message.contains("UNSANDBOXED"), "{message}");
    assert!(message.contains(&format!("/bin/bash -c 'touch {}'", target.display())), "{message}");
    assert!(message.contains(dirs.work.path().to_str().unwrap()), "{message}");
    assert!(message.contains("the test needs to write outside the workspace"), "{message}");
    assert_eq!(report["result"]["is_error"], false, "{report}");
    assert!(target.exists(), "the approved command did not run: {report}");
}

#[test]
fn mcp_escalation_declined_through_elicitation_does_not_run() {
    require_mcp_client!();
    for answer in ["decline", "cancel"] {
        let (report, target, _dirs) = escalate(Some(answer));
        assert_eq!(report["elicitations"].as_array().unwrap().len(), 1, "{report}");
        assert_eq!(report["result"]["is_error"], true, "{report}");
        assert!(report["result"]["text"].as_str().unwrap().contains("refused"), "{report}");
        assert!(!target.exists(), "{answer}: the refused command ran");
    }
}

#[test]
fn mcp_client_without_elicitation_is_refused_with_a_message_saying_why() {
    require_mcp_client!();
    let (report, target, _dirs) = escalate(None);
    assert_eq!(report["elicitations"], json!([]));
    assert_eq!(report["result"]["is_error"], true, "{report}");
    let text = report["result"]["text"].as_str().unwrap();
    assert!(text.contains("did not declare the elicitation capability"), "{text}");
    assert!(text.contains("as with -a never"), "{text}");
    assert!(!target.exists());
}

#[test]
fn mcp_cancellation_kills_the_running_command() {
    require_mcp_client!();
    let dirs = Dirs::new();
    let marker = unique_sleep(1);
    let report = client("cancel", &dirs, &["--marker", &marker], &[]);
    assert_eq!(report["seen"], true, "the command never started: {report}");
    assert_eq!(report["cancelled"], true, "{report}");
    assert_eq!(report["gone"], true, "processes left after cancellation: {report}");
    assert_eq!(report["sessions"]["text"], "[]", "{report}");
    assert_eq!(processes_matching(&format!("^sleep {marker}$")), 0);
}

#[test]
fn mcp_sessions_are_listed_and_close_session_kills_one() {
    require_mcp_client!();
    let dirs = Dirs::new();
    let marker = unique_sleep(4);
    let report = client("close", &dirs, &["--marker", &marker], &[]);
    assert_eq!(report["seen"], true, "{report}");
    let listed = report["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{report}");
    assert_eq!(listed[0]["cmd"], format!("exec sleep {marker}"));
    assert_eq!(listed[0]["tty"], false);
    assert_eq!(listed[0]["exit_code"], Value::Null);
    assert_eq!(report["closed"]["is_error"], false, "{report}");
    assert_eq!(report["gone"], true, "{report}");
    assert_eq!(report["again"]["is_error"], true, "{report}");
    assert!(report["again"]["text"].as_str().unwrap().contains("unknown session id"), "{report}");
}

#[test]
fn mcp_client_that_disconnects_mid_command_leaves_no_process_and_the_server_exits_0() {
    require_mcp_client!();
    let dirs = Dirs::new();
    let marker = unique_sleep(2);
    let status = dirs.home.path().join("status");
    let status_arg = status.to_str().unwrap();
    let report =
        client("disconnect", &dirs, &["--marker", &marker, "--status-file", status_arg], &[]);
    assert_eq!(report["seen"], true, "the command never started: {report}");
    // The client's own teardown would kill the server after 2 s: only a server that exits on
    // its own writes a status.
    assert!(
        wait_until(Duration::from_secs(5), || status.exists()),
        "the server did not exit after its client went away"
    );
    let code = std::fs::read_to_string(&status).unwrap();
    assert_eq!(code.trim(), "0");
    assert!(
        wait_until(Duration::from_secs(2), || processes_matching(&format!("^sleep {marker}$"))
            == 0),
        "the command outlived the server"
    );
}

/// `cordon mcp-server` on raw pipes, for what a well-behaved client never sends.
struct RawServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    _dirs: Dirs,
}

impl RawServer {
    fn start() -> RawServer {
        let dirs = Dirs::new();
        let mut child = Command::new(CORDON)
            .args(["mcp-server", "-C"])
            .arg(dirs.work.path())
            .env("CORDON_HOME", dirs.home.path())
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
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut server = RawServer { child, stdin, lines, _dirs: dirs };
        server.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        server.next();
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line, which must be JSON (stdout carries nothing else).
    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("no message in time: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"))
    }
}

#[test]
fn mcp_malformed_lines_get_json_rpc_errors_and_the_server_keeps_serving() {
    // The server runs sandboxed commands.
    require_sandbox!(1);
    let mut server = RawServer::start();
    let cases: [(&[u8], Value, i64); 4] = [
        (b"this is not json", Value::Null, -32700),
        (b"\xff\xfe{\"id\": 3}", Value::Null, -32700),
        (br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"nope"}"#, json!(7), -32600),
        (br#"[1, 2, 3]"#, Value::Null, -32600),
    ];
    for (line, id, code) in cases {
        server.stdin.write_all(line).unwrap();
        server.stdin.write_all(b"\n").unwrap();
        server.stdin.flush().unwrap();
        let answer = server.next();
        assert_eq!(answer.get("id").cloned().unwrap_or(Value::Null), id, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().len() < 300, "{answer}");
    }
    server.send(&"x".repeat(100_000));
    assert_eq!(server.next()["error"]["code"], -32700);
    server.send(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#);
    assert!(server.next()["error"].is_object());
    server.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":1}}}"#);
    let bad_args = server.next();
    assert_eq!(bad_args["result"]["isError"], true, "{bad_args}");
    server.send(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo still serving","login":false}}}"#);
    let answer = server.next();
    assert_eq!(answer["id"], 10);
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("still serving"), "{answer}");
    drop(server.stdin);
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn mcp_progress_is_reported_for_a_long_call_with_a_progress_token() {
    // The server runs sandboxed commands.
    require_sandbox!(1);
    let mut server = RawServer::start();
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p1"},"name":"exec_command","arguments":{"cmd":"sleep 2.5; echo done","login":false,"yield_time_ms":30000}}}"#);
    let mut progress = Vec::new();
    let result = loop {
        let message = server.next();
        if message["method"] == "notifications/progress" {
            progress.push(message);
        } else {
            break message;
        }
    };
    assert_eq!(result["id"], 1, "{result}");
    assert!(result["result"]["content"][0]["text"].as_str().unwrap().contains("done"));
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p1"), "{progress:?}");
}

#[test]
fn mcp_sigterm_closes_every_session_and_exits_143() {
    // The server runs sandboxed commands.
    require_sandbox!(1);
    let mut server = RawServer::start();
    let marker = unique_sleep(3);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "exec_command",
        "arguments": {"cmd": format!("exec sleep {marker}"), "login": false, "yield_time_ms": 250}}});
    server.send(&call.to_string());
    let answer = server.next();
    assert!(
        answer["result"]["content"][0]["text"].as_str().unwrap().contains("Process running"),
        "{answer}"
    );
    assert!(
        wait_until(Duration::from_secs(5), || processes_matching(&format!("^sleep {marker}$"))
            == 1),
        "the session's command never started"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(
        wait_until(Duration::from_secs(2), || processes_matching(&format!("^sleep {marker}$"))
            == 0),
        "a session outlived the server"
    );
}

/// The MCP server reads and writes its own stdin and stdout without threads (as the executor
/// does), so its pipe sessions start the helper in the forked child instead of exec'ing cordon:
/// pid 1 of the command's namespace is then a fork of `cordon mcp-server`.
#[test]
#[cfg(target_os = "linux")]
fn mcp_pipe_sessions_start_the_helper_in_process() {
    require_mcp_client!();
    require_sandbox!(1);
    skip_unless!(
        features().mount_view,
        "needs the mount view (PID namespace), in which the command's pid 1 is the helper"
    );
    let dirs = Dirs::new();
    let report = client("run", &dirs, &["--cmd", "tr '\\0' ' ' < /proc/1/cmdline"], &[]);
    let text = report["result"]["text"].as_str().unwrap();
    assert!(text.contains(&format!("Output:\n{CORDON} mcp-server")), "{text}");
}

/// A string that is not text (half a UTF-16 surrogate pair, as JavaScript writes a lone
/// surrogate) or holds a NUL: the official client gets a tool error with one clear line at
/// once, not a parse error without its id that leaves it waiting for its own timeout; nothing
/// runs, and the server keeps serving.
#[test]
fn a_command_that_is_not_text_or_holds_a_nul_is_a_tool_error_answered_at_once() {
    require_mcp_client!();
    let dirs = Dirs::new();
    let marker = dirs.outside.path().join("ran");
    let report = client("invalid-strings", &dirs, &["--marker", marker.to_str().unwrap()], &[]);
    for (case, says) in [("surrogate", "surrogate pair"), ("nul", "NUL byte")] {
        let answer = &report[case];
        assert_eq!(answer["is_error"], true, "{case}: {report}");
        let text = answer["text"].as_str().unwrap();
        assert!(text.contains(says), "{case}: {text}");
        assert_eq!(text.lines().count(), 1, "{case}: {text}");
    }
    assert_eq!(report["after"]["is_error"], false, "{report}");
    assert!(report["seconds"].as_f64().unwrap() < 15.0, "{report}");
    assert!(!marker.exists(), "a command with an invalid string ran");
}

#[test]
fn a_raw_tool_call_with_half_a_surrogate_pair_gets_its_id_back() {
    require_sandbox!(1);
    let mut server = RawServer::start();
    server.send(r#"{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo \ud800"}}}"#);
    let answer = server.next();
    assert_eq!(answer["id"], "s1", "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    server.send(r#"{"jsonrpc":"2.0","id":12,"method":"ping","params":{"x":"\udc00"}}"#);
    let answer = server.next();
    assert_eq!(answer["id"], 12, "{answer}");
    assert!(answer["error"].is_object(), "{answer}");
}
