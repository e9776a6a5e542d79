//! Nothing cordon starts, executes or chdirs into lives where a sandboxed command can write:
//! the helper is started through a descriptor (no link in `$TMPDIR`), cordon's own executable
//! stays read-only when it lies inside a writable root, and an approved command runs in the
//! directory the question showed or not at all. Every check is made from outside.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::executor::{Executor, output};
use super::util::*;

/// Skips unless the mount view can be built (it is what keeps files inside a writable root
/// read-only).
/// A script that records, in `mark`, that it ran — outside every sandbox, since `mark` is
/// outside every writable root — then runs what it was asked to.
fn marker_script(mark: &Path) -> String {
    format!("#!/bin/sh\necho \"ran as $(id -u)\" >> {}\nexec \"$@\"\n", mark.display())
}

/// A sandboxed call that replaces every entry it finds under `$TMPDIR` with the marker script
/// (links, executables, sockets, directories' contents), and plants the names cordon once used
/// for its helper link.
fn replace_everything_script(mark: &Path) -> String {
    let script = marker_script(mark);
    format!(
        r#"cat > "$TMPDIR/.m" <<'EOF'
{script}EOF
chmod +x "$TMPDIR/.m"
find "$TMPDIR" -mindepth 1 ! -name .m ! -type d | while read -r f; do rm -f "$f"; cp "$TMPDIR/.m" "$f"; done
for d in "$TMPDIR"/cordon-executor-* "$TMPDIR/cordon-executor-planted"; do
  mkdir -p "$d"; cp "$TMPDIR/.m" "$d/codex-linux-sandbox"; done
echo replaced"#
    )
}

/// A copy of the binary at `dst`, made by `cp`: a copy written by this process would leave its
/// write descriptor, for a moment, in children other tests fork meanwhile, and exec'ing the
/// copy then fails with "Text file busy".
fn copy_cordon_to(dst: impl AsRef<Path>) {
    let status = Command::new("cp").arg(CORDON).arg(dst.as_ref()).status().unwrap();
    assert!(status.success());
}

/// `Seccomp: 2` and `NoNewPrivs: 1` in the output of `grep … /proc/self/status`: the
/// session ran under the sandbox.
fn assert_confined(text: &str) {
    let out = output(text);
    assert!(out.contains("NoNewPrivs:\t1"), "not confined: {text}");
    assert!(out.contains("Seccomp:\t2"), "not confined: {text}");
}

const STATUS: &str = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status";

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    entries
}

/// Every session kind (a terminal, pipes), with cordon's own binary as the helper and with a
/// configured helper executable, while a terminal session is alive (the server is then
/// multi-threaded, so every launch execs the helper): after a sandboxed call replaced
/// everything it could reach in `$TMPDIR`, later sessions are still sandboxed and the planted
/// script never ran.
#[test]
fn a_session_that_replaces_everything_in_its_tmpdir_cannot_take_over_later_sessions() {
    require_mount_view!();
    let helper_dir = scratch();
    let helper_copy = helper_dir.path().join("cordon-helper");
    copy_cordon_to(&helper_copy);
    let configured = helper_copy.to_str().unwrap().to_owned();
    for helper in [None, Some(configured.as_str())] {
        let tmp = scratch();
        let outside = scratch();
        let mark = outside.path().join("marker");
        let mut env = vec![("TMPDIR", tmp.path().to_str().unwrap())];
        if let Some(exe) = helper {
            env.push(("CORDON_LINUX_SANDBOX_EXE", exe));
        }
        let mut ex = Executor::start_with_env(&[], &env);
        let alive =
            ex.text("exec_command", json!({"cmd": "cat", "tty": true, "yield_time_ms": 500}));
        assert!(alive.contains("Process running with session ID"), "{alive}");
        // The server made nothing there to replace.
        assert_eq!(listing(tmp.path()), Vec::<PathBuf>::new(), "helper {helper:?}");

        let replaced = ex.text("exec_command", json!({"cmd": replace_everything_script(&mark)}));
        assert!(output(&replaced).contains("replaced"), "{replaced}");
        for tty in [true, false] {
            let text = ex.text("exec_command", json!({"cmd": STATUS, "tty": tty}));
            assert_confined(&text);
        }
        assert!(!mark.exists(), "a planted script ran: {:?}", std::fs::read_to_string(&mark));
    }
}

