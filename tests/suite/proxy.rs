//! Network by domain: `cordon exec --allow-domain` runs the command in a network
//! namespace with only loopback, and cordon's proxy decides each destination. Loopback only:
//! a Python server on 127.0.0.1 stands in for the internet, and the test-only resolver override
//! (`CORDON_TEST_RESOLVE`) maps `allowed.test` and `denied.test` to it. On macOS the Seatbelt
//! profile lets the command reach only the proxy's port; the proxy's decisions are the same.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::util::*;

/// The loopback server of `tests/helpers/http_server.py`, killed on drop.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.log");
        std::fs::write(&log, "").unwrap();
        let mut child = Command::new(python())
            .arg(helper_program("http_server.py"))
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap();
        Server { child, port, log, _dir: dir }
    }

    /// The paths the server saw, in order.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap().lines().map(str::to_owned).collect()
    }

    /// `cordon executor <flags>` with the resolver override.
    fn executor(&self, flags: &[&str]) -> super::executor::Executor {
        let resolve = self.resolve();
        super::executor::Executor::start_with_env(flags, &[("CORDON_TEST_RESOLVE", &resolve)])
    }

    fn resolve(&self) -> String {
        format!("allowed.test=127.0.0.1:{0},denied.test=127.0.0.1:{0}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

macro_rules! require_network_namespace {
    () => {
        require_sandbox!(1);
        skip_unless!(
            features().path_rules(),
            "the domain allow-list needs the mount view's namespaces"
        );
        skip_unless!(Path::new("/usr/bin/curl").exists(), "needs curl (apt-get install -y curl)");
    };
}

/// `cordon exec -a never <flags> -C dir -- sh -c script` with the resolver override.
fn exec_sh(server: &Server, flags: &[&str], dir: &Path, script: &str) -> Run {
    let mut args = vec!["exec", "-a", "never"];
    args.extend_from_slice(flags);
    let dir = dir.to_str().unwrap();
    args.extend_from_slice(&["-C", dir, "--", "sh", "-c", script]);
    let mut command = cordon_command(User::Root, &args);
    command.env("CORDON_TEST_RESOLVE", server.resolve());
    command.output().unwrap().into()
}

#[test]
fn curl_and_urllib_reach_an_allowed_host_through_the_proxy() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let script = format!(
        "curl -sS --fail http://allowed.test/curl-plain && \
         curl -sS --fail --proxytunnel http://allowed.test:{port}/curl-connect && \
         {py} -c 'import urllib.request; print(urllib.request.urlopen(\"http://allowed.test/urllib\").read().decode())'",
        port = server.port,
        py = python()
    );
    let run = exec_sh(&server, &["--allow-domain", "allowed.test"], root.path(), &script);
    run.assert_ok();
    assert_eq!(run.stdout.matches("hello from the loopback server").count(), 3, "{}", run.stdout);
    assert_eq!(server.requests(), ["/curl-plain", "/curl-connect", "/urllib"]);
}

/// As an unprivileged user the mount view's namespaces come from a user namespace: the
/// listener the helper hands over belongs to a network namespace that user namespace owns, and
/// the proxy (outside, the same user) serves it the same.
#[cfg(target_os = "linux")]
#[test]
fn an_unprivileged_user_gets_the_same_proxy() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let home = scratch();
    chown_nobody(home.path());
    let script = "curl -sS --fail http://allowed.test/nobody; curl -sS http://denied.test/no";
    let dir = root.path().to_str().unwrap();
    let mut command = cordon_command(
        User::Nobody,
        &[
            "exec",
            "-a",
            "never",
            "--allow-domain",
            "allowed.test",
            "-C",
            dir,
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    command
        .env("CORDON_TEST_RESOLVE", server.resolve())
        .env("CORDON_HOME", home.path().join(".cordon"))
        .env("HOME", home.path());
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    assert!(run.stdout.contains("hello from the loopback server"), "{}", run.stdout);
    assert!(run.stdout.contains("no rule of the network allow-list matches denied.test:80"));
    assert_eq!(server.requests(), ["/nobody"]);
}

#[test]
fn a_denied_host_gets_403_naming_the_rule_and_the_summary_lists_it() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let run = exec_sh(
        &server,
        &["-c", r#"network={ allow = ["*.test"], deny = ["denied.test"] }"#],
        root.path(),
        "curl -sS http://denied.test/nope; curl -sS --fail http://denied.test/nope",
    );
    assert_eq!(run.code, Some(22), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(r#"denied by the rule "denied.test" in the network deny list"#),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("cordon: the network allow-list refused denied.test:80"),
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

/// A deny entry naming an address holds for every name that resolves there: `alias.test`,
/// allowed by `*.test`, resolves to the denied address and is refused; `allowed.test`, which
/// resolves elsewhere, still passes (the control). Checked at the two servers.
#[test]
fn a_deny_entry_naming_an_address_holds_for_every_name_that_resolves_there() {
    require_network_namespace!();
    let denied = Server::start();
    let allowed = Server::start();
    let root = scratch();
    let resolve =
        format!("alias.test=127.0.0.1:{},allowed.test=127.0.0.1:{}", denied.port, allowed.port);
    let rules =
        format!(r#"network={{ allow = ["*.test"], deny = ["127.0.0.1:{}"] }}"#, denied.port);
    let dir = root.path().to_str().unwrap();
    let script = "curl -sS http://alias.test/nope; curl -sS --fail http://allowed.test/yes";
    let run: Run = cordon_command(
        User::Root,
        &["exec", "-a", "never", "-c", &rules, "-C", dir, "--", "sh", "-c", script],
    )
    .env("CORDON_TEST_RESOLVE", &resolve)
    .output()
    .unwrap()
    .into();
    run.assert_ok();
    assert!(denied.requests().is_empty(), "{:?}", denied.requests());
    assert_eq!(allowed.requests(), ["/yes"], "{}{}", run.stdout, run.stderr);
}

#[test]
fn json_lists_every_connection_and_the_denied_hosts() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let run = exec_sh(
        &server,
        &["--json", "--allow-domain", "allowed.test"],
        root.path(),
        "curl -sS -o /dev/null http://allowed.test/a; curl -sS -o /dev/null http://denied.test/b",
    );
    run.assert_ok();
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["network_denied"], serde_json::json!(["denied.test:80"]));
    let connections = &document["attempts"][0]["network"]["connections"];
    assert_eq!(connections[0]["host"], "allowed.test");
    assert_eq!(connections[0]["allowed"], true);
    assert_eq!(connections[0]["rule"], "allowed.test");
    assert_eq!(connections[1]["host"], "denied.test");
    assert_eq!(connections[1]["allowed"], false);
}

#[test]
fn a_direct_connect_to_the_hosts_loopback_server_fails_and_it_sees_nothing() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let script = format!(
        "curl -sS --noproxy '*' -m 5 http://127.0.0.1:{}/direct; echo direct=$?",
        server.port
    );
    let run = exec_sh(&server, &["--allow-domain", "allowed.test"], root.path(), &script);
    run.assert_ok();
    assert!(run.stdout.contains("direct=7"), "{}{}", run.stdout, run.stderr);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

/// Linux: the network namespace has only loopback (ENETUNREACH); macOS refuses with EPERM.
#[cfg(target_os = "linux")]
#[test]
fn udp_out_fails() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let listener = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "{} -c 'import socket\nfor dest in [(\"127.0.0.1\", {port}), (\"192.0.2.1\", 53)]:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    try:\n        s.sendto(b\"x\", dest); print(\"sent\", dest)\n    except OSError as e:\n        print(\"refused\", e.errno)'",
        python()
    );
    let run = exec_sh(&server, &["--allow-domain", "allowed.test"], root.path(), &script);
    run.assert_ok();
    // To 127.0.0.1 the datagram goes to the namespace's own loopback, where nothing listens.
    assert!(run.stdout.contains(&format!("refused {}", libc::ENETUNREACH)), "{}", run.stdout);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(listener.recv(&mut [0u8; 8]).is_err(), "the host's UDP socket got a datagram");
}

#[test]
fn a_loopback_target_allowed_for_another_port_is_refused_and_the_advice_names_no_port_it_chose() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    // `localhost` and `127.0.0.1` are allowed, for another port: refused through the proxy.
    let refused = format!(
        "curl -sS --noproxy '' -x \"$HTTP_PROXY\" http://localhost:{0}/name; \
         curl -sS --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{0}/address; exit 1",
        server.port
    );
    let localhost = format!("localhost:{}", server.port + 1);
    let other_port = format!("127.0.0.1:{}", server.port + 1);
    let run = exec_sh(
        &server,
        &["--allow-domain", &localhost, "--allow-domain", &other_port],
        root.path(),
        &refused,
    );
    // A loopback port is one of this machine's services, chosen by the command: the advice
    // gives the form, never that port.
    assert!(run.stdout.contains("(--allow-domain 127.0.0.1:PORT)"), "{}", run.stdout);
    for chosen in [format!("localhost:{}", server.port), format!("127.0.0.1:{}", server.port)] {
        let advised = format!("--allow-domain {chosen}");
        assert!(!run.stdout.contains(&advised), "{}", run.stdout);
        assert!(!run.stderr.contains(&advised), "{}", run.stderr);
    }
    assert!(run.stderr.contains("(--allow-domain 127.0.0.1:PORT)"), "{}", run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    // `127.0.0.1:PORT` names the address and port itself: allowed, through the proxy too.
    let named = format!("127.0.0.1:{}", server.port);
    let script = format!(
        "curl -sS --fail --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{}/named",
        server.port
    );
    exec_sh(&server, &["--allow-domain", &named], root.path(), &script).assert_ok();
    assert_eq!(server.requests(), ["/named"]);
}

/// A peer behind the proxy is untrusted: garbage, a thousand slowloris clients holding connections
/// open mid-header, and a hundred concurrent requests; the proxy keeps serving real requests
/// through all of it.
#[cfg(target_os = "linux")]
#[test]
fn garbage_slowloris_and_a_thousand_connections_leave_the_proxy_serving() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let code = r#"
import os, socket, threading, urllib.request
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"\x00\xff NOT HTTP\r\n\r\n")
print("garbage answer", s.recv(64)[:12])
held = []
for i in range(1000):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(b"GET http://allowed.test/slow HTTP/1.1\r\nHost: allowed.test\r\nX-Slow: ")
    held.append(c)
print("held", len(held))
during = [urllib.request.urlopen("http://allowed.test/during", timeout=60).status for _ in range(5)]
print("during", during.count(200))
results = {}
def one(i):
    try:
        results[i] = urllib.request.urlopen("http://allowed.test/c%d" % i, timeout=60).status
    except Exception as e:
        results[i] = repr(e)
threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
[t.start() for t in threads]; [t.join() for t in threads]
# On a loaded machine a burst of a hundred can outlast a client timeout; what matters is that
# the proxy still serves each of them, so one that timed out is asked once more, alone.
print("burst", list(results.values()).count(200))
for i in [i for i, status in results.items() if status != 200]:
    one(i)
print("ok", list(results.values()).count(200), len(results))
print(urllib.request.urlopen("http://allowed.test/after").status)
"#;
    let script = format!("{} -c '{}'", python(), code.replace('\'', "'\\''"));
    // The usual soft limit of open files (1024), which a thousand connections through the
    // proxy (two descriptors each) would exceed unless cordon raises it.
    let dir = root.path().to_str().unwrap();
    let run: Run = Command::new("prlimit")
        .arg("--nofile=1024:")
        .args([CORDON, "exec", "-a", "never", "--allow-domain", "allowed.test", "-C", dir])
        .args(["--", "sh", "-c", &script])
        .env("CORDON_TEST_RESOLVE", server.resolve())
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    run.assert_ok();
    assert!(run.stdout.contains("garbage answer b'HTTP/1.1 400'"), "{}", run.stdout);
    assert!(run.stdout.contains("held 1000\nduring 5\n"), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("ok 100 100"), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.trim_end().ends_with("200"), "{}", run.stdout);
}

