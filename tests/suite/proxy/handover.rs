//! The hand-over of the command's listening socket to the proxy goes through a socketpair made
//! for that one launch, which only its helper inherits: nothing is created on disk, no other
//! run can hand its own listener to this run's proxy, and no descriptor of cordon's is left
//! for the command.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;

use super::super::util::*;
use super::{Server, exec_sh};

/// The names in `dir`.
fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The descriptors an `ls -l /proc/self/fd` lists, with what each points to.
fn descriptors(listing: &str) -> Vec<(u32, String)> {
    listing
        .lines()
        .filter_map(|line| {
            let (left, target) = line.split_once(" -> ")?;
            let fd = left.split_whitespace().last()?.parse().ok()?;
            Some((fd, target.trim().to_owned()))
        })
        .collect()
}

/// Only stdio and the descriptor `ls` reads the listing through.
#[track_caller]
fn assert_only_stdio_and_the_listing(output: &str) {
    let fds = descriptors(output);
    let numbers: Vec<u32> = fds.iter().map(|(fd, _)| *fd).collect();
    assert_eq!(&numbers[..3], [0, 1, 2], "{output}");
    let others = &fds[3..];
    assert!(
        others.len() == 1 && others[0].1.starts_with("/proc/") && others[0].1.ends_with("/fd"),
        "a descriptor besides stdio and the listing's own reached the command:\n{output}"
    );
}

#[test]
fn an_allow_domain_run_creates_nothing_in_tmpdir_or_tmp() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let base = std::fs::canonicalize("/var/tmp").unwrap();
    let tmpdir = tempfile::Builder::new().prefix("cordon-e2e-tmpdir-").tempdir_in(base).unwrap();
    let tmp_before = listing(Path::new("/tmp"));
    // Listed while the proxy serves, from inside, where a path would have to be.
    let script = "curl -sS http://allowed.test/x; echo \"own: [$(ls -A \"$TMPDIR\")]\"; \
                  ls -A /tmp | sed 's/^/tmp: /'";
    let mut command = cordon_command(
        User::Root,
        &["exec", "-a", "never", "--allow-domain", "allowed.test", "-C"],
    );
    command
        .arg(root.path())
        .args(["--", "sh", "-c", script])
        .env("TMPDIR", tmpdir.path())
        .env("CORDON_TEST_RESOLVE", server.resolve());
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    assert!(run.stdout.contains("hello from the loopback server"), "{}", run.stdout);
    assert!(run.stdout.contains("own: []"), "{}", run.stdout);
    assert_eq!(listing(tmpdir.path()), BTreeSet::new());
    // Other tests come and go in /tmp meanwhile (the suite's own `cordon-e2e-*` and
    // `cordon-tmux-*` among them): only cordon's names count, seen from inside during the run
    // and from outside after.
    let during: BTreeSet<String> = run
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("tmp: "))
        .map(str::to_owned)
        .collect();
    let after = listing(Path::new("/tmp"));
    let new_in_tmp: Vec<&String> = during
        .union(&after)
        .filter(|name| !tmp_before.contains(*name))
        .filter(|name| name.starts_with("cordon"))
        .filter(|name| !name.starts_with("cordon-e2e-") && !name.starts_with("cordon-tmux-"))
        .collect();
    assert_eq!(new_in_tmp, Vec::<&String>::new());
}

#[test]
fn two_concurrent_runs_with_different_lists_each_reach_only_their_own_host() {
    require_network_namespace!();
    let one = Server::start();
    let two = Server::start();
    let resolve = format!("one.test=127.0.0.1:{},two.test=127.0.0.1:{}", one.port, two.port);
    let root = scratch();
    let start = |allowed: &str, tag: &str| {
        let script = format!(
            "for i in 1 2 3 4 5; do curl -sS -m 5 http://one.test/{tag}$i; \
             curl -sS -m 5 http://two.test/{tag}$i; sleep 0.2; done"
        );
        let mut command =
            cordon_command(User::Root, &["exec", "-a", "never", "--allow-domain", allowed, "-C"]);
        command
            .arg(root.path())
            .args(["--", "sh", "-c", &script])
            .env("CORDON_TEST_RESOLVE", &resolve)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let a = start("one.test", "a");
    let b = start("two.test", "b");
    let a: Run = a.wait_with_output().unwrap().into();
    let b: Run = b.wait_with_output().unwrap().into();
    a.assert_ok();
    b.assert_ok();
    assert!(a.stdout.contains("refused"), "{}", a.stdout);
    assert!(b.stdout.contains("refused"), "{}", b.stdout);
    let paths = |tag: &str| (1..=5).map(|i| format!("/{tag}{i}")).collect::<Vec<_>>();
    assert_eq!(one.requests(), paths("a"));
    assert_eq!(two.requests(), paths("b"));
}

#[test]
fn a_command_with_a_domain_list_gets_no_descriptor_of_cordons() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let run = exec_sh(
        &server,
        &["--allow-domain", "allowed.test"],
        root.path(),
        "ls -l /proc/self/fd; curl -sS http://allowed.test/x",
    );
    run.assert_ok();
    assert!(run.stdout.contains("hello from the loopback server"), "{}", run.stdout);
    assert_only_stdio_and_the_listing(&run.stdout);
}

#[test]
fn an_executor_session_with_a_domain_list_gets_no_descriptor_of_cordons() {
    require_network_namespace!();
    let server = Server::start();
    let mut ex = server.executor(&["-s", "workspace-write", "--allow-domain", "allowed.test"]);
    let cmd = "ls -l /proc/self/fd; curl -sS http://allowed.test/pipe";
    let text = ex.text("exec_command", serde_json::json!({"cmd": cmd, "login": false}));
    assert!(text.contains("hello from the loopback server"), "{text}");
    assert_only_stdio_and_the_listing(&text);
    // A terminal session (the server has threads from then on, so the helper is exec'd).
    let cmd = "ls -l /proc/self/fd; curl -sS http://allowed.test/pty; echo fin''ished";
    let mut all = ex.text(
        "exec_command",
        serde_json::json!({"cmd": cmd, "login": false, "tty": true, "yield_time_ms": 2000}),
    );
    if let Some(id) = super::super::executor::session_id(&all) {
        let deadline = std::time::Instant::now() + scaled(std::time::Duration::from_secs(10));
        while !all.contains("finished") && std::time::Instant::now() < deadline {
            let more = serde_json::json!({"session_id": id, "yield_time_ms": 1000});
            all.push_str(&ex.text("write_stdin", more));
        }
    }
    assert!(all.contains("hello from the loopback server"), "{all}");
    assert_only_stdio_and_the_listing(&all.replace("\r\n", "\n"));
    // And a pipe session beside the terminal's threads.
    let cmd = "ls -l /proc/self/fd; curl -sS http://allowed.test/again";
    let text = ex.text("exec_command", serde_json::json!({"cmd": cmd, "login": false}));
    assert!(text.contains("hello from the loopback server"), "{text}");
    assert_only_stdio_and_the_listing(&text);
    assert_eq!(server.requests(), ["/pipe", "/pty", "/again"]);
}