/// The same through the MCP server, driven by the Python MCP client.
#[test]
fn an_mcp_session_that_replaces_everything_in_its_tmpdir_cannot_take_over_later_sessions() {
    super::mcp::require_mcp_client!();
    skip_unless!(features().mount_view, "this kernel refuses the mount view to the test user");
    let dirs = super::mcp::Dirs::new();
    let tmp = scratch();
    let mark = dirs.outside.path().join("marker");
    let python = super::mcp::mcp_python().unwrap();
    let out = Command::new(python)
        .arg(helper_program("mcp_client.py"))
        .args(["takeover", "--cordon", CORDON, "--workdir"])
        .arg(dirs.work.path())
        .arg("--cmd")
        .arg(replace_everything_script(&mark))
        .env("CORDON_HOME", dirs.home.path())
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!("no report ({e}): {stdout}\n{}", String::from_utf8_lossy(&out.stderr))
        });
    assert!(report["attack"]["text"].as_str().unwrap().contains("replaced"), "{report}");
    for later in report["later"].as_array().unwrap() {
        let text = later["text"].as_str().unwrap();
        assert!(text.contains("NoNewPrivs:\t1") && text.contains("Seccomp:\t2"), "{report}");
    }
    assert!(!mark.exists(), "a planted script ran: {:?}", std::fs::read_to_string(&mark));
}

