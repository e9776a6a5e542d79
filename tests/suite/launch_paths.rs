//! The two ways cordon starts its Linux helper: in its own process or forked child
//! (`cordon sandbox`, `cordon exec`: one `execve` fewer), or by exec'ing the helper binary (a
//! configured `linux_sandbox_exe`, `CORDON_LINUX_SANDBOX_EXE`). The command must not be able to
//! tell them apart, and both must confine it.

use std::process::Command;

use super::util::{
    CORDON, Run, USERS, User, cordon_command, cordon_for, features, require_sandbox, scratch,
    skip_unless,
};

/// How the helper starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    InProcess,
    ExecHelper,
}

const STARTS: [Start; 2] = [Start::InProcess, Start::ExecHelper];

/// `cordon <args>` as `user`, with the helper started as `start` says.
fn cordon_via(start: Start, user: User, args: &[&str]) -> Command {
    let mut command = cordon_command(user, args);
    if start == Start::ExecHelper {
        command.env("CORDON_LINUX_SANDBOX_EXE", cordon_for(user));
    }
    command
}

fn run(command: &mut Command) -> Run {
    command.output().unwrap().into()
}

/// What a command can see of its own process: descriptors, signal dispositions and mask,
/// capabilities, no_new_privs, seccomp — and its environment, minus the variable that picks the
/// start.
fn process_state(start: Start, user: User, front: &[&str], dir: &str) -> (String, String, String) {
    let command = |argv: &[&str]| {
        let mut args: Vec<&str> = front.to_vec();
        args.extend_from_slice(&["-C", dir, "--"]);
        args.extend_from_slice(argv);
        let out = run(&mut cordon_via(start, user, &args));
        out.assert_ok();
        out.stdout
    };
    let status = command(&["cat", "/proc/self/status"])
        .lines()
        // SigQ counts the queued signals of every process of the user: not this process's.
        .filter(|l| {
            ["Sig", "Cap", "NoNewPrivs", "Seccomp", "ShdPnd"].iter().any(|k| l.starts_with(k))
                && !l.starts_with("SigQ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let fds = command(&["ls", "/proc/self/fd"]);
    let mut env: Vec<String> = command(&["env"])
        .lines()
        .filter(|l| !l.starts_with("CORDON_LINUX_SANDBOX_EXE="))
        .map(str::to_owned)
        .collect();
    env.sort();
    (status, fds, env.join("\n"))
}

#[test]
fn the_command_sees_the_same_process_whichever_way_the_helper_starts() {
    require_sandbox!(1);
    let dir = scratch();
    let dir = dir.path().to_str().unwrap();
    for user in USERS {
        for front in [&["exec", "-a", "never"][..], &["sandbox", "linux", "--full-auto"][..]] {
            let in_process = process_state(Start::InProcess, user, front, dir);
            let exec_helper = process_state(Start::ExecHelper, user, front, dir);
            pretty_assertions::assert_eq!(
                in_process,
                exec_helper,
                "{user:?} `cordon {}`: in process vs exec'd helper",
                front.join(" ")
            );
            // `cordon exec`: only stdio and `ls`'s own listing, nothing of cordon's or of its
            // caller's (`cordon sandbox` passes its caller's open descriptors on, as exec does).
            if front[0] == "exec" {
                assert_eq!(
                    in_process.1.split_whitespace().collect::<Vec<_>>(),
                    ["0", "1", "2", "3"],
                    "{user:?}"
                );
            }
        }
    }
}

#[test]
fn the_command_is_looked_up_in_the_path_its_environment_policy_gives_it() {
    // In process the helper does not take the command's environment as its own; it searches
    // the command's `PATH` all the same, and without one the default search path, never
    // cordon's own `PATH`.
    use std::os::unix::fs::PermissionsExt;
    require_sandbox!(1);
    let work = scratch();
    let given = scratch();
    let own = scratch();
    for (dir, tool) in [(&given, "given-tool"), (&own, "own-tool")] {
        let path = dir.path().join(tool);
        std::fs::write(&path, format!("#!/bin/sh\necho ran-{tool}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let own_path = format!("{}:/usr/bin:/bin", own.path().display());
    let set_path =
        format!("shell_environment_policy.set.PATH={}:/usr/bin:/bin", given.path().display());
    for user in USERS {
        for start in STARTS {
            let exec = |setting: &str, tool: &str| {
                let args = [
                    "exec",
                    "-a",
                    "never",
                    "-C",
                    work.path().to_str().unwrap(),
                    "-c",
                    setting,
                    "--",
                    tool,
                ];
                run(cordon_via(start, user, &args).env("PATH", &own_path))
            };
            let out = exec(&set_path, "given-tool");
            assert_eq!(out.stdout.trim(), "ran-given-tool", "{user:?} {start:?}: {}", out.stderr);
            let out = exec(&set_path, "own-tool");
            assert_eq!(out.code, Some(127), "{user:?} {start:?}: cordon's PATH was searched");
            let out = exec("shell_environment_policy.inherit=none", "own-tool");
            assert_eq!(out.code, Some(127), "{user:?} {start:?}: cordon's PATH was searched");
            let out = exec("shell_environment_policy.inherit=none", "true");
            assert_eq!(out.code, Some(0), "{user:?} {start:?}: {}", out.stderr);
        }
    }
}

#[test]
fn both_ways_confine_the_command() {
    require_sandbox!(1);
    let work = scratch();
    let outside = scratch();
    for user in USERS {
        for start in STARTS {
            for front in [&["exec", "-a", "never"][..], &["sandbox", "linux", "--full-auto"][..]] {
                let target = outside.path().join(format!("{user:?}-{start:?}-{}", front[0]));
                let mut args: Vec<&str> = front.to_vec();
                let script = format!("echo x > {}; echo done", target.display());
                args.extend_from_slice(&["-C", work.path().to_str().unwrap(), "--"]);
                args.extend_from_slice(&["sh", "-c", &script]);
                let out = run(&mut cordon_via(start, user, &args));
                assert!(out.stdout.contains("done"), "{user:?} {start:?}: {}", out.stderr);
                assert!(
                    !target.exists(),
                    "{user:?} {start:?} `cordon {}` wrote outside its workspace",
                    front[0]
                );
            }
        }
    }
}

#[test]
fn in_process_means_the_helper_binary_is_not_exec_ed_again() {
    require_sandbox!(1);
    skip_unless!(
        features().mount_view,
        "needs the mount view (PID namespace), in which the command's pid 1 is the helper"
    );
    let dir = scratch();
    let dir = dir.path().to_str().unwrap();
    for front in [&["exec", "-a", "never"][..], &["sandbox", "linux", "--full-auto"][..]] {
        let cmdline = |start: Start| {
            let mut args: Vec<&str> = front.to_vec();
            args.extend_from_slice(&["-C", dir, "--", "cat", "/proc/1/cmdline"]);
            let out = run(&mut cordon_via(start, User::Root, &args));
            out.assert_ok();
            out.stdout.split('\0').next().unwrap_or_default().to_owned()
        };
        // pid 1 of the command's namespace is the helper's supervisor: a fork of cordon itself
        // (argv[0] is cordon's), or of the exec'd helper (argv[0] `codex-linux-sandbox`).
        assert_eq!(cmdline(Start::InProcess), CORDON, "`cordon {}`", front[0]);
        assert_eq!(cmdline(Start::ExecHelper), "codex-linux-sandbox", "`cordon {}`", front[0]);
    }
}

#[test]
fn cordon_sandbox_passes_inherited_descriptors_through_as_an_exec_would() {
    require_sandbox!(1);
    let dir = scratch();
    let file = dir.path().join("passed");
    std::fs::write(&file, "through fd 5\n").unwrap();
    for start in STARTS {
        let command = cordon_via(
            start,
            User::Root,
            &["sandbox", "linux", "--full-auto", "-C", dir.path().to_str().unwrap(), "--"],
        );
        // `sh -c 'cat <&5' 5<file`, done by a shell around cordon.
        let program = command.get_program().to_owned();
        let args: Vec<String> =
            command.get_args().map(|a| a.to_str().unwrap().to_owned()).collect();
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(r#"f=$1; shift; exec "$@" sh -c 'cat <&5' 5<"$f""#)
            .arg("sh")
            .arg(&file)
            .arg(program)
            .args(args)
            .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))));
        let out = run(&mut shell);
        out.assert_ok();
        assert_eq!(out.stdout, "through fd 5\n", "{start:?}");
    }
}

/// The supervisor starts the command in a child that borrows its memory until the exec
/// (`clone(CLONE_VM | CLONE_VFORK)`). What `execvp` does there must be what it would do in a
/// forked child: a `PATH` lookup, a script without `#!` run by `/bin/sh` (whose argv the
/// C library builds on the child's stack: a long one must fit), 127 and 126 with the reason —
/// in the PID namespace and under the subreaper alike.
#[test]
fn the_command_starts_as_execvp_would_in_either_containment() {
    require_sandbox!(1);
    let dir = scratch();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let script = bin.join("no-shebang");
    std::fs::write(&script, "echo $#\nfor last; do :; done\necho \"$last\"\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let not_executable = dir.path().join("not-executable");
    std::fs::write(&not_executable, "echo never\n").unwrap();
    let policy = super::util::only_root_policy(dir.path(), false);
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let many: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    // Without the mount view a kernel before Landlock ABI 3 cannot stop truncation outside the
    // roots: --best-effort accepts that (what is tested here is how the command starts).
    let without_mount_view = ["--no-mount-view", "--best-effort"];
    for containment in [&[][..], &["--no-pid-namespace"][..], &without_mount_view[..]] {
        let run_with = |argv: &[&str]| -> Run {
            let mut command = super::util::helper_cmd(&policy, dir.path(), containment, argv);
            command.env("PATH", &path).output().unwrap().into()
        };
        let mut argv = vec!["no-shebang"];
        argv.extend(many.iter().map(String::as_str));
        let out = run_with(&argv);
        out.assert_ok();
        assert_eq!(out.stdout, "100000\n99999\n", "{containment:?}");

        let missing = run_with(&["no-such-command-here"]);
        assert_eq!(missing.code, Some(127), "{containment:?}: {}", missing.stderr);
        assert!(
            missing.stderr.contains("cannot run \"no-such-command-here\": No such file"),
            "{containment:?}: {}",
            missing.stderr
        );
        let refused = run_with(&[not_executable.to_str().unwrap()]);
        assert_eq!(refused.code, Some(126), "{containment:?}: {}", refused.stderr);
        assert!(
            refused.stderr.contains("Permission denied"),
            "{containment:?}: {}",
            refused.stderr
        );
    }
}

/// `cordon executor` run over pipes, as a harness runs it, has no thread for its own stdin and
/// stdout, so while it runs only pipe sessions the helper of each starts in the forked child,
/// as `cordon exec`'s does (pid 1 of the command's namespace is then a fork of the executor).
/// Beside a live PTY session (whose reader threads make the executor threaded) the helper is
/// exec'd instead. The command is confined the same either way.
#[test]
fn executor_pipe_sessions_start_the_helper_in_process_and_exec_it_beside_a_terminal() {
    require_sandbox!(1);
    skip_unless!(
        features().mount_view,
        "needs the mount view (PID namespace), in which the command's pid 1 is the helper"
    );
    let outside = scratch();
    let mut executor = super::executor::Executor::start(&[]);
    let executor_pid = executor.child.id();
    let probe = |executor: &mut super::executor::Executor, name: &str| -> (String, String) {
        let target = outside.path().join(name);
        let script = format!(
            "tr '\\0' ' ' < /proc/1/cmdline; echo; grep -E '^(Seccomp|NoNewPrivs|CapEff):' \
             /proc/self/status; echo x > {} || echo refused",
            target.display()
        );
        let text =
            executor.text("exec_command", serde_json::json!({"cmd": script, "login": false}));
        assert!(!target.exists(), "{name}: wrote outside the workspace: {text}");
        let output = text.split_once("Output:\n").map(|(_, o)| o.to_owned()).unwrap_or(text);
        let (pid1, rest) = output.split_once('\n').unwrap_or((&output, ""));
        let confinement: Vec<&str> = rest
            .lines()
            .filter(|l| ["Seccomp:", "NoNewPrivs:", "CapEff:"].iter().any(|k| l.starts_with(k)))
            .collect();
        (pid1.to_owned(), confinement.join("\n"))
    };
    let threads = || std::fs::read_dir(format!("/proc/{executor_pid}/task")).unwrap().count();

    let (in_process, confined_in_process) = probe(&mut executor, "in-process");
    assert!(in_process.starts_with(&format!("{CORDON} executor")), "pid 1: {in_process:?}");
    assert_eq!(threads(), 1, "the executor started a thread for pipe sessions");

    // A PTY session that stays: its reader and waiter are threads.
    let terminal = executor
        .text("exec_command", serde_json::json!({"cmd": "cat", "tty": true, "yield_time_ms": 300}));
    assert!(terminal.contains("Process running with session ID"), "{terminal}");
    let (exec_helper, confined_exec_helper) = probe(&mut executor, "exec-helper");
    // The executor execs the helper through a descriptor of its own file, `argv[0]` set.
    let argv0 = exec_helper.split(' ').next().unwrap_or_default();
    assert_eq!(argv0, "codex-linux-sandbox", "pid 1: {exec_helper:?}");
    pretty_assertions::assert_eq!(confined_in_process, confined_exec_helper);
    assert!(confined_in_process.contains("NoNewPrivs:\t1"), "{confined_in_process}");
}

/// The executor keeps itself single-threaded only by reopening its stdin and stdout pipes
/// through `/proc/self/fd`, which takes permission on the pipe: true for a harness of the same
/// user, which is how an agent starts it — so as root and as uid 65534, a harness of that user
/// gets an executor with one thread whose command runs confined, with pid 1 of its namespace (where
/// there is one) a fork of the executor.
#[test]
fn a_harness_of_the_same_user_gets_the_in_process_start_as_root_and_unprivileged() {
    require_sandbox!(1);
    const HARNESS: &str = r#"
import json, os, subprocess, sys
cordon, work, outside = sys.argv[1:4]
p = subprocess.Popen([cordon, "executor", "-C", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
cmd = "tr '\\0' ' ' < /proc/1/cmdline; echo; echo x > %s || echo refused" % outside
request = {"type": "call_tool", "requestId": "1", "toolName": "exec_command",
           "arguments": {"cmd": cmd, "login": False}}
p.stdin.write((json.dumps(request) + "\n").encode()); p.stdin.flush()
print(json.loads(p.stdout.readline())["outcome"]["content"][0]["text"])
print("threads", len(os.listdir("/proc/%d/task" % p.pid)))
request = {"type": "call_tool", "requestId": "2", "toolName": "exec_command",
           "arguments": {"cmd": "sleep 5", "login": False, "yield_time_ms": 250}}
p.stdin.write((json.dumps(request) + "\n").encode()); p.stdin.flush()
p.stdout.readline()
for child in open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split():
    for line in open("/proc/%s/status" % child):
        if line.startswith("NSpid:"):
            print("child NSpid", " ".join(line.split()[1:]))
p.stdin.close(); p.wait()
"#;
    for user in USERS {
        let home = scratch();
        let work = scratch();
        let outside = scratch();
        super::util::chown_nobody(home.path());
        super::util::chown_nobody(work.path());
        let target = outside.path().join("escaped");
        let cordon = cordon_for(user);
        let mut harness = super::util::command_as(user, super::util::python());
        harness
            .args(["-c", HARNESS])
            .arg(&cordon)
            .arg(work.path())
            .arg(&target)
            .env("CORDON_HOME", home.path())
            .env("HOME", home.path());
        let out = run(&mut harness);
        out.assert_ok();
        assert!(out.stdout.contains("threads 1\n"), "{user:?}: {}", out.stdout);
        assert!(out.stdout.contains("Process exited with code 0"), "{user:?}: {}", out.stdout);
        assert!(!target.exists(), "{user:?}: the command wrote outside its workspace");
        let pid1 = out.stdout.split_once("Output:\n").map_or("", |(_, o)| o);
        let pid1 = pid1.lines().next().unwrap_or_default();
        if pid1.contains("cordon") || pid1.contains("codex-linux-sandbox") {
            let executor = format!("{} executor", cordon.display());
            assert!(pid1.starts_with(&executor), "{user:?}: pid 1 is {pid1:?}");
            // The executor's own child is that pid 1: cloned into the namespace, no helper
            // between them.
            let nspid = out.stdout.lines().find_map(|l| l.strip_prefix("child NSpid "));
            let levels: Vec<&str> = nspid.unwrap_or_default().split(' ').collect();
            assert!(levels.len() == 2 && levels[1] == "1", "{user:?}: {}", out.stdout);
        } else {
            // No PID namespace for this user here (no user namespaces): the subreaper.
            assert!(!features().mount_view || user == User::Nobody, "{user:?}: pid 1 {pid1:?}");
        }
    }
}