/// A command that uses up the proxy's descriptors (more connections than cordon's hard limit
/// of open files) does not make the proxy spin on `accept` (EMFILE at once, again and again):
/// cordon's CPU time stays low while they are held, and the proxy serves again after.
#[cfg(target_os = "linux")]
#[test]
fn running_the_proxy_out_of_descriptors_does_not_make_it_spin() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    // Three processes of 100 connections each (the command has the same low limit).
    let code = r#"
import os, socket, sys, time, urllib.request
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
children = []
ready_r, ready_w = os.pipe()
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        held = []
        for _ in range(100):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                pass
        os.write(ready_w, b"x")
        time.sleep(3)
        os._exit(0)
    children.append(pid)
for _ in range(3):
    os.read(ready_r, 1)
time.sleep(0.2)
print("holding", flush=True)
for pid in children:
    os.waitpid(pid, 0)
print("after", urllib.request.urlopen("http://allowed.test/after", timeout=30).status, flush=True)
"#;
    let script = format!("{} -c '{}'", python(), code.replace('\'', "'\\''"));
    let dir = root.path().to_str().unwrap();
    let mut child = Command::new("prlimit")
        .arg("--nofile=200:200")
        .args([CORDON, "exec", "-a", "never", "--allow-domain", "allowed.test", "-C", dir])
        .args(["--", "sh", "-c", &script])
        .env("CORDON_TEST_RESOLVE", server.resolve())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // prlimit execs cordon: same pid.
    let cpu_ticks = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let holding = lines.next().unwrap().unwrap();
    assert_eq!(holding, "holding");
    let before = cpu_ticks(child.id());
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let spent = cpu_ticks(child.id()) - before;
    let after = lines.next().unwrap().unwrap();
    assert!(child.wait().unwrap().success());
    // Clock ticks (100 a second): a spinning accept loop burns ~150 in 1.5 s.
    assert!(spent < 40, "cordon used {spent} ticks of CPU in 1.5 s while its proxy was full");
    assert_eq!(after, "after 200");
}