/// cordon installed inside the workspace (a copy in `bin/`, and a symlink to it in `links/` on
/// PATH): a sandboxed command can neither replace, remove nor rename it away, as root and as an
/// unprivileged user, and the next run is still cordon.
#[test]
fn cordon_installed_inside_the_workspace_cannot_be_replaced_by_a_sandboxed_command() {
    require_mount_view!();
    for user in USERS {
        let ws = scratch();
        let outside = scratch();
        let mark = outside.path().join("marker");
        std::fs::create_dir(ws.path().join("bin")).unwrap();
        std::fs::create_dir(ws.path().join("links")).unwrap();
        let installed = ws.path().join("bin/cordon");
        copy_cordon_to(&installed);
        std::os::unix::fs::symlink(&installed, ws.path().join("links/cordon")).unwrap();
        std::fs::write(ws.path().join("evil"), marker_script(&mark)).unwrap();
        if user == User::Nobody {
            chown_nobody(ws.path());
            chown_nobody(outside.path());
        }
        let original = std::fs::read(&installed).unwrap();
        let attack = "chmod +x evil; \
            cp evil e1; mv -f e1 bin/cordon; echo mv-file=$?; \
            rm -f bin/cordon; echo rm=$?; \
            cp evil e2; mv -f e2 links/cordon; echo mv-link=$?; \
            mv bin bin.old; echo mv-dir=$?; mv links links.old; echo mv-links=$?; \
            cat evil > bin/cordon; echo overwrite=$?";
        let path = format!("{}:/usr/bin:/bin", ws.path().join("links").display());
        let run: Run = command_as(user, "cordon")
            .env("PATH", &path)
            .env("HOME", outside.path())
            .args(["exec", "-a", "never", "-C", ws.path().to_str().unwrap(), "--", "sh", "-c"])
            .arg(attack)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into();
        for step in ["mv-file", "rm", "mv-link", "mv-dir", "mv-links", "overwrite"] {
            assert!(
                !run.stdout.contains(&format!("{step}=0")),
                "{user:?}: {step} succeeded\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
        assert_eq!(std::fs::read(&installed).unwrap(), original, "{user:?}: bin/cordon changed");
        assert!(ws.path().join("links/cordon").is_symlink());
        // The next run through PATH is cordon, and the planted script never ran.
        let next: Run = command_as(user, "cordon")
            .env("PATH", &path)
            .env("HOME", outside.path())
            .args(["exec", "-a", "never", "-C", ws.path().to_str().unwrap(), "--", "true"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into();
        next.assert_ok();
        assert!(!mark.exists(), "{user:?}: the planted script ran");
    }
}

/// Without the mount view nothing keeps a file inside a writable root read-only: a cordon
/// installed there is refused (exit 125, naming it) unless the user accepts best effort.
#[test]
fn without_the_mount_view_cordon_inside_a_writable_root_is_refused_unless_best_effort() {
    require_sandbox!(1);
    let ws = scratch();
    let home = scratch();
    let installed = ws.path().join("cordon");
    copy_cordon_to(&installed);
    let dir = ws.path().to_str().unwrap();
    let run: Run = Command::new(&installed)
        .args(["exec", "-a", "never", "--no-mount-view", "-C", dir, "--", "true"])
        .env("HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("cordon's own executable"), "{}", run.stderr);
    assert!(run.stderr.contains(&*installed.to_string_lossy()), "{}", run.stderr);
    let best_effort: Run = Command::new(&installed)
        .args(["exec", "-a", "never", "--no-mount-view", "--best-effort", "-C", dir, "--", "true"])
        .env("HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    best_effort.assert_ok();
    assert!(best_effort.stderr.contains("cordon's own executable"), "{}", best_effort.stderr);
}

/// The executor's working directory is swapped for a symbolic link while the question about
/// the command waits for an answer: approved, the command runs in the directory the question
/// showed (unsandboxed: entered through the descriptor held since) or not at all (sandboxed:
/// the helper refuses a directory that is not the one shown) — never where the link leads.
#[test]
fn an_approved_command_runs_in_the_directory_shown_or_not_at_all() {
    require_mount_view!();
    for mode in ["workspace-write", "danger-full-access"] {
        let mut ex = Executor::start(&["-a", "untrusted", "-s", mode]);
        let work = ex.work.path().to_path_buf();
        let elsewhere = scratch();
        std::fs::create_dir(work.join("sub")).unwrap();
        ex.send(&json!({"type": "call_tool", "requestId": "swap", "toolName": "exec_command",
            "arguments": {"cmd": "touch ran-here", "workdir": "sub"}}));
        let request = ex.wait_for(Duration::from_secs(20), |v| v["type"] == "approval_request");
        assert_eq!(request["cwd"], work.join("sub").to_str().unwrap(), "{request}");
        std::fs::rename(work.join("sub"), work.join("sub.shown")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), work.join("sub")).unwrap();
        ex.send(&json!({"type": "approval_response", "requestId": request["requestId"],
            "decision": "approved"}));
        let response = ex.wait_for(Duration::from_secs(30), |v| {
            v["requestId"] == "swap" && v["type"] == "call_tool_response"
        });
        assert!(
            !elsewhere.path().join("ran-here").exists(),
            "{mode}: ran where the link leads: {response}"
        );
        let ran_in_shown = work.join("sub.shown/ran-here").exists();
        match mode {
            "danger-full-access" => assert!(ran_in_shown, "{mode}: {response}"),
            _ => {
                assert!(!ran_in_shown, "{mode}: {response}");
                assert!(
                    response.to_string().contains("no longer the directory that was shown"),
                    "{mode}: {response}"
                );
            }
        }
    }
}

/// Traced from outside: while serving a terminal and a pipe session, none of cordon's
/// processes executes or connects to a path under the workspace or `$TMPDIR` (the helper is
/// started through a descriptor of cordon's own file).
#[test]
fn an_executor_executes_and_connects_to_nothing_under_a_writable_root() {
    require_sandbox!(1);
    skip_unless!(
        Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success()),
        "strace is not installed"
    );
    let work = scratch();
    let tmp = scratch();
    let home = scratch();
    let log = home.path().join("trace");
    let script = [
        json!({"type": "call_tool", "requestId": "1", "toolName": "exec_command",
            "arguments": {"cmd": "echo one", "tty": true}}),
        json!({"type": "call_tool", "requestId": "2", "toolName": "exec_command",
            "arguments": {"cmd": "echo two"}}),
    ]
    .map(|line| format!("{line}\n"))
    .concat();
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-s", "256", "-e", "trace=execve,execveat,connect", "-o"])
        .arg(&log)
        .arg(CORDON)
        .args(["executor", "-C", work.path().to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .env("CORDON_HOME", home.path().join("cordon-home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(script.as_bytes()).unwrap();
        // Both answers before EOF: read them first.
        let stdout = child.stdout.take().unwrap();
        let lines: Vec<String> = std::io::BufRead::lines(std::io::BufReader::new(stdout))
            .take(2)
            .map(Result::unwrap)
            .collect();
        assert!(lines.iter().any(|l| l.contains("one")), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("two")), "{lines:?}");
    }
    let _ = child.wait();
    let trace = std::fs::read_to_string(&log).unwrap();
    let roots = [work.path(), tmp.path()];
    let offending: Vec<&str> = trace
        .lines()
        .filter(|line| roots.iter().any(|root| line.contains(&*root.to_string_lossy())))
        .filter(|line| line.contains("execve") || line.contains("connect("))
        // The command line itself carries the workspace (`--sandbox-policy-cwd`): only the
        // program path (the first argument) counts.
        .filter(|line| {
            let program = line.split('"').nth(1).unwrap_or("");
            line.contains("connect(")
                || roots.iter().any(|root| program.starts_with(&*root.to_string_lossy()))
        })
        .collect();
    assert!(offending.is_empty(), "{offending:#?}");
    assert!(trace.contains("/proc/self/fd/") || trace.contains("execve(\"/bin/bash\""), "{trace}");
}

/// The workspace lies inside another writable root (`$TMPDIR` here): a sandboxed command can
/// neither rename it away nor leave a link in its place that the next run would take as its
/// root.
#[test]
fn a_workspace_inside_another_root_cannot_be_swapped_for_a_link() {
    require_mount_view!();
    let tmp = scratch();
    let victim = scratch();
    let ws = tmp.path().join("proj");
    std::fs::create_dir(&ws).unwrap();
    let run = |script: &str| -> Run {
        Command::new(CORDON)
            .args(["exec", "-a", "never", "-C", ws.to_str().unwrap(), "--", "sh", "-c", script])
            .env("TMPDIR", tmp.path())
            .env("HOME", victim.path().join("home"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into()
    };
    let swap = format!(
        "cd .. && mv proj proj.old && ln -s {} proj; echo swap=$?",
        victim.path().display()
    );
    let swapped = run(&swap);
    assert!(!swapped.stdout.contains("swap=0"), "{}\n{}", swapped.stdout, swapped.stderr);
    assert!(ws.is_dir() && !ws.is_symlink());
    run(&format!("touch {}/pwned", victim.path().display()));
    assert!(!victim.path().join("pwned").exists());
}

/// Every symbolic link on the way to the cordon that was run stays: a link chain
/// (`lbin/cordon -> ../links/cordon -> ../tools/bin/cordon`) and a linked directory on PATH
/// (`home/bin -> ../tools/bin`) cannot be re-pointed from inside.
#[test]
fn the_links_on_the_way_to_cordon_cannot_be_re_pointed() {
    require_mount_view!();
    let ws = scratch();
    let home = scratch();
    let root = ws.path();
    for dir in ["tools/bin", "links", "lbin", "home"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    copy_cordon_to(root.join("tools/bin/cordon"));
    std::os::unix::fs::symlink("../tools/bin/cordon", root.join("links/cordon")).unwrap();
    std::os::unix::fs::symlink("../links/cordon", root.join("lbin/cordon")).unwrap();
    std::os::unix::fs::symlink("../tools/bin", root.join("home/bin")).unwrap();
    let cases = [
        (
            root.join("lbin/cordon"),
            "ln -sfn /bin/false links/cordon; echo links=$?; ln -sfn /bin/false lbin/cordon; \
             echo lbin=$?",
        ),
        (root.join("home/bin/cordon"), "rm home/bin; echo bin=$?"),
    ];
    for (invoked, attack) in cases {
        let run: Run = Command::new(&invoked)
            .args(["exec", "-a", "never", "-C", root.to_str().unwrap(), "--", "sh", "-c", attack])
            .env("HOME", home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into();
        for step in ["links=", "lbin=", "bin="] {
            assert!(
                !run.stdout.contains(&format!("{step}0")),
                "{invoked:?}: {step}\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
    assert_eq!(
        std::fs::read_link(root.join("links/cordon")).unwrap(),
        Path::new("../tools/bin/cordon")
    );
    assert!(root.join("home/bin").is_symlink());
}
