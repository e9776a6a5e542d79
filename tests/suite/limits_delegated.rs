//! Resource limits for an unprivileged cordon in a cgroup v2 subtree delegated to it, checked
//! from outside: set up as root the way systemd does for `systemd-run --user --scope -p
//! Delegate=yes` (a group whose `cgroup.procs`, `cgroup.subtree_control` and `cgroup.threads`
//! belong to uid 65534 — the user's manager — and in it a fresh delegated group, the scope,
//! for each cordon started), then cordon run as uid 65534 in its scope.
//!
//! The delegation needs a cgroup v2 hierarchy with the memory and pids controllers; a host
//! whose v2 hierarchy has none (a hybrid host: they are bound to cgroup v1) skips with a
//! reason that names its configuration, fatal only under `CORDON_TEST_REQUIRE_CGROUP=1`
//! (which the kernel matrix sets: its VMs mount cgroup2 with every controller).

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use super::util::*;

const NOBODY: u32 = 65534;

/// A group delegated to uid 65534, where each cordon starts in a scope of its own; everything
/// in it is killed and removed when dropped.
struct Delegation {
    top: PathBuf,
}

/// One delegated group inside the delegation, where a cordon starts.
struct Scope {
    dir: PathBuf,
}

/// Skips a test when this host cannot delegate a cgroup v2 subtree with memory and pids.
macro_rules! require_delegation {
    () => {
        match Delegation::new() {
            Ok(delegation) => delegation,
            Err(why) => {
                let reason = format!("host configuration, no delegated cgroup: {why}");
                if std::env::var_os("CORDON_TEST_REQUIRE_CGROUP").is_some_and(|v| v == "1") {
                    panic!("CORDON_TEST_REQUIRE_CGROUP=1 but this test must skip: {reason}");
                }
                eprintln!("SKIPPED: {reason}");
                return;
            }
        }
    };
}

/// The cgroup v2 mount point.
fn v2_root() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount_point = left.split(' ').nth(4)?;
        right.starts_with("cgroup2 ").then(|| PathBuf::from(mount_point))
    })
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new().write(true).open(path)?.write_all(value.as_bytes())
}

/// Hands `dir` to uid 65534 as systemd does: the directory and the files a delegate writes.
fn delegate(dir: &Path) {
    for file in ["", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"] {
        chown(dir.join(file), Some(NOBODY), Some(NOBODY)).unwrap();
    }
}

impl Delegation {
    fn new() -> Result<Delegation, String> {
        if !is_root() {
            return Err("the suite does not run as root, so it cannot delegate".into());
        }
        let root = v2_root().ok_or("no cgroup v2 hierarchy is mounted")?;
        let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap();
        let has = |name: &str| controllers.split_whitespace().any(|c| c == name);
        if !has("memory") || !has("pids") {
            return Err(format!(
                "the cgroup v2 hierarchy at {} has no memory and pids controllers (they are \
                 bound to cgroup v1)",
                root.display()
            ));
        }
        for controller in ["+memory", "+pids"] {
            write(&root.join("cgroup.subtree_control"), controller)
                .map_err(|e| format!("cannot enable {controller} at {}: {e}", root.display()))?;
        }
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let top = root.join(format!("e2e-delegated-{}-{n}", std::process::id()));
        std::fs::create_dir(&top).map_err(|e| format!("cannot create {}: {e}", top.display()))?;
        let delegation = Delegation { top };
        // What systemd writes for a delegated unit, so that its groups have the controllers.
        write(&delegation.top.join("cgroup.subtree_control"), "+memory +pids").unwrap();
        delegate(&delegation.top);
        Ok(delegation)
    }

