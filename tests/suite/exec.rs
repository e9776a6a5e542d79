//! `cordon exec`: approvals, retries, rules, environment, timeouts, output.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::util::*;

/// `cordon exec` with `CORDON_HOME` pointing at `home`, no terminal.
pub(super) fn exec(home: &Path, cwd: &Path, args: &[&str]) -> Run {
    // No controlling terminal: `setsid` detaches it, so /dev/tty cannot be opened.
    let out = without_terminal(CORDON)
        .arg("exec")
        .args(args)
        .current_dir(cwd)
        .env("CORDON_HOME", home)
        .env("MY_API_TOKEN", "sk-secret")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    out.into()
}

/// `cordon exec` on a fresh pseudo-terminal; `answer` is typed at the approval prompt.
/// Returns the terminal transcript and the exit status.
pub(super) fn exec_on_terminal(
    home: &Path,
    cwd: &Path,
    args: &[&str],
    answers: &[&str],
) -> (String, i32) {
    let out = Command::new(python())
        .arg(helper_program("pty_answer.py"))
        .arg(answers.join(","))
        .arg(CORDON)
        .arg("exec")
        .args(args)
        .current_dir(cwd)
        .env("CORDON_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code().unwrap_or(-1))
}

pub(super) struct Env {
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
    pub outside: tempfile::TempDir,
}

pub(super) fn env() -> Env {
    Env { home: scratch(), work: scratch(), outside: scratch() }
}

#[test]
fn never_fails_closed_with_one_line_and_a_json_record_of_the_denied_attempt() {
    require_sandbox!(1);
    let e = env();
    let target = e.outside.path().join("cordon-probe");
    let script = format!("echo x > {}", target.display());
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "never", "-s", "workspace-write", "--", "sh", "-c", &script],
    );
    assert_ne!(run.code, Some(0));
    assert!(!target.exists());
    let blocked: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| {
            l.starts_with(&format!(
                "cordon: the sandbox blocked this command ({SANDBOX}, workspace-write); "
            ))
        })
        .collect();
    assert_eq!(blocked.len(), 1, "{}", run.stderr);

    let run =
        exec(e.home.path(), e.work.path(), &["-a", "never", "--json", "--", "sh", "-c", &script]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let attempts = v["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["sandbox"], SANDBOX);
    assert_eq!(attempts[0]["verdict"], "likely_sandbox_denied");
    assert!(!target.exists());
}

#[test]
fn on_failure_retries_without_the_sandbox_only_when_the_terminal_says_yes() {
    require_sandbox!(1);
    let e = env();
    let target = e.outside.path().join("written");
    let script = format!("echo x > {}", target.display());
    let args = ["-a", "on-failure", "--", "sh", "-c", script.as_str()];

    let (transcript, code) = exec_on_terminal(e.home.path(), e.work.path(), &args, &["n"]);
    assert_ne!(code, 0, "{transcript}");
    assert!(!target.exists(), "retried after a no: {transcript}");
    assert!(transcript.contains("WITHOUT the sandbox"), "{transcript}");

    let run = exec(e.home.path(), e.work.path(), &args);
    assert!(!target.exists());
    assert!(run.stderr.contains("no terminal"), "{}", run.stderr);
    assert!(run.stderr.contains("the sandbox blocked this command"), "{}", run.stderr);

    let (transcript, code) = exec_on_terminal(e.home.path(), e.work.path(), &args, &["y"]);
    assert_eq!(code, 0, "{transcript}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

#[test]
fn a_read_the_policy_allows_that_fails_is_a_plain_failure_not_a_denial() {
    require_sandbox!(1);
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to give the file to another user");
        return;
    }
    let e = env();
    // Readable by its owner only, and the sandboxed command has no capability to read past
    // that: the file system refuses the read, not the sandbox.
    let secret = e.outside.path().join("theirs");
    std::fs::write(&secret, "x").unwrap();
    std::os::unix::fs::chown(&secret, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o400)).unwrap();
    let file = secret.display().to_string();
    let run = exec(e.home.path(), e.work.path(), &["-a", "never", "--json", "--", "cat", &file]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let attempts = v["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{v}");
    assert_eq!(attempts[0]["verdict"], "failure", "{v}");
    let run = exec(e.home.path(), e.work.path(), &["-a", "on-failure", "--", "cat", &file]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(!run.stderr.contains("the sandbox blocked"), "{}", run.stderr);
    assert!(!run.stderr.contains("WITHOUT the sandbox"), "{}", run.stderr);
}

#[test]
fn untrusted_runs_known_safe_commands_and_asks_for_the_rest() {
    require_sandbox!(1);
    let e = env();
    Command::new("git").args(["init", "-q"]).current_dir(e.work.path()).status().unwrap();
    for safe in [&["ls"][..], &["git", "status"], &["bash", "-lc", "ls && pwd"]] {
        let mut args = vec!["-a", "untrusted", "--"];
        args.extend_from_slice(safe);
        let run = exec(e.home.path(), e.work.path(), &args);
        assert_eq!(run.code, Some(0), "{safe:?}: {}", run.stderr);
        assert!(!run.stderr.contains("approval needed"), "{safe:?} asked: {}", run.stderr);
    }
    for unsafe_cmd in [
        &["touch", "f"][..],
        &["bash", "-lc", "ls > f"],
        &["bash", "-lc", "echo $(id)"],
        &["find", ".", "-delete"],
    ] {
        let mut args = vec!["-a", "untrusted", "--"];
        args.extend_from_slice(unsafe_cmd);
        let run = exec(e.home.path(), e.work.path(), &args);
        assert_eq!(run.code, Some(125), "{unsafe_cmd:?}: {}", run.stderr);
        assert!(run.stderr.contains("approval needed"), "{unsafe_cmd:?}: {}", run.stderr);
        assert!(!e.work.path().join("f").exists());
    }
}

#[test]
fn rules_forbid_prompt_persist_and_workspace_allows_are_ignored() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\njustification = \"no deleting here\"\n\n\
         [[rule]]\nprefix = [\"echo\", \"hi\"]\ndecision = \"prompt\"\n",
    )
    .unwrap();
    let run = exec(e.home.path(), e.work.path(), &["-a", "on-failure", "--", "rm", "-f", "x"]);
    assert_eq!(run.code, Some(125));
    assert!(run.stderr.contains("no deleting here"), "{}", run.stderr);

    let run = exec(e.home.path(), e.work.path(), &["-a", "on-failure", "--", "echo", "hi"]);
    assert_eq!(run.code, Some(125), "a prompt rule asks even under on-failure: {}", run.stderr);
    assert!(run.stderr.contains("approval needed"));

    // A workspace allow rule is ignored (with a warning): `touch f` still asks.
    std::fs::create_dir_all(e.work.path().join(".cordon")).unwrap();
    std::fs::write(
        e.work.path().join(".cordon/rules.toml"),
        "[[rule]]\nprefix = [\"touch\"]\ndecision = \"allow\"\n",
    )
    .unwrap();
    let run = exec(e.home.path(), e.work.path(), &["-a", "untrusted", "--", "touch", "f"]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("ignoring"), "{}", run.stderr);
    assert!(!e.work.path().join("f").exists());
    std::fs::remove_dir_all(e.work.path().join(".cordon")).unwrap();

    // "Always allow" is not offered without a subcommand: a rule for `touch` would allow
    // every use of it.
    let (transcript, code) = exec_on_terminal(
        e.home.path(),
        e.work.path(),
        &["-a", "untrusted", "--", "touch", "f"],
        &["y"],
    );
    assert_eq!(code, 0, "{transcript}");
    assert!(!transcript.contains("[a]"), "{transcript}");
    assert!(e.work.path().join("f").exists());

    // "Always allow" writes a program + subcommand rule the next run honours.
    let (transcript, code) = exec_on_terminal(
        e.home.path(),
        e.work.path(),
        &["-a", "untrusted", "--", "git", "version"],
        &["a"],
    );
    assert_eq!(code, 0, "{transcript}");
    let rules = std::fs::read_to_string(e.home.path().join("rules.toml")).unwrap();
    assert!(rules.contains("[\"git\", \"version\"]"), "{rules}");
    let run = exec(e.home.path(), e.work.path(), &["-a", "untrusted", "--", "git", "version"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn on_request_and_never_without_a_terminal_do_not_retry_or_ask() {
    require_sandbox!(1);
    let e = env();
    let target = e.outside.path().join("nope");
    let script = format!("echo x > {}", target.display());
    for policy in ["on-request", "never"] {
        let run = exec(
            e.home.path(),
            e.work.path(),
            &["-a", policy, "--json", "--", "sh", "-c", &script],
        );
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["attempts"].as_array().unwrap().len(), 1, "{policy}");
        assert_eq!(v["approvals"].as_array().unwrap().len(), 0, "{policy}");
        assert!(!run.stderr.contains("approval needed"), "{policy}: {}", run.stderr);
        assert!(!target.exists());
    }
}

/// From a terminal, the person who typed the command is the requester: `on-request` asks after a
/// denial and retries only on yes; `never` still does not ask.
#[test]
fn on_request_from_a_terminal_asks_after_a_denial_and_never_does_not() {
    require_sandbox!(1);
    let e = env();
    let target = e.outside.path().join("written");
    let script = format!("echo x > {}", target.display());
    let args = ["-a", "on-request", "--", "sh", "-c", script.as_str()];

    let (transcript, code) = exec_on_terminal(e.home.path(), e.work.path(), &args, &["n"]);
    assert_ne!(code, 0, "{transcript}");
    assert!(transcript.contains("WITHOUT the sandbox"), "{transcript}");
    assert!(!target.exists(), "retried after a no: {transcript}");

    let never = ["-a", "never", "--", "sh", "-c", script.as_str()];
    let (transcript, code) = exec_on_terminal(e.home.path(), e.work.path(), &never, &["y"]);
    assert_ne!(code, 0, "{transcript}");
    assert!(!transcript.contains("approval needed"), "never asked: {transcript}");
    assert!(!target.exists(), "{transcript}");

    let (transcript, code) = exec_on_terminal(e.home.path(), e.work.path(), &args, &["y"]);
    assert_eq!(code, 0, "{transcript}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

#[test]
fn secrets_are_filtered_from_the_environment_and_the_sandbox_is_announced() {
    require_sandbox!(1);
    let e = env();
    let run = exec(
        e.home.path(),
        e.work.path(),
        &[
            "-a",
            "never",
            "--",
            "sh",
            "-c",
            "echo token=${MY_API_TOKEN:-unset} sandbox=$CORDON_SANDBOX",
        ],
    );
    run.assert_ok();
    assert_eq!(run.stdout, format!("token=unset sandbox={SANDBOX}\n"));
}

#[test]
fn arguments_and_environment_that_are_not_utf8_reach_the_command_as_the_same_bytes() {
    require_sandbox!(1);
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let e = env();
    let latin1 = OsStr::from_bytes(b"caf\xe9");
    // And a secret by value stays filtered whatever its encoding.
    let secret = OsStr::from_bytes(b"ghp_0123456789abcdefghijklmnopqrstuvwxyz01\xff");
    let bearer = OsStr::from_bytes(b"Bearer\xa0abcdefghijklmnopqrstuvwxyz0123456789ABCD");
    for entry in ["exec", "sandbox"] {
        let mut command = without_terminal(CORDON);
        command.arg(entry);
        if entry == "sandbox" {
            command.arg("linux");
        } else {
            command.args(["-a", "never"]);
        }
        let out = command
            .args(["-s", "read-only", "--", "sh", "-c"])
            .arg("printf '%s|%s|%s%s' \"$1\" \"$LATIN1\" \"${LEAK-unset}\" \"${BEARER-}\" | od -An -tx1")
            .arg("sh")
            .arg(latin1)
            .current_dir(e.work.path())
            .env("CORDON_HOME", e.home.path())
            .env("LATIN1", latin1)
            .env("LEAK", secret)
            // A byte that is not UTF-8 where a space stood does not hide a header's token.
            .env("BEARER", bearer)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let run: Run = out.into();
        run.assert_ok();
        let bytes: String = run.stdout.split_whitespace().collect();
        // café|café|unset with é as the single byte 0xe9.
        assert_eq!(bytes, "636166e97c636166e97c756e736574", "{entry}: {}", run.stderr);
    }
}

/// An allow rule is text: one whose word stands for a byte that is not UTF-8 (what an
/// "always allow" of such an argv would have saved) allows no argv with such a byte, and the
/// question for one offers no "always allow".
#[test]
fn an_allow_rule_never_stands_for_bytes_that_are_not_utf8() {
    require_sandbox!(1);
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let e = env();
    // In the workspace: an allowed command runs sandboxed, and may write there.
    let marker = e.work.path().join("ran");
    let evil = e.work.path().join(OsStr::from_bytes(b"tool\xfe"));
    std::fs::write(&evil, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"./tool\u{FFFD}\", \"arg\"]\ndecision = \"allow\"\n",
    )
    .unwrap();
    let out = without_terminal(CORDON)
        .args(["exec", "-a", "untrusted", "--"])
        .arg(OsStr::from_bytes(b"./tool\xfe"))
        .arg("arg")
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let run: Run = out.into();
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(!marker.exists(), "the allow rule ran a different program unasked");
}

#[test]
fn a_timeout_kills_the_whole_group_and_exits_124() {
    require_sandbox!(1);
    let e = env();
    let started = Instant::now();
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "never", "--timeout", "1s", "--", "sh", "-c", "sleep 101.25 & sleep 101.25"],
    );
    assert_eq!(run.code, Some(124), "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_matching("^sleep 101.25$"), 0, "a sleep survived the timeout");
}

/// Linux: `PR_SET_PDEATHSIG`. macOS has no parent-death signal (a known gap, docs/trust-boundary.md).
#[cfg(target_os = "linux")]
#[test]
fn killing_cordon_kills_the_sandboxed_command() {
    require_sandbox!(1);
    let e = env();
    let mut child = Command::new(CORDON)
        .args(["exec", "-a", "never", "--", "sleep", "102.5"])
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.home.path())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_matching("^sleep 102.5$") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_matching("^sleep 102.5$"), 1);
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_matching("^sleep 102.5$"), 0, "the command outlived cordon");
}

#[test]
fn large_and_binary_output_streams_whole_with_bounded_memory() {
    require_sandbox!(1);
    let e = env();
    // 48 MiB of every byte value, far past the 1 MiB capture caps.
    let producer = "import sys\nb = bytes(range(256)) * 4096\nfor _ in range(48):\n    sys.stdout.buffer.write(b)";
    let wrapper = format!(
        "import resource, subprocess, sys, hashlib\n\
         p = subprocess.run([{CORDON:?}, 'exec', '-a', 'never', '--', {py:?}, '-c', {producer:?}], stdout=subprocess.PIPE)\n\
         expected = (bytes(range(256)) * 4096) * 48\n\
         print(p.returncode, len(p.stdout), p.stdout == expected, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
        py = python()
    );
    let out = Command::new(python())
        .arg("-c")
        .arg(&wrapper)
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(
        &fields[..3],
        ["0", &(48 * 1024 * 1024).to_string(), "True"],
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `ru_maxrss` is in KiB on Linux and in bytes on macOS.
    let unit = if cfg!(target_os = "macos") { 1024 } else { 1 };
    let max_rss_kib: u64 = fields[3].parse::<u64>().unwrap() / unit;
    assert!(max_rss_kib < 40 * 1024, "cordon (or its command) used {max_rss_kib} KiB");
}

#[test]
fn policy_check_prints_the_decision_and_runs_nothing() {
    let e = env();
    let run = Run::from(
        Command::new(CORDON)
            .args(["policy", "check", "-a", "untrusted", "--", "touch", "f"])
            .current_dir(e.work.path())
            .env("CORDON_HOME", e.home.path())
            .output()
            .unwrap(),
    );
    run.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["would_ask"], true);
    assert_eq!(v["known_safe"], false);
    assert_eq!(v["sandbox"], SANDBOX);
    assert!(!e.work.path().join("f").exists());
}

/// The directory listing a process's own descriptors.
const FD_DIR: &str = if cfg!(target_os = "macos") { "/dev/fd" } else { "/proc/self/fd" };

#[test]
fn descriptors_leaked_to_cordon_do_not_reach_the_command() {
    require_sandbox!(1);
    let e = env();
    let code = format!(
        "import os, subprocess\n\
         r, w = os.pipe()\n\
         p = subprocess.run([{CORDON:?}, 'exec', '-a', 'never', '--', 'ls', {FD_DIR:?}], pass_fds=(r, w), capture_output=True, text=True)\n\
         print(sorted(int(fd) for fd in p.stdout.split()))"
    );
    let out = Command::new(python())
        .arg("-c")
        .arg(&code)
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.home.path())
        .output()
        .unwrap();
    // 0, 1, 2, and the descriptor `ls` opened on the directory itself.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "[0, 1, 2, 3]",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_process_that_leaves_the_group_holding_stdout_does_not_hang_cordon() {
    require_sandbox!(1);
    let e = env();
    let started = Instant::now();
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "never", "--", "sh", "-c", &format!("{SETSID} sleep 103.75 & echo started")],
    );
    let elapsed = started.elapsed();
    // It escaped the process group, so it is not killed with it: clean up here.
    let _ = Command::new("pkill").args(["-f", "^sleep 103.75$"]).status();
    run.assert_ok();
    assert_eq!(run.stdout, "started\n");
    assert!(
        elapsed < Duration::from_secs(3),
        "cordon waited {elapsed:?} for a pipe it cannot close"
    );
}
