//! Unsandboxed runs (`--yolo`, an approved retry without the sandbox, an executor session
//! without one) leave no process when cordon itself is killed with SIGKILL: the command's
//! `setsid` child and its plain background child are found from outside by the host pids they
//! wrote, and must be gone. Setuid programs keep working in such runs (no user namespace).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::containment::marker;
use super::util::*;

/// A setsid child and a plain background child that each write their pid (as `/proc/self`
/// names it, whatever namespace the shell is in) to `pids`, then `sleep MARKER.N`.
fn leave_two_children(marker: &str, pids: &Path) -> String {
    let child = "read p _ < /proc/self/stat; echo $p >> \"$0\"; exec sleep \"$1\"";
    format!(
        "setsid sh -c '{child}' {pids} {marker}.1 &\n\
         sh -c '{child}' {pids} {marker}.2 &\n\
         sleep 30\n",
        pids = pids.display()
    )
}

/// A directory `user` may write in.
fn writable_dir(user: User) -> tempfile::TempDir {
    let dir = scratch();
    if user == User::Nobody {
        chown_nobody(dir.path());
    }
    dir
}

/// The pids in `file` once it holds two that both run the marked sleep, within a deadline.
fn two_pids(file: &Path, marker: &str, what: &str) -> Vec<i32> {
    let deadline = Instant::now() + scaled(Duration::from_secs(20));
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() >= 2 && pids.iter().all(|p| alive(*p, marker)) {
            return pids;
        }
        assert!(Instant::now() < deadline, "{what}: the children never started ({text:?})");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is still one of the marked sleeps (not a reused pid, not the shell before its
/// exec).
fn alive(pid: i32, marker: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(&format!("sleep\0{marker}.")))
}

/// Kills `caller` with SIGKILL and says which of `pids` is still left after a deadline (then
/// kills them).
fn kill_and_find_survivors(
    caller: &mut Child,
    pids: &[i32],
    marker: &str,
    what: &str,
) -> Option<String> {
    for pid in pids {
        assert!(alive(*pid, marker), "{what}: child {pid} not running before the kill");
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(caller.id() as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    let _ = caller.wait();
    let deadline = Instant::now() + scaled(Duration::from_secs(3));
    while pids.iter().any(|p| alive(*p, marker)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p, marker)).collect();
    if !left.is_empty() {
        let _ = Command::new("pkill").args(["-9", "-f", &format!("^sleep {marker}\\.")]).status();
    }
    (!left.is_empty()).then(|| format!("{what}: {left:?} outlived cordon's SIGKILL"))
}

#[test]
fn an_unsandboxed_exec_leaves_no_process_when_cordon_is_killed() {
    let mut failures = Vec::new();
    for user in USERS {
        let dir = writable_dir(user);
        let marker = marker();
        let pids = dir.path().join("pids");
        let script = leave_two_children(&marker, &pids);
        let d = dir.path().to_str().unwrap();
        for mode in [&["--yolo"][..], &["-a", "never", "-s", "danger-full-access"]] {
            let _ = std::fs::remove_file(&pids);
            let mut args = vec!["exec", "-C", d];
            args.extend_from_slice(mode);
            args.extend(["--", "sh", "-c", &script]);
            let mut cordon = cordon_command(user, &args)
                .env("CORDON_HOME", dir.path().join("home"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let what = format!("{user:?} {mode:?}");
            let found = two_pids(&pids, &marker, &what);
            failures.extend(kill_and_find_survivors(&mut cordon, &found, &marker, &what));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `cordon executor` as `user` in `dir`, with its protocol on pipes.
pub(super) struct Executor {
    pub(super) child: Child,
    /// Its output lines, read on a thread of their own so that a wait has a deadline: a
    /// message that never comes fails the test instead of hanging it.
    lines: std::sync::mpsc::Receiver<String>,
}

impl Executor {
    pub(super) fn start(user: User, dir: &Path, flags: &[&str]) -> Executor {
        let mut args = vec!["executor", "-C", dir.to_str().unwrap()];
        args.extend_from_slice(flags);
        let mut child = cordon_command(user, &args)
            .env("CORDON_HOME", dir.join("home"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Executor { child, lines }
    }

    /// The next line, within a deadline; `None` once the executor has ended.
    fn next_line(&mut self) -> Option<String> {
        match self.lines.recv_timeout(scaled(Duration::from_secs(60))) {
            Ok(line) => Some(line),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("the executor sent nothing for a minute")
            }
        }
    }

    pub(super) fn send(&mut self, message: &serde_json::Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message of type `kind` or `other`, and every message before it.
    pub(super) fn next_after_either(
        &mut self,
        kind: &str,
        other: &str,
    ) -> (serde_json::Value, Vec<serde_json::Value>) {
        let mut before = Vec::new();
        while let Some(line) = self.next_line() {
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value["type"] == kind || value["type"] == other {
                return (value, before);
            }
            before.push(value);
        }
        panic!("the executor ended before a {kind} message; got {before:?}");
    }

    /// The next message of `kind`, and every message before it.
    pub(super) fn next_after(&mut self, kind: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
        self.next_after_either(kind, kind)
    }

    /// The next message of `kind`.
    fn next(&mut self, kind: &str) -> serde_json::Value {
        while let Some(line) = self.next_line() {
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value["type"] == kind {
                return value;
            }
        }
        panic!("the executor ended before a {kind} message");
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An executor's unsandboxed session (a pipe session under `danger-full-access`, a terminal
/// session, and a retry without the sandbox approved under `on-failure`) leaves nothing when
/// the executor is killed with SIGKILL.
#[test]
fn an_executors_unsandboxed_session_leaves_no_process_when_it_is_killed() {
    // The retry needs a sandboxed attempt that the sandbox blocked.
    require_sandbox!(1);
    let mut failures = Vec::new();
    for user in USERS {
        let dir = writable_dir(user);
        // Outside the sandboxed attempt's writable roots: its write is the denial a retry needs.
        let outside = writable_dir(user);
        let marker = marker();
        let pids = dir.path().join("pids");
        let script = leave_two_children(&marker, &pids);
        let retried = format!("echo x > {}/written || exit 1\n{script}", outside.path().display());
        let cases: [(&str, &[&str], bool, &str); 3] = [
            ("pipes", &["-s", "danger-full-access"], false, &script),
            ("terminal", &["-s", "danger-full-access"], true, &script),
            ("approved retry", &["-a", "on-failure"], false, &retried),
        ];
        for (case, flags, tty, cmd) in cases {
            let _ = std::fs::remove_file(&pids);
            let what = format!("{user:?} {case}");
            let mut ex = Executor::start(user, dir.path(), flags);
            // The retry is offered for a command that ended within its first call: that call
            // waits long enough for a slow machine's sandboxed attempt to end.
            let yield_ms = match case {
                "approved retry" => scaled(Duration::from_secs(10)).as_millis(),
                _ => 500,
            };
            ex.send(&json!({"type": "call_tool", "requestId": "r1", "toolName": "exec_command",
                "arguments": {"cmd": cmd, "tty": tty, "login": false, "yield_time_ms": yield_ms}}));
            if case == "approved retry" {
                let request = ex.next("approval_request");
                assert_eq!(request["stage"], "retry_without_sandbox", "{what}: {request}");
                ex.send(&json!({"type": "approval_response", "requestId": request["requestId"],
                    "decision": "approved"}));
            }
            let found = two_pids(&pids, &marker, &what);
            failures.extend(kill_and_find_survivors(&mut ex.child, &found, &marker, &what));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A root-owned setuid copy of `id` in a directory every user can reach.
fn setuid_id(dir: &Path) -> PathBuf {
    let copy = dir.join("suid-id");
    std::fs::copy("/usr/bin/id", &copy).unwrap();
    std::os::unix::fs::chown(&copy, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
    copy
}

/// The kernel still honours the setuid bit in an unsandboxed run: no user namespace is made
/// for it (where only the caller's own ids would be mapped) and no `no_new_privs`. As root the program is run through
/// `setpriv` as uid 65534 inside the run; as uid 65534 directly.
#[test]
fn setuid_programs_keep_working_in_unsandboxed_runs() {
    skip_unless!(is_root(), "needs root to make a root-owned setuid program");
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let id = setuid_id(dir.path());
    let id = id.to_str().unwrap();
    let as_nobody = format!("setpriv --reuid=65534 --regid=65534 --clear-groups {id} -u");
    // Not vacuous: the same copy outside cordon.
    let direct = Command::new("sh").args(["-c", &as_nobody]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&direct.stdout).trim(),
        "0",
        "the setuid copy does not work here"
    );
    for user in USERS {
        let script = match user {
            User::Root => as_nobody.clone(),
            User::Nobody => format!("{id} -u"),
        };
        let home = writable_dir(user);
        let run: Run =
            cordon_command(user, &["exec", "--yolo", "-C", "/", "--", "sh", "-c", &script])
                .env("CORDON_HOME", home.path())
                .output()
                .unwrap()
                .into();
        assert_eq!(run.code, Some(0), "{user:?}: {}", run.stderr);
        assert_eq!(run.stdout.trim(), "0", "{user:?}: the setuid bit was not honoured");
    }
}

/// How many processes run the marked sleep.
fn marked_sleeps(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c).starts_with(&format!("sleep\0{marker}."))
            })
        })
        .count()
}

/// One `--yolo` run of the script `level` (it grows a tree `depth` deep, each process a sleep
/// named after the run's marker, and leaves the process group), ended once `grown` of the tree
/// runs — cordon SIGKILLed (`killed`), or the command exiting on its own. Returns the command's
/// `/proc/self/cgroup` and how many of the tree were still alive well after the run.
fn run_a_tree(
    dir: &Path,
    level: &Path,
    depth: usize,
    grown: usize,
    killed: bool,
) -> (String, usize) {
    let marker = marker();
    let done = dir.join(format!("done-{marker}"));
    let cgroup_file = dir.join(format!("cgroup-{marker}"));
    let script = format!(
        "cat /proc/self/cgroup > {}; setsid sh {} {depth} {marker} & {}",
        cgroup_file.display(),
        level.display(),
        if killed {
            "sleep 600".to_owned()
        } else {
            format!("while [ ! -e {} ]; do sleep 0.1; done", done.display())
        }
    );
    let d = dir.to_str().unwrap();
    let mut cordon =
        cordon_command(User::Root, &["exec", "-C", d, "--yolo", "--", "sh", "-c", &script])
            .env("CORDON_HOME", dir.join("home"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let deadline = Instant::now() + scaled(Duration::from_secs(60));
    while marked_sleeps(&marker) < grown {
        if Instant::now() > deadline {
            let _ = cordon.kill();
            let out = cordon.wait_with_output().unwrap();
            panic!(
                "the tree never grew ({}): {}",
                marked_sleeps(&marker),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if killed {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(cordon.id() as i32),
            nix::sys::signal::SIGKILL,
        )
        .unwrap();
    } else {
        std::fs::write(&done, "").unwrap();
    }
    let _ = cordon.wait();
    let deadline = Instant::now() + scaled(Duration::from_secs(30));
    while marked_sleeps(&marker) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = marked_sleeps(&marker);
    if left > 0 {
        let _ = Command::new("pkill").args(["-9", "-f", marker.as_str()]).status();
    }
    (std::fs::read_to_string(&cgroup_file).unwrap_or_default(), left)
}

/// A chain thousands of processes deep (each the parent of the next, having left the process
/// group) is ended whole, after SIGKILL of cordon and after the command's normal exit: time,
/// not a count of rounds, bounds the keeper's killing.
#[test]
fn a_chain_two_thousand_deep_outlives_neither_a_killed_nor_a_finished_unsandboxed_run() {
    const DEPTH: usize = 2000;
    let dir = writable_dir(User::Root);
    let level = dir.path().join("level.sh");
    std::fs::write(
        &level,
        "n=$1; if [ \"$n\" -gt 0 ]; then sh \"$0\" $((n - 1)) \"$2\" & fi; exec sleep \"$2.$n\"\n",
    )
    .unwrap();
    for killed in [true, false] {
        // Until the chain is (nearly) whole.
        let (_, left) = run_a_tree(dir.path(), &level, DEPTH, DEPTH * 9 / 10, killed);
        assert_eq!(left, 0, "killed={killed}: {left} of the chain outlived the run");
    }
}

/// A tree that grows back as it is killed — every level restarts the next one whenever it
/// dies, having left the process group — is ended whole after SIGKILL of cordon and after the
/// command's normal exit; where cordon has a cgroup for it (root, with a cgroup v2 mount), the
/// command runs in a `cordon-…` cgroup of its own, which is gone afterwards.
#[test]
fn a_tree_that_regrows_as_it_is_killed_outlives_no_unsandboxed_run() {
    const DEPTH: usize = 60;
    let dir = writable_dir(User::Root);
    let level = dir.path().join("regrow.sh");
    std::fs::write(
        &level,
        "n=$1; if [ \"$n\" -gt 0 ]; then (while :; do sh \"$0\" $((n - 1)) \"$2\"; done) & fi; \
         exec sleep \"$2.$n\"\n",
    )
    .unwrap();
    let v2_mount = cgroup2_mount();
    for killed in [true, false] {
        let (cgroup, left) = run_a_tree(dir.path(), &level, DEPTH, DEPTH, killed);
        assert_eq!(left, 0, "killed={killed}: {left} of the tree outlived the run");
        let leaf = cgroup.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or_default();
        if nix::unistd::geteuid().is_root() && v2_mount.is_some() {
            assert!(leaf.contains("/cordon-"), "not in a cgroup of its own: {cgroup}");
        }
        if let (false, Some(mount)) =
            (killed, v2_mount.as_ref().filter(|_| leaf.contains("/cordon-")))
        {
            let path = mount.join(leaf.trim_start_matches('/'));
            assert!(!path.exists(), "the command's cgroup {} was left", path.display());
        }
    }
}

/// Where the cgroup v2 hierarchy is mounted (writable), if it is: `/sys/fs/cgroup`, or
/// `/sys/fs/cgroup/unified` beside cgroup v1's controllers.
fn cgroup2_mount() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let writable = fields.get(5)?.split(',').all(|option| option != "ro");
        (right.starts_with("cgroup2 ") && writable).then(|| PathBuf::from(fields[4]))
    })
}