    /// A fresh delegated group for one cordon (a scope of the user's manager): a group
    /// where cordon ran has its leaf and the controllers enabled, and takes no process again.
    fn scope(&self) -> Scope {
        static SCOPES: AtomicU32 = AtomicU32::new(0);
        let dir = self.top.join(format!("run-{}.scope", SCOPES.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir(&dir).unwrap();
        delegate(&dir);
        Scope { dir }
    }
}

impl Scope {
    /// `cordon <args>` as uid 65534, started in the delegated group.
    fn cordon(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"echo 0 > "$1/cgroup.procs" && shift && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@""#)
            .arg("sh")
            .arg(&self.dir)
            .arg(nobody_binary())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// `cordon exec -C dir <flags> -- sh -c script` as uid 65534 in the group; with its pid.
    fn exec_sh(&self, flags: &[&str], dir: &Path, script: &str) -> (Run, u32) {
        let mut args = vec!["exec", "-C", dir.to_str().unwrap()];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        let child = self.cordon(&args).spawn().unwrap();
        let pid = child.id();
        (child.wait_with_output().unwrap().into(), pid)
    }

    /// The groups in this scope (cordon's group), sorted.
    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn subtree_control(&self) -> String {
        std::fs::read_to_string(self.dir.join("cgroup.subtree_control")).unwrap()
    }
}

/// Kills every process in `dir`'s subtree and removes it, deepest first.
fn remove_tree(dir: &Path) {
    let _ = write(&dir.join("cgroup.kill"), "1");
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    for _ in 0..500 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        let _ = write(&dir.join("cgroup.kill"), "1");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    eprintln!("cannot remove {}", dir.display());
}

impl Drop for Delegation {
    fn drop(&mut self) {
        remove_tree(&self.top);
    }
}

#[track_caller]
fn assert_exceeded(run: &Run, key: &str, shown: &str) {
    assert_eq!(run.code, Some(122), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let line = format!("cordon: the command exceeded its {key} limit ({shown})");
    assert!(run.stderr.contains(&line), "no {line:?} in: {}", run.stderr);
}

/// A workspace uid 65534 may write.
fn workspace() -> tempfile::TempDir {
    let dir = scratch();
    chown_nobody(dir.path());
    dir
}

#[test]
fn delegated_a_memory_hog_is_stopped_and_named_and_only_cordons_own_leaf_stays() {
    require_sandbox!(1);
    let delegation = require_delegation!();
    let dir = workspace();
    let hog = "dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null && echo done";
    let scope = delegation.scope();
    let (run, first) = scope.exec_sh(&["--limit", "memory=32M"], dir.path(), hog);
    assert_exceeded(&run, "memory", "32 MiB");
    assert!(!run.stdout.contains("done"), "{}", run.stdout);
    // Left behind: cordon's own leaf, empty (it was in it until it exited), nothing else.
    let own = format!("cordon-{first}");
    assert_eq!(scope.entries(), vec![own.clone()]);
    let procs = std::fs::read_to_string(scope.dir.join(&own).join("cgroup.procs")).unwrap();
    assert_eq!(procs.trim(), "", "a process stayed in cordon's leaf");
    // The same command under a generous limit.
    let scope = delegation.scope();
    let (run, second) = scope.exec_sh(&["--limit", "memory=1G"], dir.path(), hog);
    run.assert_ok();
    assert!(run.stdout.contains("done"), "{}", run.stdout);
    assert_eq!(scope.entries(), vec![format!("cordon-{second}")]);
}

#[test]
fn delegated_a_fork_bomb_is_held_at_pids_and_the_process_count_returns() {
    require_sandbox!(1);
    let delegation = require_delegation!();
    let dir = workspace();
    let before = processes_matching("^sleep 38$");
    let bomb = "i=0; while [ $i -lt 200 ]; do sleep 38 & i=$((i+1)); done; wait";
    let (run, _) = delegation.scope().exec_sh(&["--limit", "pids=20"], dir.path(), bomb);
    assert_exceeded(&run, "pids", "20 processes");
    eventually_matching("^sleep 38$", before);
    assert!(processes_matching("^sleep 38$") <= before, "sleeps outlived the run");
    let fine = "i=0; while [ $i -lt 30 ]; do sleep 0.1 & i=$((i+1)); done; wait; echo done";
    let scope = delegation.scope();
    let (run, pid) = scope.exec_sh(&["--limit", "pids=200"], dir.path(), fine);
    run.assert_ok();
    assert!(run.stdout.contains("done"));
    assert_eq!(scope.entries(), vec![format!("cordon-{pid}")]);
}

#[test]
fn delegated_doctor_says_cgroup_and_changes_nothing() {
    let delegation = require_delegation!();
    let scope = delegation.scope();
    let run: Run = scope.cordon(&["doctor", "--json"]).output().unwrap().into();
    let doctor: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let limits = &doctor["limits"];
    for key in ["memory", "pids", "cpu"] {
        let how = limits["limits"].as_array().unwrap().iter().find(|l| l["key"] == key).unwrap();
        assert_eq!(how["how"], "cgroup", "{key}: {limits}");
    }
    let cgroup = limits["cgroup"].as_str().unwrap();
    assert!(cgroup.contains("delegated"), "{cgroup}");
    assert!(cgroup.contains(scope.dir.to_str().unwrap()), "{cgroup}");
    let run: Run = scope.cordon(&["doctor"]).output().unwrap().into();
    assert!(
        run.stdout.contains("a cgroup per command: cgroup v2, the subtree delegated"),
        "{}",
        run.stdout
    );
    // Doctor only looks: no leaf made, no controller enabled.
    assert_eq!(scope.entries(), Vec::<String>::new());
    assert_eq!(scope.subtree_control().trim(), "");
}

#[test]
fn delegated_a_group_shared_with_other_processes_is_refused_with_the_way_out() {
    require_sandbox!(1);
    let delegation = require_delegation!();
    let dir = workspace();
    let scope = delegation.scope();
    // A process of the user's already in cordon's group, like the shell of a login scope.
    let mut neighbour = Command::new("sh")
        .arg("-c")
        .arg(r#"echo 0 > "$1/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- sleep 300"#)
        .arg("sh")
        .arg(&scope.dir)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + scaled(std::time::Duration::from_secs(5));
    while std::fs::read_to_string(scope.dir.join("cgroup.procs")).unwrap().trim().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the neighbour never joined");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let marker = dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    for limit in ["memory=64M", "pids=64"] {
        let (run, _) = scope.exec_sh(&["--limit", limit], dir.path(), &script);
        assert_eq!(run.code, Some(125), "{limit}: {}", run.stderr);
        assert!(run.stderr.contains("other processes share cordon's cgroup"), "{}", run.stderr);
        assert!(
            run.stderr.contains("systemd-run --user --scope -p Delegate=yes"),
            "{}",
            run.stderr
        );
        assert!(!marker.exists(), "{limit}: the command ran");
    }
    let run: Run = scope.cordon(&["doctor", "--json"]).output().unwrap().into();
    let doctor: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let why = doctor["limits"]["no_cgroup"].as_str().unwrap_or_default();
    assert!(why.contains("other processes share cordon's cgroup"), "{}", doctor["limits"]);
    // With best effort it runs, on rlimits.
    let (run, _) = scope.exec_sh(&["--best-effort", "--limit", "memory=256M"], dir.path(), &script);
    run.assert_ok();
    assert!(marker.exists());
    // The group is as it was: no leaf, no controller, the neighbour still there.
    assert_eq!(scope.entries(), Vec::<String>::new());
    assert_eq!(scope.subtree_control().trim(), "");
    let _ = neighbour.kill();
    let _ = neighbour.wait();
}

#[test]
fn delegated_a_sandboxed_command_cannot_raise_its_limits_or_leave_its_cgroup() {
    require_sandbox!(1);
    let delegation = require_delegation!();
    let dir = workspace();
    // The command's cgroup files belong to uid 65534, as the command does: only the sandbox
    // stands between it and them. It tries to raise its limits, to move into cordon's own
    // leaf and into a group of its own, then allocates past the limit.
    let script = format!(
        r#"leaf=$(sed -n 's/^0:://p' /proc/self/cgroup); cg={root}$leaf; group=$(dirname "$cg")
        echo max > "$cg/memory.max" && echo raised memory
        echo max > "$cg/memory.swap.max" && echo raised swap
        echo max > "$cg/pids.max" && echo raised pids
        echo 0 > "$cg/memory.oom.group" && echo oom group off
        for own in "$group"/cordon-*; do [ "$own" = "$cg" ] || {{ echo 0 > "$own/cgroup.procs" && echo left for "$own"; }}; done
        mkdir "$group/escape" && echo 0 > "$group/escape/cgroup.procs" && echo left for escape
        echo 0 > "$group/cgroup.procs" && echo left for the group
        dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null && echo done"#,
        root = v2_root().unwrap().display(),
    );
    // With best effort first: where uid 65534 has no mount view (no user namespaces), that is
    // Landlock alone keeping the command from /sys, and the plain runs are refused there.
    let runs = [
        &["--best-effort", "-s", "workspace-write"][..],
        &["-s", "workspace-write"][..],
        &["-s", "read-only"][..],
    ];
    for flags in runs {
        let mut all = flags.to_vec();
        all.extend_from_slice(&["--limit", "memory=32M", "--limit", "pids=64"]);
        let scope = delegation.scope();
        let (run, _) = scope.exec_sh(&all, dir.path(), &script);
        assert_eq!(run.code, Some(122), "{flags:?}: {}\n{}", run.stdout, run.stderr);
        assert_exceeded(&run, "memory", "32 MiB");
        for said in ["raised", "oom group off", "left for", "done"] {
            assert!(!run.stdout.contains(said), "{flags:?} {said}: {}", run.stdout);
        }
        let entries = scope.entries();
        assert_eq!(entries.len(), 1, "{flags:?}: the command made a cgroup: {entries:?}");
    }
}

/// One `exec_command` call to a live executor; the response line.
fn call(
    stdin: &mut std::process::ChildStdin,
    stdout: &mut impl std::io::BufRead,
    id: u32,
    cmd: &str,
) -> String {
    use std::io::Write;
    let request = serde_json::json!({"type": "call_tool", "requestId": id.to_string(),
        "toolName": "exec_command", "arguments": {"cmd": cmd, "login": false}});
    writeln!(stdin, "{request}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    line
}

#[test]
fn delegated_a_long_lived_executor_moves_every_thread_and_keeps_its_own_leaf() {
    require_sandbox!(1);
    let delegation = require_delegation!();
    let dir = workspace();
    let scope = delegation.scope();
    let mut executor = scope
        .cordon(&["executor", "-C", dir.path().to_str().unwrap(), "--limit", "memory=32M"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = executor.id();
    let mut stdin = executor.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(executor.stdout.take().unwrap());
    let hog = "dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null && echo done";
    // Each call makes a command cgroup beside the executor's own leaf, whose sweep of stale
    // groups must spare that leaf: the executor lives.
    for id in 1..=3 {
        let answer = call(&mut stdin, &mut stdout, id, hog);
        assert!(answer.contains("exceeded its memory limit (32 MiB)"), "call {id}: {answer}");
        assert!(!answer.contains("done"), "call {id}: {answer}");
        let leaf = format!("cordon-{pid}");
        assert_eq!(scope.entries(), vec![leaf.clone()], "call {id}");
        // Every thread of the executor is in its leaf, none left in the group.
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        for thread in threads.flatten() {
            let cgroup = std::fs::read_to_string(thread.path().join("cgroup")).unwrap();
            assert!(cgroup.trim_end().ends_with(&format!("/{leaf}")), "{cgroup}");
        }
        let procs = std::fs::read_to_string(scope.dir.join("cgroup.procs")).unwrap();
        assert_eq!(procs.trim(), "", "a process stayed in the group");
    }
    let answer = call(&mut stdin, &mut stdout, 9, "echo fine");
    assert!(answer.contains("fine"), "{answer}");
    drop(stdin);
    executor.wait().unwrap();
}