#[test]
fn socks5_on_all_proxy_goes_through_the_same_list() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    // curl speaks SOCKS5 to $ALL_PROXY (socks5h: the proxy resolves the name).
    let script = format!(
        "echo all=$ALL_PROXY; curl -sS --fail -x \"$ALL_PROXY\" http://allowed.test:{port}/socks; \
         curl -sS -x \"$ALL_PROXY\" http://denied.test:{port}/no; echo denied=$?; \
         curl -sS --noproxy '' -x \"$ALL_PROXY\" http://127.0.0.1:{port}/direct; echo loopback=$?",
        port = server.port
    );
    let run = exec_sh(&server, &["--json", "--allow-domain", "allowed.test"], root.path(), &script);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let stdout = document["attempts"][0]["stdout"]["text"].as_str().unwrap_or_default();
    assert!(stdout.contains("all=socks5h://127.0.0.1:"), "{document}");
    assert!(stdout.contains("hello from the loopback server"), "{document}");
    // curl's exit 97: the SOCKS5 proxy refused the connection.
    assert!(stdout.contains("denied=97") && stdout.contains("loopback=97"), "{document}");
    assert_eq!(server.requests(), ["/socks"]);
    let connections = document["attempts"][0]["network"]["connections"].as_array().unwrap();
    let summary: Vec<(String, bool)> = connections
        .iter()
        .map(|c| {
            (
                format!("{} {}", c["method"].as_str().unwrap(), c["host"].as_str().unwrap()),
                c["allowed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("SOCKS5 allowed.test".to_owned(), true),
            ("SOCKS5 denied.test".to_owned(), false),
            ("SOCKS5 127.0.0.1".to_owned(), false),
        ]
    );
}

#[test]
fn cordon_sandbox_with_a_domain_list_runs_the_proxy_too() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let script =
        "curl -sS --fail http://allowed.test/sandbox; curl -sS http://denied.test/no; echo";
    let dir = root.path().to_str().unwrap();
    let mut command = cordon_command(
        User::Root,
        &[
            "sandbox",
            PLATFORM,
            "-s",
            "workspace-write",
            "--allow-domain",
            "allowed.test",
            "-C",
            dir,
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    command.env("CORDON_TEST_RESOLVE", server.resolve());
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    assert!(run.stdout.contains("hello from the loopback server"), "{}", run.stdout);
    assert!(run.stdout.contains("no rule of the network allow-list matches denied.test:80"));
    assert!(
        run.stderr.contains("cordon: the network allow-list refused denied.test:80"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests(), ["/sandbox"]);
}

#[test]
fn executor_sessions_get_a_proxy_that_lives_as_long_as_the_session() {
    require_network_namespace!();
    let server = Server::start();
    let mut ex = server.executor(&["-s", "workspace-write", "--allow-domain", "allowed.test"]);
    let text = ex.text(
        "exec_command",
        serde_json::json!({"cmd": "curl -sS http://allowed.test/one; curl -sS http://denied.test/two", "login": false}),
    );
    assert!(text.contains("hello from the loopback server"), "{text}");
    assert!(
        text.contains(
            "Network: the allow-list refused denied.test:80; allow a host with --allow-domain"
        ),
        "{text}"
    );
    // A terminal session: the proxy still serves the command typed later.
    let text = ex.text(
        "exec_command",
        serde_json::json!({"cmd": "sh", "login": false, "tty": true, "yield_time_ms": 500}),
    );
    let id = super::executor::session_id(&text).unwrap_or_else(|| panic!("{text}"));
    let text = ex.text(
        "write_stdin",
        serde_json::json!({"session_id": id, "chars": "curl -sS http://allowed.test/later; echo fin''ished\n", "yield_time_ms": 5000}),
    );
    let mut all = text;
    let deadline = std::time::Instant::now() + scaled(std::time::Duration::from_secs(10));
    while !all.contains("finished") && std::time::Instant::now() < deadline {
        all.push_str(
            &ex.text("write_stdin", serde_json::json!({"session_id": id, "yield_time_ms": 1000})),
        );
    }
    assert!(all.contains("hello from the loopback server"), "{all}");
    assert_eq!(server.requests(), ["/one", "/later"]);
}

/// A call's `allowed_domains` only narrows: under the executor's list both apply; with the
/// network fully on it becomes the list; with no network it is refused.
#[test]
fn an_executor_call_can_narrow_the_network_but_never_widen_it() {
    require_network_namespace!();
    let server = Server::start();
    let both = "curl -sS http://allowed.test/a; echo; curl -sS http://denied.test/b";
    let call =
        serde_json::json!({"cmd": both, "login": false, "allowed_domains": ["allowed.test"]});

    let mut ex = server.executor(&["-s", "workspace-write", "--allow-domain", "*.test"]);
    let text = ex.text("exec_command", call.clone());
    assert!(text.contains("hello from the loopback server"), "{text}");
    assert!(text.contains("denied.test:80 is not among this call's allowed_domains"), "{text}");

    let mut ex = server.executor(&["-s", "workspace-write", "--network"]);
    let text = ex.text("exec_command", call.clone());
    assert!(text.contains("hello from the loopback server"), "{text}");
    assert!(text.contains("no rule of the network allow-list matches denied.test:80"), "{text}");

    let mut ex = server.executor(&["-s", "workspace-write"]);
    let response = ex.call("exec_command", call);
    assert_eq!(response["outcome"]["status"], "error", "{response}");
    let message = response["outcome"]["message"].as_str().unwrap();
    assert!(message.contains("cannot widen"), "{message}");
    assert_eq!(server.requests(), ["/a", "/a"]);
}

#[cfg(target_os = "linux")]
#[test]
fn the_helper_without_a_proxy_descriptor_leaves_only_loopback() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    // A policy with a domain list but no --proxy-fd (a direct, Codex-style call): the
    // command gets its own network namespace and nothing to reach through it.
    let script = format!(
        "echo net=$CORDON_SANDBOX_NETWORK_DISABLED; curl -sS --noproxy '*' -m 5 http://127.0.0.1:{}/x; echo rc=$?",
        server.port
    );
    let policy = r#"{"type":"workspace-write","network_domains":{"allow":["allowed.test"]}}"#;
    let run = helper(policy, root.path(), &["sh", "-c", &script]);
    run.assert_ok();
    assert!(run.stdout.contains("net=1") && run.stdout.contains("rc=7"), "{}", run.stdout);
    assert!(server.requests().is_empty());

    // A --proxy-fd that names no open descriptor: refused before the command runs.
    let mut command = helper_cmd(policy, root.path(), &["--proxy-fd", "987"], &["true"]);
    let run: Run = command.output().unwrap().into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains("--proxy-fd"), "{}", run.stderr);
}

#[cfg(target_os = "linux")]
mod forwarded;
#[cfg(target_os = "linux")]
mod handover;
#[cfg(target_os = "linux")]
mod loopback;
