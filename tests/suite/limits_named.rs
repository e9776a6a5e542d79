//! A command stopped at a resource limit is named as such wherever its result goes: an
//! executor session's result (pipes and a terminal, sandboxed or not), and never offered a
//! retry without the sandbox. The far end over `--host`/`--connect` is in `remote.rs`.
//! `file-size` needs no cgroup (an rlimit), so these run as root and as uid 65534; `memory`
//! runs where cordon has a cgroup.

use serde_json::json;

use super::unsandboxed_containment::Executor;
use super::util::*;

/// The result text of one `exec_command` with `arguments`, and whether a question came first.
fn exec_command(ex: &mut Executor, id: &str, arguments: serde_json::Value) -> (String, bool) {
    ex.send(&json!({"type": "call_tool", "requestId": id, "toolName": "exec_command",
        "arguments": arguments}));
    let mut asked = false;
    let response = loop {
        let (message, _) = ex.next_after_either("call_tool_response", "approval_request");
        if message["type"] == "call_tool_response" {
            break message;
        }
        // A question for a retry without the sandbox: noted, and answered no.
        asked = true;
        ex.send(&json!({"type": "approval_response", "requestId": message["requestId"],
            "decision": "denied"}));
    };
    let text = response["outcome"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    (format!("{text}{response}"), asked)
}

const LINE: &str = "Limit: the command exceeded its file-size limit (1 MiB) and was stopped";

#[test]
fn a_session_stopped_at_a_limit_is_named_and_never_retried_unsandboxed() {
    require_sandbox!(1);
    for user in USERS {
        let dir = scratch();
        let outside = scratch();
        if user == User::Nobody {
            chown_nobody(dir.path());
            chown_nobody(outside.path());
        }
        let big = dir.path().join("big");
        let write = format!("head -c 5M /dev/zero > {}", big.display());
        for (mode, flags) in [
            ("sandboxed", &["-s", "workspace-write"][..]),
            ("unsandboxed", &["-s", "danger-full-access"]),
        ] {
            for tty in [false, true] {
                let what = format!("{user:?} {mode} tty={tty}");
                let mut args = flags.to_vec();
                args.extend(["--limit", "file-size=1M"]);
                let mut ex = Executor::start(user, dir.path(), &args);
                let (text, _) = exec_command(
                    &mut ex,
                    "r1",
                    json!({"cmd": write, "tty": tty, "login": false, "yield_time_ms": 10000}),
                );
                assert!(text.contains(LINE), "{what}: {text}");
                assert_eq!(std::fs::metadata(&big).unwrap().len(), 1 << 20, "{what}");
                // A call only lowers: the executor's 1M holds, and is named again.
                let (text, _) = exec_command(
                    &mut ex,
                    "r2",
                    json!({"cmd": write, "tty": tty, "login": false, "yield_time_ms": 10000,
                        "limits": ["file-size=10M"]}),
                );
                assert!(text.contains(LINE), "{what}: {text}");
                assert_eq!(std::fs::metadata(&big).unwrap().len(), 1 << 20, "{what}: {text}");
                // The same command under a generous limit succeeds, and names nothing.
                let mut generous = flags.to_vec();
                generous.extend(["--limit", "file-size=10M"]);
                let mut ex = Executor::start(user, dir.path(), &generous);
                let (text, _) = exec_command(
                    &mut ex,
                    "r3",
                    json!({"cmd": write, "tty": tty, "login": false, "yield_time_ms": 10000}),
                );
                assert!(text.contains("exited with code 0"), "{what}: {text}");
                assert!(!text.contains("Limit:"), "{what}: {text}");
                assert_eq!(std::fs::metadata(&big).unwrap().len(), 5 << 20, "{what}");
            }
        }
        // Under on-failure a command that also hit the sandbox (a write outside the roots) is
        // not offered a retry when a limit stopped it.
        let denied_then_big = format!("echo x > {}/f; {write}", outside.path().display());
        let mut ex =
            Executor::start(user, dir.path(), &["-a", "on-failure", "--limit", "file-size=1M"]);
        let (text, asked) = exec_command(
            &mut ex,
            "r4",
            json!({"cmd": denied_then_big, "login": false, "yield_time_ms": 10000}),
        );
        assert!(!asked, "{user:?}: a limit-stopped command was offered an unsandboxed retry");
        assert!(text.contains(LINE), "{user:?}: {text}");
        assert!(!outside.path().join("f").exists(), "{user:?}");
        // Control: without the limit the same denial is offered the retry.
        let mut ex = Executor::start(user, dir.path(), &["-a", "on-failure"]);
        ex.send(&json!({"type": "call_tool", "requestId": "r5", "toolName": "exec_command",
            "arguments": {"cmd": format!("echo x > {}/f", outside.path().display()),
                "login": false}}));
        let (request, _) = ex.next_after("approval_request");
        assert_eq!(request["stage"], "retry_without_sandbox", "{user:?}: {request}");
    }
}
