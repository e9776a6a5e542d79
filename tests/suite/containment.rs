//! Containment: nothing outlives the sandboxed command, whichever way it
//! ends, and from inside the command cannot reach host processes or host System V IPC. Checked
//! from outside: survivors by their command line in the host's `/proc`, limits and niceness
//! in `/proc/PID`, IPC objects by id.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::util::*;

/// How the sandboxed command's processes are contained here (`cordon doctor --json`).
fn containment() -> String {
    let out = Command::new(CORDON).args(["doctor", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["containment"].as_str().unwrap_or_default().to_owned()
}

/// Skips unless the PID namespace is what a sandboxed command gets here.
macro_rules! require_pid_namespace {
    () => {
        require_sandbox!(1);
        skip_unless!(
            containment() == "pid namespace",
            "needs PID namespaces (doctor says containment: {})",
            containment()
        );
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// `cordon exec -a never`.
    Exec,
    /// `cordon sandbox linux`.
    Sandbox,
    /// `codex-linux-sandbox` called directly, with extra helper flags.
    Helper(&'static [&'static str]),
    /// The helper where the kernel refuses every namespace (`unshare` fails with EPERM, as for
    /// an unprivileged user without user namespaces): the subreaper fallback.
    HelperWithoutNamespaces,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The command exits 0 with its children still running.
    Exit,
    /// `cordon exec --timeout 1s` kills it.
    Timeout,
    /// `kill -9` of the process the caller started (cordon, or the helper).
    KillCaller,
}

/// A unique `sleep` duration prefix, so that survivors are found by command line.
pub(super) fn marker() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    format!("77{n:03}{:05}", std::process::id() % 100_000)
}

/// The four ways to leave a process behind, then `started` once all four run.
pub(super) fn leave_children_script(marker: &str, tail: &str) -> String {
    format!(
        "M={marker}\n\
         sleep $M.1 >/dev/null 2>&1 &\n\
         (sleep $M.2 >/dev/null 2>&1 &) &\n\
         setsid sleep $M.3 >/dev/null 2>&1 &\n\
         nohup sleep $M.4 >/dev/null 2>&1 &\n\
         i=0; while [ \"$(pgrep -c -f \"^sleep $M\\.\")\" -lt 4 ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done\n\
         echo started\n\
         {tail}\n"
    )
}

pub(super) fn survivors(marker: &str) -> usize {
    processes_matching(&format!("^sleep {marker}\\."))
}

/// A symlink named `codex-linux-sandbox` to the binary `user` runs.
fn helper_link(dir: &Path, user: User) -> PathBuf {
    let link = dir.join("codex-linux-sandbox");
    let target = match user {
        User::Root => PathBuf::from(CORDON),
        User::Nobody => nobody_binary(),
    };
    let _ = std::fs::remove_file(&link);
    symlink(target, &link).unwrap();
    link
}

fn spawn(entry: Entry, ending: Ending, user: User, dir: &Path, script: &str) -> Child {
    let d = dir.to_str().unwrap();
    let mut cmd = match entry {
        Entry::Exec => {
            let timeout;
            let mut args = vec!["exec", "-a", "never", "-C", d];
            if ending == Ending::Timeout {
                // Long enough for the command to start its children however slow the machine.
                timeout = format!("{}s", time_scale());
                args.extend(["--timeout", &timeout]);
            }
            args.extend(["--", "sh", "-c", script]);
            let mut cmd = cordon_command(user, &args);
            // cordon's own state outside the writable roots (/tmp is one).
            let home = dir.join("home");
            std::fs::create_dir_all(&home).unwrap();
            chown_nobody(&home);
            // HOME inside a writable root would be refused: a missing one stands for the real home.
            cmd.env("CORDON_HOME", &home).env("HOME", dir.join("no-home"));
            cmd
        }
        Entry::Sandbox => {
            cordon_command(user, &["sandbox", "linux", "-C", d, "--", "sh", "-c", script])
        }
        Entry::HelperWithoutNamespaces => {
            let link = helper_link(dir, user);
            let policy = r#"{"type":"workspace-write"}"#;
            let argv: Vec<&std::ffi::OsStr> = [
                "codex-linux-sandbox",
                "--sandbox-policy-cwd",
                d,
                "--sandbox-policy",
                policy,
                // On Landlock ABI < 3 only the mount view stops truncation, so without it the
                // helper fails closed; containment is what this entry tests.
                "--best-effort",
                "--",
                "sh",
                "-c",
                script,
            ]
            .into_iter()
            .map(os)
            .collect();
            let filtered = under_filter(&[(libc::SYS_unshare, libc::EPERM)], &link, &argv);
            let mut cmd = command_as(user, python());
            cmd.args(filtered.get_args()).current_dir(dir).stdin(Stdio::null());
            cmd
        }
        Entry::Helper(extra) => {
            let link = helper_link(dir, user);
            let mut cmd = command_as(user, &link);
            let policy = r#"{"type":"workspace-write"}"#;
            cmd.args(["--sandbox-policy-cwd", d, "--sandbox-policy", policy])
                .args(extra)
                .args(["--", "sh", "-c", script])
                .current_dir(dir)
                .stdin(Stdio::null());
            cmd
        }
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Runs `entry` until its command has left four children behind, ends it as `ending` says, and
/// asserts that none of them is left within a second.
fn assert_nothing_survives(entry: Entry, ending: Ending, user: User) {
    let dir = scratch();
    let marker = marker();
    let tail = match ending {
        // Exits once the test has seen the four children from outside.
        Ending::Exit => "while [ ! -e go ]; do sleep 0.01; done; exit 0",
        Ending::Timeout | Ending::KillCaller => "sleep 30",
    };
    let what = format!("{entry:?} {ending:?} {user:?}");
    let mut child = spawn(entry, ending, user, dir.path(), &leave_children_script(&marker, tail));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line.trim() != "started" {
        let out = child.wait_with_output().unwrap();
        panic!("{what}: never started: {line}{}", String::from_utf8_lossy(&out.stderr));
    }
    // Not vacuous: all four are running, visible from outside.
    assert_eq!(survivors(&marker), 4, "{what}: the children did not start");
    match ending {
        Ending::Exit => std::fs::write(dir.path().join("go"), "").unwrap(),
        Ending::Timeout => {}
        Ending::KillCaller => {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::SIGKILL,
            )
            .unwrap();
        }
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).ok();
    let status = child.wait().unwrap();
    if entry == Entry::HelperWithoutNamespaces {
        assert!(stderr.contains("no mount view"), "{what}: namespaces were not refused: {stderr}");
    }
    match ending {
        Ending::Exit => assert_eq!(status.code(), Some(0), "{what}"),
        Ending::Timeout => assert_eq!(status.code(), Some(124), "{what}"),
        Ending::KillCaller => {}
    }
    let deadline = Instant::now() + scaled(Duration::from_secs(1));
    while survivors(&marker) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = survivors(&marker);
    if left > 0 {
        // Do not leave them to the next test.
        let _ = Command::new("pkill").args(["-9", "-f", &format!("^sleep {marker}\\.")]).status();
    }
    assert_eq!(left, 0, "{what}: processes outlived the command");
}

const HELPER: Entry = Entry::Helper(&[]);

#[test]
fn background_double_forked_setsid_and_nohup_children_die_when_the_command_exits() {
    require_pid_namespace!();
    for user in USERS {
        for entry in [Entry::Exec, Entry::Sandbox, HELPER] {
            assert_nothing_survives(entry, Ending::Exit, user);
        }
    }
}

#[test]
fn a_timeout_leaves_no_process_behind() {
    require_pid_namespace!();
    for user in USERS {
        assert_nothing_survives(Entry::Exec, Ending::Timeout, user);
    }
}

#[test]
fn killing_cordon_or_the_helper_with_sigkill_leaves_no_process_behind() {
    require_pid_namespace!();
    for user in USERS {
        for entry in [Entry::Exec, Entry::Sandbox, HELPER] {
            assert_nothing_survives(entry, Ending::KillCaller, user);
        }
    }
}

#[test]
fn without_namespaces_the_subreaper_still_leaves_nothing_after_a_normal_exit() {
    require_sandbox!(1);
    for user in USERS {
        for entry in [
            Entry::HelperWithoutNamespaces,
            Entry::Helper(&["--no-pid-namespace"]),
            Entry::Helper(&["--no-mount-view", "--best-effort"]),
        ] {
            assert_nothing_survives(entry, Ending::Exit, user);
        }
    }
}

/// A `sleep 60` outside the sandbox, run as `user` (same uid as the sandboxed command); killed
/// on drop.
struct HostProcess(Child);

impl HostProcess {
    fn spawn(user: User) -> Self {
        let child = command_as(user, "sleep").arg("60").spawn();
        let process = HostProcess(child.unwrap());
        // setpriv execs sleep: wait until it has.
        let deadline = Instant::now() + Duration::from_secs(2);
        while process.comm() != "sleep" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        process
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn comm(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/comm", self.pid()))
            .unwrap_or_default()
            .trim()
            .to_owned()
    }
    /// `Max open files` soft and hard limits, as `/proc/PID/limits` shows them.
    fn nofile(&self) -> String {
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", self.pid())).unwrap();
        limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or_default().to_owned()
    }
    /// Field 19 of `/proc/PID/stat`.
    fn nice(&self) -> String {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let rest = stat.rsplit_once(')').unwrap().1;
        rest.split_whitespace().nth(16).unwrap().to_owned()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn host_processes_cannot_be_given_limits_or_reniced_but_the_command_itself_can() {
    require_pid_namespace!();
    for user in USERS {
        let host = HostProcess::spawn(user);
        let (nofile, nice) = (host.nofile(), host.nice());
        let dir = scratch();
        let pid = host.pid();
        let run = sandbox_sh(
            user,
            &[],
            dir.path(),
            &format!(
                "prlimit --pid {pid} --nofile=10:10; echo host-prlimit=$?; renice -n 7 -p {pid}; echo host-renice=$?; \
                 ulimit -n 64; echo own-limit=$(ulimit -n); echo own-nice=$(( $(nice -n 5 nice) - $(nice) )); \
                 sleep 5 & renice -n $(( $(nice) + 3 )) -p $! >/dev/null; echo child-renice=$?; kill $!"
            ),
        );
        run.assert_ok();
        assert!(!run.stdout.contains("host-prlimit=0"), "{user:?}: {}", run.stdout);
        assert!(!run.stdout.contains("host-renice=0"), "{user:?}: {}", run.stdout);
        assert_eq!(host.nofile(), nofile, "{user:?}: the host process's limit changed");
        assert_eq!(host.nice(), nice, "{user:?}: the host process was reniced");
        // Relative to where it started: the suite may itself run under `nice`.
        for ok in ["own-limit=64", "own-nice=5", "child-renice=0"] {
            assert!(run.stdout.contains(ok), "{user:?} {ok}: {}{}", run.stdout, run.stderr);
        }
    }
}

/// `ipcmk` output ends with the new object's id.
fn ipcmk(user: User, flags: &[&str]) -> String {
    let mut cmd = command_as(user, "ipcmk");
    let out = cmd.args(flags).output().unwrap();
    assert!(out.status.success(), "ipcmk: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().last().unwrap().to_owned()
}

#[test]
fn host_message_queues_and_shared_memory_are_invisible_inside() {
    require_pid_namespace!();
    skip_unless!(Command::new("ipcmk").arg("-V").output().is_ok(), "needs ipcmk from util-linux");
    for user in USERS {
        let queue = ipcmk(user, &["-Q", "-p", "0666"]);
        let shm = ipcmk(user, &["-M", "4096", "-p", "0666"]);
        let dir = scratch();
        let run = sandbox_sh(
            user,
            &[],
            dir.path(),
            "ipcs -q -m; echo ---; ipcmk -Q >/dev/null && echo own-queue-ok",
        );
        let _ = Command::new("ipcrm").args(["-q", &queue, "-m", &shm]).status();
        run.assert_ok();
        let (listing, rest) = run.stdout.split_once("---").unwrap();
        let ids: Vec<&str> = listing.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
        assert!(!ids.contains(&queue.as_str()), "{user:?}: host queue {queue} listed: {listing}");
        assert!(!ids.contains(&shm.as_str()), "{user:?}: host segment {shm} listed: {listing}");
        assert!(rest.contains("own-queue-ok"), "{user:?}: {}{}", run.stdout, run.stderr);
    }
}

#[test]
fn numa_kcmp_process_madvise_quotactl_and_prlimit_on_another_pid_are_refused_with_eperm() {
    require_sandbox!(1);
    let dir = scratch();
    for user in USERS {
        let cases = [
            ("mbind", format!("libc.syscall({}, 0, 4096, 0, 0, 0, 0)", libc::SYS_mbind)),
            ("set_mempolicy", format!("libc.syscall({}, 0, 0, 0)", libc::SYS_set_mempolicy)),
            ("set_mempolicy_home_node", "libc.syscall(450, 0, 4096, 0, 0)".to_owned()),
            ("migrate_pages", format!("libc.syscall({}, 1, 0, 0, 0)", libc::SYS_migrate_pages)),
            ("move_pages", format!("libc.syscall({}, 1, 0, 0, 0, 0, 0)", libc::SYS_move_pages)),
            ("kcmp", format!("libc.syscall({}, 1, 1, 0, 0, 0)", libc::SYS_kcmp)),
            (
                "process_madvise",
                format!("libc.syscall({}, 0, 0, 0, 0, 0)", libc::SYS_process_madvise),
            ),
            ("quotactl", format!("libc.syscall({}, 0, 0, 0, 0)", libc::SYS_quotactl)),
            ("quotactl_fd", "libc.syscall(443, 0, 0, 0, 0)".to_owned()),
            (
                "prlimit64 on pid 1",
                format!(
                    "libc.syscall({}, 1, 7, 0, ctypes.create_string_buffer(16))",
                    libc::SYS_prlimit64
                ),
            ),
            (
                "prlimit64 on pid 1 with the high bits of pid 0 set",
                format!(
                    "libc.syscall({}, ctypes.c_long(1 << 32), 7, 0, ctypes.create_string_buffer(16))",
                    libc::SYS_prlimit64
                ),
            ),
        ];
        for (name, call) in cases {
            let run = python_sandboxed(user, &[], dir.path(), &syscall_probe(&call));
            if name.contains("high bits") {
                // The kernel reads pid_t (32 bits): that is pid 0, itself, which is allowed.
                run.assert_ok();
                assert!(run.stdout.contains("ret 0 "), "{user:?} {name}: {}", run.stdout);
                continue;
            }
            assert_eperm(&run, &format!("{user:?} {name}"));
        }
        // prlimit on itself (what setrlimit and getrlimit do) keeps working.
        let own = python_sandboxed(
            user,
            &[],
            dir.path(),
            &syscall_probe(&format!(
                "libc.syscall({}, 0, 7, 0, ctypes.create_string_buffer(16))",
                libc::SYS_prlimit64
            )),
        );
        own.assert_ok();
        assert!(own.stdout.contains("ret 0 "), "{user:?} prlimit64 on itself: {}", own.stdout);
    }
}

#[test]
fn proc_inside_lists_only_the_sandboxs_own_processes() {
    require_pid_namespace!();
    for user in USERS {
        let host = HostProcess::spawn(user);
        let dir = scratch();
        let run = sandbox_sh(
            user,
            &[],
            dir.path(),
            &format!(
                "echo count=$(ls /proc | grep -c '^[0-9]'); echo self=$$; \
                 test -e /proc/{} && echo host-visible; echo sys=$(touch /proc/sys/kernel/hostname 2>&1 || echo ro)",
                host.pid()
            ),
        );
        run.assert_ok();
        let count: usize = run
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("count="))
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX);
        // The supervisor (1), the shell (2), ls and grep.
        assert!(count <= 5, "{user:?}: {count} processes in /proc: {}", run.stdout);
        assert!(run.stdout.contains("self=2\n"), "{user:?}: {}", run.stdout);
        if host.pid() > 5 {
            assert!(!run.stdout.contains("host-visible"), "{user:?}: {}", run.stdout);
        }
        assert!(run.stdout.contains("ro"), "{user:?}: /proc is writable: {}", run.stdout);
    }
}

#[test]
fn a_forwarded_sigint_reaches_the_command_once() {
    require_pid_namespace!();
    // killpg (what cordon exec does on Ctrl-C) reaches the command directly and the helper
    // forwards it too: the supervisor must drop the copy. A handler counts what arrives.
    let dir = scratch();
    let code = "import signal, time, sys\nn = 0\ndef h(s, f):\n    global n\n    n += 1\nsignal.signal(signal.SIGINT, h)\nprint('ready', flush=True)\ntime.sleep(1.0)\nprint('count', n, flush=True)\n";
    for target in ["group", "helper"] {
        let mut child = sandbox_command(&[], dir.path(), &[python(), "-c", code])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        match target {
            "group" => nix::sys::signal::killpg(pid, nix::sys::signal::SIGINT).unwrap(),
            _ => nix::sys::signal::kill(pid, nix::sys::signal::SIGINT).unwrap(),
        }
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(rest.trim(), "count 1", "SIGINT to the {target}");
    }
}

/// Drives an interactive bash in a new PTY (Python's `pty`): `CMD`, Ctrl-Z, `fg`, Ctrl-D.
const JOB_CONTROL_DRIVER: &str = r#"
import os, pty, select, sys, time
command = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.environ['PS1'] = '$ '
    os.execv('/bin/bash', ['bash', '--norc', '--noprofile', '-i'])
seen = b''
def expect(marker, limit=10.0):
    global seen
    end = time.time() + limit
    while marker.encode() not in seen and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    ok = marker.encode() in seen
    print(marker.replace('\r\n', '|'), 'ok' if ok else 'MISSING after ' + repr(seen[-300:]), flush=True)
    # Keep what came after the marker: the next expectation may already be in it.
    seen = seen.split(marker.encode(), 1)[1] if ok else b''
    return ok
expect('$ ')
os.write(fd, (command + ' cat\n').encode())
time.sleep(0.5)
os.write(fd, b'first\n')
expect('first\r\nfirst')
os.write(fd, b'\x1a')
expect('Stopped')
# Input typed before bash has taken the terminal back and shown its prompt may be flushed
# when it restores its terminal modes: wait for the prompt, then for `fg` to name the job.
expect('$ ')
os.write(fd, b'fg\n')
expect('cat')
time.sleep(0.3)
os.write(fd, b'again\n')
expect('again\r\nagain')
os.write(fd, b'\x04')
expect('$ ')
os.write(fd, b'echo rc=$?\n')
expect('rc=0')
os.kill(pid, 9)
"#;

#[test]
fn job_control_in_a_terminal_stops_and_resumes_the_sandboxed_command() {
    require_sandbox!(1);
    let dir = scratch();
    let link = helper_link(dir.path(), User::Root);
    let helper = format!(
        "{} --sandbox-policy-cwd {} --sandbox-policy '{{\"type\":\"read-only\"}}' --",
        link.display(),
        dir.path().display()
    );
    let sandbox = format!("{CORDON} sandbox linux -C {} --", dir.path().display());
    let drive = |command: &str| {
        let out = Command::new(python())
            .args(["-c", JOB_CONTROL_DRIVER, command])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for command in [sandbox, helper.replace(" --", " --no-pid-namespace --")] {
        let mut stdout = drive(&command);
        if stdout.contains("MISSING") {
            // Under the full suite's load on two CPUs this interactive bash scenario missed a
            // step about once in ten runs (never alone, never reproduced under synthetic
            // load). One more run, with the first transcript kept in the output; a real
            // job-control defect fails both.
            eprintln!("job control, first run missed a step ({command}):\n{stdout}");
            stdout = drive(&command);
        }
        assert!(!stdout.contains("MISSING"), "{command}: {stdout}");
        assert_eq!(stdout.lines().count(), 8, "{command}: {stdout}");
    }
}
