//! Processes: ptrace, memory access, io_uring, terminal injection and signals are refused;
//! ordinary programs, pipes, terminals and exit statuses work.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::util::*;

/// A process outside the sandbox for the sandbox to attack; killed on drop.
struct Victim(std::process::Child);

impl Victim {
    fn spawn() -> Self {
        Victim(Command::new("sleep").arg("60").env("VICTIM_SECRET", "hunter2").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(target_os = "linux")]
#[test]
fn ptrace_process_vm_readv_io_uring_and_tiocsti_are_refused_with_eperm() {
    require_sandbox!(1);
    for user in USERS {
        let victim = Victim::spawn();
        let dir = scratch();
        let pid = victim.pid();
        let cases = [
            ("ptrace", format!("libc.syscall({}, 16, {pid}, 0, 0)", libc::SYS_ptrace)),
            (
                "process_vm_readv",
                format!("libc.syscall({}, {pid}, 0, 0, 0, 0, 0)", libc::SYS_process_vm_readv),
            ),
            (
                "io_uring_setup",
                format!(
                    "libc.syscall({}, 1, ctypes.create_string_buffer(120))",
                    libc::SYS_io_uring_setup
                ),
            ),
            ("tiocsti", format!("libc.ioctl(0, {}, ctypes.c_char_p(b'x'))", libc::TIOCSTI)),
            (
                "tiocsti_high_bit",
                format!(
                    "libc.syscall({}, 0, {} | (1 << 32), ctypes.c_char_p(b'x'))",
                    libc::SYS_ioctl,
                    libc::TIOCSTI
                ),
            ),
            ("tioclinux", format!("libc.ioctl(0, {}, ctypes.c_char_p(b'x'))", libc::TIOCLINUX)),
        ];
        for (name, call) in cases {
            let run = python_sandboxed(user, &[], dir.path(), &syscall_probe(&call));
            assert_eperm(&run, &format!("{user:?} {name}"));
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn status_shows_no_new_privs_and_a_seccomp_filter() {
    require_sandbox!(1);
    let dir = scratch();
    for user in USERS {
        let run =
            sandbox_sh(user, &[], dir.path(), "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status");
        run.assert_ok();
        assert!(run.stdout.contains("NoNewPrivs:\t1"), "{user:?}: {}", run.stdout);
        assert!(run.stdout.contains("Seccomp:\t2"), "{user:?}: {}", run.stdout);
    }
}

#[test]
fn a_signal_to_a_process_outside_the_sandbox_fails() {
    require_sandbox!(1);
    if cfg!(target_os = "linux") && features().landlock_abi < 6 {
        // Signal scoping is Landlock ABI 6: on older kernels the gap must be reported instead.
        let v: serde_json::Value =
            serde_json::from_str(&cordon(&["doctor", "--json"]).stdout).unwrap();
        assert!(v["modes"]["read-only"]["not_enforced"].to_string().contains("signals"));
        return;
    }
    for user in USERS {
        let mut victim = match user {
            User::Root => Victim::spawn(),
            // Same uid as the sandboxed command, so only the sandbox stands in the way.
            User::Nobody => Victim(command_as(User::Nobody, "sleep").arg("60").spawn().unwrap()),
        };
        let dir = scratch();
        let run =
            sandbox_sh(user, &[], dir.path(), &format!("kill -TERM {}; echo rc=$?", victim.pid()));
        assert!(!run.stdout.contains("rc=0"), "{user:?}: {}", run.stdout);
        std::thread::sleep(Duration::from_millis(100));
        assert!(victim.alive(), "{user:?}: the victim was killed");
    }
}

#[test]
fn ordinary_programs_pipes_children_and_exit_codes_work() {
    require_sandbox!(1);
    let dir = scratch();
    let run = sandbox_sh(
        User::Root,
        &["--full-auto"],
        dir.path(),
        &format!(
            "head -1 /etc/passwd | wc -l | tr -d ' '; {} -c 'print(6*7)'; git --version >/dev/null && echo git-ok; (sh -c 'exit 3'); echo child=$?; echo to-stderr >&2; exit 7",
            python()
        ),
    );
    assert_eq!(run.code, Some(7));
    assert_eq!(run.stdout, "1\n42\ngit-ok\nchild=3\n");
    assert_eq!(run.stderr, "to-stderr\n");
}

#[test]
fn stdin_is_passed_through() {
    require_sandbox!(1);
    let dir = scratch();
    let mut child = Command::new(CORDON)
        .args(["sandbox", PLATFORM, "-C", dir.path().to_str().unwrap(), "--", "tr", "a-z", "A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "HELLO\n");
}

#[test]
fn sigterm_to_the_helper_pid_reaches_the_command() {
    require_sandbox!(1);
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch();
    let mut child = Command::new(CORDON)
        .args(["sandbox", PLATFORM, "-C", dir.path().to_str().unwrap(), "--", "sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The helper pid is the helper, outside the command's PID namespace (sandbox-linux/src/containment/): it
    // forwards the signal and dies of the same signal as the command.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

/// Linux: util-linux's script(1); the macOS PTY cases are in `macos.rs`.
#[cfg(target_os = "linux")]
#[test]
fn the_inherited_terminal_and_new_ptys_work() {
    require_sandbox!(1);
    skip_unless!(
        Command::new("script").arg("--version").output().is_ok(),
        "needs script(1) from util-linux"
    );
    let dir = scratch();
    for user in USERS {
        // script(1) gives the sandbox a real terminal; inside: terminal ioctls on it, /dev/tty,
        // and brand-new PTYs from /dev/ptmx.
        let inner = format!(
            "{} sandbox linux -C {} -- sh -c \"stty size >/dev/null && echo stty-ok; echo tty-ok > /dev/tty; {} -c 'import pty; pty.openpty(); print(\\\"pty-ok\\\")'; script -qc true /dev/null && echo script-ok\"",
            match user {
                User::Root => CORDON.to_owned(),
                User::Nobody => "CORDON_NOBODY".to_owned(),
            },
            dir.path().display(),
            python()
        );
        let inner = match user {
            User::Root => inner,
            User::Nobody => inner.replace("CORDON_NOBODY", &nobody_binary().display().to_string()),
        };
        let mut cmd = command_as(user, "script");
        let out = cmd.args(["-qec", &inner, "/dev/null"]).stdin(Stdio::null()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        for marker in ["stty-ok", "tty-ok", "pty-ok", "script-ok"] {
            assert!(
                stdout.contains(marker),
                "{user:?} {marker}: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// `cordon exec` on a terminal: the command reads it and Ctrl-C reaches it.
/// A sandboxed command handed the user's terminal cannot push keystrokes into it
/// (TIOCSTI on stdin or on /dev/tty) for the shell that reads it after cordon exits. The
/// unsandboxed control run shows, as root, that the probe would see an injection.
#[test]
fn a_sandboxed_command_cannot_inject_keystrokes_into_the_terminal_it_was_given() {
    require_sandbox!(1);
    let inject = include_str!("../helpers/tiocsti_probe.py");
    let dir = scratch();
    let run = |user: User, mode: &str| {
        let script = format!(
            "{cordon} exec -a never -s {mode} -- {py} -c '{code}'; echo status=$?; read line; echo \"got:[$line]\"",
            cordon = cordon_for(user).display(),
            py = python(),
            code = inject.replace('\'', "'\\''"),
        );
        on_a_terminal_as(user, &script, dir.path())
    };
    for user in USERS {
        let transcript = run(user, "workspace-write");
        assert!(transcript.contains("got:[typed]"), "{user:?}: {transcript}");
        assert!(!transcript.contains("injected via"), "{user:?}: {transcript}");
        assert!(!transcript.contains("got:[echo INJECTED]"), "{user:?}: {transcript}");
    }
    if is_root() {
        let control = run(User::Root, "danger-full-access");
        assert!(
            control.contains("got:[echo INJECTED]"),
            "the probe cannot see an injection: {control}"
        );
    }
}

/// The transcript of `/bin/sh -c script`, run as `user` on a new pseudo-terminal that is its
/// controlling terminal (as a user's shell is), with `typed\n` typed once it shows `status=`;
/// `$HOME` and `$CORDON_HOME` a fresh directory per user under `dir`.
fn on_a_terminal_as(user: User, script: &str, dir: &std::path::Path) -> String {
    let mut argv: Vec<String> = Vec::new();
    if user == User::Nobody {
        argv.extend(
            ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                .map(String::from),
        );
    }
    argv.extend(["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()]);
    let home = dir.join(format!("home-{user:?}"));
    std::fs::create_dir_all(&home).unwrap();
    chown_nobody(&home);
    let out = Command::new(python())
        .arg(helper_program("pty_type.py"))
        .arg("typed\\n")
        .args(&argv)
        .current_dir(dir)
        .env("CORDON_HOME", &home)
        // HOME inside a writable root would be refused: a missing one stands for the real home.
        .env("HOME", dir.join("no-home"))
        .env("PTY_TYPE_AFTER", "status=")
        .env("PTY_OWNER", if user == User::Nobody { "65534" } else { "" })
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A command whose stdin is not a terminal gets no controlling terminal (a session
/// of its own), so it cannot open `/dev/tty` to write escape sequences to the terminal cordon
/// was started from — a title, a hyperlink, an OSC 52 clipboard write the user would paste —
/// nor push input into it. Through `cordon exec` with stdin from /dev/null or a pipe, and
/// through an executor pipe session; sandboxed and unsandboxed alike. Sandboxed, not by the
/// terminal's name either (`/dev/pts/N`: the mount view's own devpts). The controls — the
/// probe run directly, and by name without the mount view — show the terminal would have
/// received it.
#[test]
fn a_command_without_the_terminal_on_stdin_cannot_reach_cordons_terminal() {
    require_sandbox!(1);
    // The marker is put together at run time, so only a real write puts it on the screen.
    // With `by-path`, also every terminal in /dev/pts opened by its name (sandboxed runs: the
    // mount view gives a command without a terminal a devpts of its own).
    let probe = r#"
import fcntl, os, sys, termios
marker = b"\x1b]0;" + b"ESC" + b"APED\x07" + b"ESC" + b"APED\n"
try:
    fd = os.open("/dev/tty", os.O_RDWR)
    os.write(fd, marker)
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")
    print("reached the terminal")
except OSError as e:
    print("refused", e.errno)
if sys.argv[1:] == ["by-path"] and os.path.isdir("/dev/pts"):  # Linux
    for name in os.listdir("/dev/pts"):
        if name == "ptmx":  # makes a new terminal; reaches no one's
            continue
        try:
            fd = os.open("/dev/pts/" + name, os.O_WRONLY | os.O_NOCTTY)
            os.write(fd, marker)
            print("reached /dev/pts/" + name)
        except OSError:
            pass
"#;
    let dir = scratch();
    let probe_file = dir.path().join("probe.py");
    std::fs::write(&probe_file, probe).unwrap();
    let py = python();
    let probe_cmd = format!("{py} {}", probe_file.display());
    let request = serde_json::json!({"type": "call_tool", "requestId": "1",
        "toolName": "exec_command", "arguments": {"cmd": format!("{probe_cmd} by-path"),
        "login": false}});
    for user in USERS {
        let cordon = cordon_for(user);
        let cordon = cordon.display();
        let out = dir.path().join(format!("out-{user:?}"));
        let out = out.display();
        let runs = [
            format!("{cordon} exec -a never -- {probe_cmd} by-path < /dev/null"),
            format!("echo | {cordon} exec -a never -- {probe_cmd} by-path"),
            format!("{cordon} exec -a never -s danger-full-access -- {probe_cmd} < /dev/null"),
            // End of input shuts the executor down: keep it open while the call runs (longer
            // on a slow machine: an emulated kernel takes seconds to start python).
            format!("(echo '{request}'; sleep {}) | {cordon} executor", 2 * time_scale()),
            // `cordon sandbox` execs in place, in the shell's session: none of its streams is
            // the terminal, which stays the shell's controlling terminal.
            format!(
                "{cordon} sandbox linux -- {probe_cmd} by-path < /dev/null > {out} 2>&1; cat {out}"
            ),
            // Without the mount view the host's devpts stays: its terminals get no read rights.
            format!(
                "{cordon} exec -a never -s read-only --no-mount-view --best-effort -- {probe_cmd} by-path < /dev/null"
            ),
            // Nor, under a subreaper in the shell's session, `/dev/tty` (EACCES).
            format!(
                "{cordon} sandbox linux -s read-only --no-mount-view --best-effort -- {probe_cmd} by-path < /dev/null > {out} 2>&1; cat {out}"
            ),
        ];
        for run in runs {
            let transcript = on_a_terminal_as(user, &format!("{run}; echo status=$?"), dir.path());
            assert!(!transcript.contains("ESCAPED"), "{user:?} {run}:\n{transcript}");
            assert!(!transcript.contains("reached"), "{user:?} {run}:\n{transcript}");
            let refused = transcript.contains("refused 6") || transcript.contains("refused 13");
            assert!(refused, "{user:?} {run}:\n{transcript}");
        }
        let control = on_a_terminal_as(user, &format!("{probe_cmd} < /dev/null"), dir.path());
        assert!(control.contains("ESCAPED"), "{user:?}: the probe cannot see a write: {control}");
        // And by path, from a session of its own (no `/dev/tty`): the terminal is the user's.
        let run = format!("setsid -w {probe_cmd} by-path < /dev/null");
        let control = on_a_terminal_as(user, &format!("{run}; echo status=$?"), dir.path());
        assert!(control.contains("reached /dev/pts/"), "{user:?}: by path: {control}");
    }
}

/// Handed a terminal, a command reaches that terminal — by its descriptors, by `/dev/tty`,
/// and by the name `tty` prints — and no other: another terminal of the same user (one the test
/// holds open, as the user's other shell would) opens neither to read what is typed there nor to
/// write to it. New terminals the command makes still work. Through `cordon exec` and
/// `cordon sandbox`, as root and as an unprivileged user who owns the other terminal.
#[test]
fn a_command_handed_a_terminal_reaches_it_and_no_other_terminal() {
    require_sandbox!(1);
    // The markers are put together at run time, so only a real write shows them.
    let probe = r#"
import os, pty, sys
other = sys.argv[1]
for mode, label in ((os.O_RDONLY, "read"), (os.O_WRONLY, "write")):
    try:
        fd = os.open(other, mode | os.O_NOCTTY | os.O_NONBLOCK)
        if mode == os.O_WRONLY:
            os.write(fd, b"OTHER" + b"REACHED\n")
        print(f"opened the other terminal to {label}", flush=True)
    except OSError as e:
        print(f"refused the other terminal to {label} {e.errno}", flush=True)
try:
    name = os.ttyname(0)
    with open(name, "w") as t:
        t.write("BY" + "NAME " + name + "\n")
except OSError as e:
    print(f"no name {e.errno}", flush=True)
with open("/dev/tty", "w") as t:
    t.write("VIA" + "TTY\n")
try:
    leader, follower = pty.openpty()
    print("new terminal", os.ttyname(follower).startswith("/dev/pts/"))
except OSError as e:
    print("no new terminal", e.errno)
"#;
    let dir = scratch();
    let probe_file = dir.path().join("probe.py");
    std::fs::write(&probe_file, probe).unwrap();
    let py = python();
    use std::os::unix::fs::PermissionsExt;
    // A working directory in `/dev` keeps the host's `/dev`.
    let in_dev = tempfile::Builder::new().prefix("cordon-e2e-").tempdir_in("/dev/shm").unwrap();
    std::fs::set_permissions(in_dev.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let in_dev_arg = in_dev.path().display();
    for user in USERS {
        let pair = nix::pty::openpty(None, None).unwrap();
        // What the user typed there and has not read yet (not echoed: the terminal's output
        // stays empty unless something writes to it).
        use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
        let mut settings = tcgetattr(&pair.slave).unwrap();
        settings.local_flags.remove(LocalFlags::ECHO);
        tcsetattr(&pair.slave, SetArg::TCSANOW, &settings).unwrap();
        nix::unistd::write(&pair.master, b"typed-there\n").unwrap();
        let other = nix::unistd::ttyname(&pair.slave).unwrap();
        if user == User::Nobody {
            nix::unistd::fchown(&pair.slave, Some(nix::unistd::Uid::from_raw(65534)), None)
                .unwrap();
        }
        let other = other.display();
        let cordon = cordon_for(user);
        let cordon = cordon.display();
        let dir_arg = dir.path().display();
        let command = format!("{py} {} {other}", probe_file.display());
        // With the sandbox's own `/dev` the terminal has a name there; where the host's stays
        // (a working directory there, no mount view) it has none, and without the mount view
        // no new terminal can be opened by name either.
        let runs = [
            (format!("{cordon} exec -a never -C {dir_arg} -- {command}"), true, true),
            (format!("{cordon} sandbox linux -C {dir_arg} -- {command}"), true, true),
            (
                format!("{cordon} sandbox linux --writes direct -C {in_dev_arg} -- {command}"),
                false,
                true,
            ),
            (
                format!(
                    "{cordon} exec -a never -s read-only --no-mount-view --best-effort -C {dir_arg} -- {command}"
                ),
                false,
                false,
            ),
        ];
        for (run, named, new_terminal) in runs {
            let transcript = on_a_terminal_as(user, &format!("{run}; echo status=$?"), dir.path());
            let seen = |text: &str| transcript.contains(text);
            assert!(seen("refused the other terminal to read"), "{user:?} {run}:\n{transcript}");
            assert!(seen("refused the other terminal to write"), "{user:?} {run}:\n{transcript}");
            assert!(!seen("opened the other"), "{user:?} {run}:\n{transcript}");
            assert!(!named || seen("BYNAME /dev/"), "{user:?} {run}:\n{transcript}");
            assert!(seen("VIATTY"), "{user:?} {run}:\n{transcript}");
            let made = seen("new terminal True");
            assert!(!new_terminal || made, "{user:?} {run}:\n{transcript}");
            assert!(seen("status=0"), "{user:?} {run}:\n{transcript}");
        }
        if user == User::Root {
            // An executor's terminal session, in the working directory the agent picks.
            let mut ex = super::executor::Executor::start(&[]);
            for workdir in [dir.path().to_str().unwrap(), "/dev"] {
                let text = ex.text_until_exited(serde_json::json!({"cmd": command,
                    "tty": true, "login": false, "workdir": workdir, "yield_time_ms": 10000}));
                assert!(text.contains("refused the other terminal to read"), "{workdir}: {text}");
                assert!(text.contains("refused the other terminal to write"), "{workdir}: {text}");
            }
        }
        // Checked from outside: nothing arrived at the other terminal.
        nix::fcntl::fcntl(
            &pair.master,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        let mut buffer = [0u8; 256];
        let read = nix::unistd::read(&pair.master, &mut buffer);
        assert_eq!(read, Err(nix::Error::EAGAIN), "{user:?}: the other terminal got {buffer:?}");
        // And what was typed there is still there to read.
        nix::fcntl::fcntl(
            &pair.slave,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        let read = nix::unistd::read(&pair.slave, &mut buffer).unwrap();
        assert_eq!(&buffer[..read], b"typed-there\n", "{user:?}");
        // The control: the same probe run directly opens the other terminal.
        let control = on_a_terminal_as(user, &format!("{command}; echo status=$?"), dir.path());
        assert!(control.contains("opened the other terminal to read"), "{user:?}: {control}");
    }
}

/// A terminal handed to the command that is not the session's controlling one (a harness's
/// own pty on stdin, either side of it, while the user's terminal stays the session's) gives
/// the command no
/// `/dev/tty`, which names the controlling terminal: what it writes there never reaches the
/// user's screen, with the mount view or without it, as root and as an unprivileged user. The
/// control writes the same outside the sandbox.
#[test]
fn a_terminal_handed_that_is_not_the_controlling_one_opens_no_dev_tty() {
    require_sandbox!(1);
    let dir = scratch();
    let driver = dir.path().join("driver.py");
    // The marker is put together at run time, so only a real write shows it.
    std::fs::write(
        &driver,
        r#"
import os, subprocess, sys
leader, follower = os.openpty()
probe = ["sh", "-c", "printf '%s%s\\n' LEAK ED > /dev/tty"]
side = {"follower": follower, "leader": leader}[sys.argv[1]]
out = subprocess.run(sys.argv[2:] + probe, stdin=side, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT)
print("ran", out.returncode, out.stdout.decode(errors="replace").strip()[-120:])
"#,
    )
    .unwrap();
    let py = python();
    let d = dir.path().display();
    for user in USERS {
        let cordon = cordon_for(user);
        let cordon = cordon.display();
        let runs = [
            format!("{cordon} sandbox linux --writes direct -C {d} --"),
            format!("{cordon} sandbox linux --writes direct --no-mount-view -C {d} --"),
            format!("{cordon} exec -a never -s read-only --no-mount-view --best-effort -C {d} --"),
        ];
        // Either side of the other pty: its master answers `tcgetpgrp` for its follower too.
        for (run, side) in runs.iter().flat_map(|run| [(run, "follower"), (run, "leader")]) {
            let script = format!("{py} {} {side} {run}; echo status=$?", driver.display());
            let transcript = on_a_terminal_as(user, &script, dir.path());
            assert!(transcript.contains("ran "), "{user:?} {side} {run}:\n{transcript}");
            assert!(!transcript.contains("LEAKED"), "{user:?} {side} {run}:\n{transcript}");
        }
        let control =
            on_a_terminal_as(user, &format!("{py} {} follower", driver.display()), dir.path());
        assert!(control.contains("LEAKED"), "{user:?}:\n{control}");
    }
}

/// A command handed the terminal that stops — Ctrl-Z at that terminal, or a stop it sends
/// itself — where no job-control shell runs cordon (a terminal multiplexer or a harness runs it
/// directly, as a session of its own): nothing would ever continue cordon, so cordon does not
/// stop and the command goes on, as the same command run directly there would (the kernel drops
/// a terminal's stop in such a group). Through `cordon sandbox` and `cordon exec`; each run must
/// end by itself, with the command's last line printed.
#[test]
fn a_stop_where_nothing_would_continue_cordon_leaves_the_command_running() {
    require_sandbox!(1);
    let dir = scratch();
    let driver = r#"
import os, pty, select, sys, time
mode, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
out, sent, open_ = b"", False, True
deadline = time.monotonic() + float(os.environ["BOUND"])
while time.monotonic() < deadline:
    if mode == "ctrl-z" and not sent and b"started" in out:
        os.write(fd, b"\x1a")
        sent = True
    if open_ and select.select([fd], [], [], 0.1)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        open_ = bool(chunk)
        out += chunk
    elif not open_:
        time.sleep(0.1)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("exited", os.waitstatus_to_exitcode(status))
        break
else:
    os.kill(pid, 9)
    print("still running")
sys.stdout.write(out.decode(errors="replace"))
"#;
    let scripts = [
        ("ctrl-z", "sleep 2 & echo started; wait; echo finished"),
        ("self", "(sleep 1; kill -CONT $$) & kill -TSTP $$; sleep 1; echo finished"),
    ];
    let d = dir.path().to_str().unwrap();
    let bound = scaled(Duration::from_secs(20)).as_secs().to_string();
    for (mode, script) in scripts {
        let fronts: [&[&str]; 2] = [
            &["sandbox", "linux", "-s", "workspace-write", "-C", d, "--"],
            &["exec", "-a", "never", "-s", "workspace-write", "-C", d, "--"],
        ];
        for front in fronts {
            let mut argv = vec![CORDON];
            argv.extend_from_slice(front);
            argv.extend(["sh", "-c", script]);
            let mut args = vec![mode];
            args.extend(&argv);
            let run = drive(driver, &args, &[("BOUND", &bound)]);
            let what = format!("{mode} {front:?}: {}{}", run.stdout, run.stderr);
            assert!(run.stdout.starts_with("exited 0"), "{what}");
            assert!(run.stdout.contains("finished"), "{what}");
        }
    }
}

/// Runs the python program `driver` (a pty driver of the tests above) with `args` and `env`,
/// its stdin `/dev/null`.
fn drive(driver: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(python());
    command.args(["-c", driver]).args(args).stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap().into()
}

/// A command handed the terminal that stops — Ctrl-Z, or a SIGSTOP or SIGTSTP it sends itself
/// — stops the job a job-control shell runs: the shell sees it stopped, rather than waiting for
/// ever on a command stopped in the terminal's foreground; `bg` continues it in the background
/// and the terminal stays the shell's, so the command cannot read what is typed for the shell;
/// the job then ends by itself. The driver plays the shell; the control runs the script as the
/// job itself. Through `cordon sandbox` and `cordon exec`.
#[test]
fn a_command_that_stops_with_the_terminal_stops_the_job_and_bg_leaves_the_terminal() {
    require_sandbox!(1);
    let dir = scratch();
    let driver = r#"
import os, pty, select, signal, sys, time
key, limit, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
pid, master = pty.fork()
if pid == 0:
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        os.tcsetpgrp(0, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execv(argv[0], argv)
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    signal.alarm(int(limit))
    _, status = os.waitpid(job, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        print("stopped", flush=True)
        os.tcsetpgrp(0, os.getpgrp())
        os.killpg(job, signal.SIGCONT)
        time.sleep(1)
        print("foreground:", "shell" if os.tcgetpgrp(0) == os.getpgrp() else "job", flush=True)
        _, status = os.waitpid(job, os.WUNTRACED)
    print("ended", os.waitstatus_to_exitcode(status), flush=True)
    os._exit(0)
out, sent, deadline = b"", False, time.time() + 2 * limit
while time.time() < deadline:
    if key and not sent and b"started" in out:
        os.write(master, bytes([int(key, 16)]))
        sent = True
    if select.select([master], [], [], 0.1)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
os.waitpid(pid, 0)
# (Another test of the suite writes a marker to every terminal it can open by name.)
text = out.decode(errors="replace").replace("\r", "")
print(text.replace("\x1b]0;ESCAPED\x07ESCAPED\n", ""))
"#;
    let d = dir.path().to_str().unwrap();
    let scripts = [
        // (`started` once the sleep is running: a stop that lands while the shell is still
        // in vfork for it holds the shell in the kernel, unstoppable, until the child execs.)
        ("1a", "sleep 2 & echo started; wait; echo finished"),
        ("", "kill -STOP $$; sleep 1; echo finished"),
        ("", "kill -TSTP $$; sleep 1; echo finished"),
    ];
    let direct = ["-s", "workspace-write", "--writes", "direct", "-C", d, "--"];
    for (key, script) in scripts {
        let mut sandbox = vec![CORDON, "sandbox", "linux"];
        sandbox.extend(direct);
        let mut exec = vec![CORDON, "exec", "-a", "never"];
        exec.extend(direct);
        for front in [vec![], sandbox, exec] {
            let mut argv = front.clone();
            argv.extend(["/bin/sh", "-c", script]);
            let limit = scaled(Duration::from_secs(15)).as_secs().to_string();
            let mut args = vec![key, &limit];
            args.extend(&argv);
            let Run { stdout, stderr, .. } = drive(driver, &args, &[]);
            let what = format!("{key} {script} {front:?}: {stdout}{stderr}");
            assert!(stdout.contains("stopped\nforeground: shell\n"), "{what}");
            assert!(stdout.contains("finished") && stdout.contains("ended 0"), "{what}");
        }
    }
}

/// `cordon exec … &` at a job-control shell leaves the terminal to the shell: the command that
/// reads it stops (and cordon with it) instead of taking the foreground and what is typed for
/// the shell; continued in the foreground it gets the terminal and reads. The driver plays the
/// shell; the control runs the same script as the background job itself.
#[test]
fn cordon_exec_in_the_background_leaves_the_terminal_to_the_shell() {
    require_sandbox!(1);
    let dir = scratch();
    let driver = r#"
import os, pty, select, signal, sys, time
limit, argv = float(sys.argv[1]), sys.argv[2:]
pid, master = pty.fork()
if pid == 0:
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        os.execv(argv[0], argv)
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    signal.alarm(int(limit))
    time.sleep(1.5)
    print("foreground:", "shell" if os.tcgetpgrp(0) == os.getpgrp() else "job", flush=True)
    _, status = os.waitpid(job, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        os.tcsetpgrp(0, job)
        os.killpg(job, signal.SIGCONT)
        print("continued in the foreground", flush=True)
        _, status = os.waitpid(job, 0)
    print("ended", os.waitstatus_to_exitcode(status), flush=True)
    os._exit(0)
out, sent, deadline = b"", False, time.time() + 2 * limit
while time.time() < deadline:
    if not sent and b"continued in the foreground" in out:
        time.sleep(0.5)
        os.write(master, b"typed\n")
        sent = True
    if select.select([master], [], [], 0.1)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
os.waitpid(pid, 0)
text = out.decode(errors="replace").replace("\r", "")
print(text.replace("\x1b]0;ESCAPED\x07ESCAPED\n", ""))
"#;
    let d = dir.path().to_str().unwrap();
    let script = "read -r line; echo \"got $line\"";
    let exec = [CORDON, "exec", "-a", "never", "-s", "workspace-write", "--writes", "direct"];
    let mut through: Vec<&str> = exec.to_vec();
    through.extend(["-C", d, "--", "/bin/sh", "-c", script]);
    for argv in [vec!["/bin/sh", "-c", script], through] {
        let limit = scaled(Duration::from_secs(15)).as_secs().to_string();
        let mut args = vec![limit.as_str()];
        args.extend(&argv);
        let Run { stdout, stderr, .. } = drive(driver, &args, &[]);
        let what = format!("{argv:?}: {stdout}{stderr}");
        assert!(stdout.contains("foreground: shell\n"), "{what}");
        assert!(stdout.contains("got typed\n") && stdout.contains("ended 0"), "{what}");
    }
}

/// After a run cordon ended itself — a timeout kills the command while it still has the
/// terminal — the terminal is the caller's again: a shell's next read gets what is typed,
/// instead of an input/output error from a terminal whose foreground is the dying command's
/// group. Run where no job-control shell would take the terminal back itself (a script).
#[test]
fn a_timed_out_command_gives_the_terminal_back() {
    require_sandbox!(1);
    let dir = scratch();
    let driver = r#"
import os, pty, select, sys, time
limit, argv = float(sys.argv[1]), sys.argv[2:]
pid, master = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out, sent, deadline = b"", False, time.time() + limit
while time.time() < deadline:
    if not sent and b"status=" in out:
        time.sleep(0.3)
        os.write(master, b"typed\n")
        sent = True
    if select.select([master], [], [], 0.1)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
os.waitpid(pid, 0)
print(out.decode(errors="replace").replace("\r", ""))
"#;
    let d = dir.path().display();
    let script = format!(
        "{CORDON} exec -a never -s workspace-write -C {d} --timeout 1 -- sleep 30; \
         echo status=$?; read -r line; echo \"read=$? got=$line\""
    );
    let limit = scaled(Duration::from_secs(20)).as_secs().to_string();
    let Run { stdout, stderr, .. } = drive(driver, &[&limit, "/bin/sh", "-c", &script], &[]);
    let what = format!("{stdout}{stderr}");
    assert!(stdout.contains("status=124"), "{what}");
    assert!(stdout.contains("read=0 got=typed"), "{what}");
}

/// Ctrl-C at the terminal ends a sandboxed command that was handed none of it (every stream
/// redirected, the terminal still the shell's controlling one): the terminal signals the
/// helper's group, and the command, in a session of its own, gets it from the helper — its
/// whole group, as a shell's job would: a script waiting for a child that got nothing would
/// carry on with its next line. Ctrl-\ too; and Ctrl-Z stops the command (its heartbeat file
/// stops growing) and cordon with it, until the shell continues the job. Each is compared
/// with the same script run as the job itself (the control). The driver plays a job-control
/// shell: the job in a foreground group of its own, continued after a stop. Through `cordon
/// sandbox` (the helper in place) and `cordon exec`.
#[test]
fn ctrl_c_at_the_terminal_ends_a_command_handed_none_of_it() {
    require_sandbox!(1);
    let dir = scratch();
    let marker = dir.path().join("started");
    let after = dir.path().join("after");
    let results = dir.path().join("results");
    let driver = r#"
import os, pty, signal, sys, time
marker, results, keys, limit, argv = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
beat = marker + ".beat"
pid, master = pty.fork()
if pid == 0:
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        os.tcsetpgrp(0, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execv(argv[0], argv)
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    def note(text):
        with open(results, "a") as f:
            f.write(text + "\n")
    while True:
        _, status = os.waitpid(job, os.WUNTRACED)
        if os.WIFSTOPPED(status):
            size = os.path.getsize(beat) if os.path.exists(beat) else 0
            time.sleep(1)
            grew = os.path.exists(beat) and os.path.getsize(beat) != size
            note("stopped, the command " + ("ran on" if grew else "stopped"))
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            os.tcsetpgrp(0, job)
            os.killpg(job, signal.SIGCONT)
            continue
        note("ended %d" % os.waitstatus_to_exitcode(status))
        os._exit(0)
deadline = time.time() + 3 * limit
while not os.path.exists(marker) and time.time() < deadline:
    time.sleep(0.05)
for count, key in enumerate(keys.split(","), 1):
    os.write(master, bytes([int(key, 16)]))
    deadline = time.time() + limit
    while time.time() < deadline:
        if os.path.exists(results) and len(open(results).read().splitlines()) >= count:
            break
        time.sleep(0.05)
    else:
        print("still running")
        os.kill(pid, 9)
        sys.exit(0)
print(open(results).read().strip())
"#;
    let d = dir.path().to_str().unwrap();
    let (m, a) = (marker.display(), after.display());
    let waits = format!("touch {m}; sleep 100; touch {a}");
    let beats = format!("touch {m}; while :; do echo x >> {m}.beat; sleep 0.1; done");
    // Writing directly, so that the marker shows while the command runs.
    let direct = ["-s", "workspace-write", "--writes", "direct", "-C", d, "--"];
    let sandbox = |script: &str| {
        let mut argv = vec![CORDON, "sandbox", "linux"];
        argv.extend(direct);
        argv.extend(["/bin/bash", "-c"]);
        argv.push(script);
        argv.iter().map(|arg| (*arg).to_owned()).collect::<Vec<String>>()
    };
    let exec = |script: &str| {
        let mut argv = vec![CORDON, "exec", "-a", "never"];
        argv.extend(direct);
        argv.extend(["/bin/bash", "-c", script]);
        argv.iter().map(|arg| (*arg).to_owned()).collect::<Vec<String>>()
    };
    let control = |script: &str| vec!["/bin/bash".to_owned(), "-c".to_owned(), script.to_owned()];
    let drive = |keys: &str, argv: &[String]| {
        for leftover in [&marker, &after, &results] {
            let _ = std::fs::remove_file(leftover);
        }
        let out = Command::new(python())
            .args(["-c", driver])
            .arg(&marker)
            .arg(&results)
            .arg(keys)
            .arg(scaled(Duration::from_secs(20)).as_secs_f64().to_string())
            .args(argv)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(marker.exists(), "{argv:?}: the command never started");
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (stdout, after.exists(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Ctrl-C and Ctrl-\ by their bytes: `cordon sandbox` ends as the job itself does, and so
    // does `cordon exec` (which reports a signal as 128 + N, and dies of Ctrl-\ itself).
    for (key, exec_ends) in [("03", "ended 130"), ("1c", "ended -3")] {
        let expected = drive(key, &control(&waits));
        assert!(expected.0.starts_with("ended"), "the control: {expected:?}");
        let through = drive(key, &sandbox(&waits));
        assert_eq!((&through.0, through.1), (&expected.0, expected.1), "{key}: {}", through.2);
        let through = drive(key, &exec(&waits));
        assert_eq!((through.0.as_str(), through.1), (exec_ends, false), "{key}: {}", through.2);
    }
    // Ctrl-Z, then Ctrl-C once the job is continued; and the same with cordon run by a
    // wrapper (`sh -c`, as make or a script would) in the job's group.
    let expected = drive("1a,03", &control(&beats));
    assert!(expected.0.starts_with("stopped, the command stopped\nended"), "{expected:?}");
    let through = drive("1a,03", &sandbox(&beats));
    assert_eq!(through.0, expected.0, "{}", through.2);
    let wrapped = |argv: Vec<String>| {
        let quoted: Vec<String> = argv.iter().map(|arg| format!("'{arg}'")).collect();
        vec!["/bin/sh".to_owned(), "-c".to_owned(), format!("{}; true", quoted.join(" "))]
    };
    let expected = drive("1a,03", &wrapped(control(&beats)));
    assert!(expected.0.starts_with("stopped, the command stopped\nended"), "{expected:?}");
    let through = drive("1a,03", &wrapped(sandbox(&beats)));
    assert_eq!(through.0, expected.0, "{}", through.2);
}

/// What the command prints reaches cordon's terminal without the escape sequences
/// that act beyond the screen — a window title (and with it the title report that would type
/// it into the user's shell), an OSC 52 clipboard write, device status reports — while colours
/// and text pass. The control prints the same straight to the terminal.
#[test]
fn output_relayed_to_a_terminal_keeps_colours_and_drops_sequences_that_act_beyond_the_screen() {
    require_sandbox!(1);
    let dir = scratch();
    let printf = r"printf 'A\033]0;TITLE-SET\007B\033]52;c;Y2xpcA==\007C\033[21t\033[6nD\033[31mRED\033[0m\n'";
    let cordon = cordon_for(User::Root);
    let through = format!(
        "{} exec -a never -- sh -c \"{printf}\" < /dev/null; {} exec -a never -- sh -c \"{printf} >&2\" < /dev/null; echo status=$?",
        cordon.display(),
        cordon.display()
    );
    let transcript = on_a_terminal_as(User::Root, &through, dir.path());
    assert_eq!(transcript.matches("ABCD\u{1b}[31mRED\u{1b}[0m").count(), 2, "{transcript:?}");
    for gone in ["TITLE-SET", "\u{1b}]", "\u{1b}[21t", "\u{1b}[6n"] {
        assert!(!transcript.contains(gone), "{gone:?} reached the terminal: {transcript:?}");
    }
    let control = on_a_terminal_as(User::Root, &format!("{printf}; echo status=$?"), dir.path());
    assert!(control.contains("\u{1b}]0;TITLE-SET"), "{control:?}");
}

#[test]
fn a_terminal_on_stdin_goes_to_the_command_and_comes_back() {
    require_sandbox!(1);
    let dir = scratch();
    let run = |typed: &str, script: &str| {
        let out = std::process::Command::new(python())
            .arg(helper_program("pty_type.py"))
            .arg(typed)
            .args([CORDON, "exec", "-a", "never", "--", "sh", "-c", script])
            .current_dir(dir.path())
            .env("CORDON_HOME", dir.path())
            // Type only once the command runs (and so holds the terminal), however slow the
            // machine is.
            .env("PTY_TYPE_AFTER", "ready")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code())
    };
    let (transcript, code) = run("hello\\n", "echo ready; read x; echo got=$x");
    assert!(transcript.contains("got=hello"), "{transcript}");
    assert_eq!(code, Some(0), "{transcript}");
    let started = std::time::Instant::now();
    let (transcript, code) = run("\\x03", "echo ready; sleep 300");
    // Well under the 300 s the command would sleep.
    assert!(started.elapsed() < scaled(Duration::from_secs(10)), "{transcript}");
    assert_eq!(code, Some(130), "{transcript}");
}
