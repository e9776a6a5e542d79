//! Allowed loopback targets are forwarded into the command's network namespace: a client with
//! its default settings (which goes to loopback directly, whatever the proxy variables say)
//! reaches the host's server on an allowed `127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT`,
//! and nothing else on the host's loopback. Checked from outside: the request logs of a tiny
//! package index on the host's loopback (`tests/helpers/tiny_index.py`), one allowed and one
//! not.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::super::util::*;

/// `tests/helpers/tiny_index.py` on the host's loopback, killed on drop.
struct Index {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Index {
    fn start(family: &str) -> Index {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.log");
        std::fs::write(&log, "").unwrap();
        let mut child = Command::new(python())
            .arg(helper_program("tiny_index.py"))
            .args([log.as_os_str(), "0".as_ref(), family.as_ref()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("tiny index: {line:?}"));
        Index { child, port, log, _dir: dir }
    }

    /// The paths it served, in order.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap().lines().map(str::to_owned).collect()
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

macro_rules! require_clients {
    () => {
        require_network_namespace!();
        skip_unless!(Path::new("/usr/bin/node").exists(), "needs node (apt-get install -y nodejs)");
        skip_unless!(
            Command::new(python())
                .args(["-m", "pip", "--version"])
                .output()
                .is_ok_and(|o| o.status.success()),
            "needs pip for the suite's python (apt-get install -y python3-pip)"
        );
    };
}

/// `cordon exec -a never -s workspace-write <allow…> -C dir -- sh -c script` as `user`, with a
/// HOME (and CORDON_HOME) of that user's own.
fn exec_as(user: User, allow: &[String], dir: &Path, home: &Path, script: &str) -> Run {
    let mut args = vec!["exec", "-a", "never", "-s", "workspace-write"];
    for pattern in allow {
        args.extend_from_slice(&["--allow-domain", pattern]);
    }
    let dir = dir.to_str().unwrap();
    args.extend_from_slice(&["-C", dir, "--", "sh", "-c", script]);
    let mut command = cordon_command(user, &args);
    command.env("HOME", home).env("CORDON_HOME", home.join(".cordon"));
    command.output().unwrap().into()
}

/// A scratch directory and HOME the user owns.
fn dirs_for(user: User) -> (tempfile::TempDir, tempfile::TempDir) {
    let (root, home) = (scratch(), scratch());
    if user == User::Nobody {
        chown_nobody(root.path());
        chown_nobody(home.path());
    }
    (root, home)
}

/// Node's `http.get`, exiting 3 on an error (printed).
fn node_get(url: &str) -> String {
    format!(
        "node -e 'require(\"http\").get(\"{url}\", r => {{ r.resume(); r.on(\"end\", () => \
         console.log(\"node\", r.statusCode)) }}).on(\"error\", e => {{ console.error(e.message); \
         process.exit(3) }})'"
    )
}

#[test]
fn curl_urllib_pip_and_node_reach_an_allowed_loopback_port_and_no_other() {
    require_clients!();
    for user in USERS {
        let allowed = Index::start("4");
        let other = Index::start("4");
        let (root, home) = dirs_for(user);
        let (a, b) = (allowed.port, other.port);
        let py = python();
        let script = format!(
            "set -e
             curl -sS --fail -o /dev/null http://127.0.0.1:{a}/simple/?curl
             {py} -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{a}/simple/?urllib\").read()'
             {node}
             {py} -m pip download -q --no-cache-dir --no-deps -d dl --index-url http://127.0.0.1:{a}/simple cordon-tiny-pkg
             {py} -m pip install -q --no-cache-dir --no-deps --target tgt --index-url http://127.0.0.1:{a}/simple cordon-tiny-pkg
             ls dl tgt
             set +e
             curl -sS -m 5 -o /dev/null http://127.0.0.1:{b}/simple/?other; echo other-curl=$?
             {node_other}; echo other-node=$?
             curl -sS -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{b}/simple/?via-proxy",
            node = node_get(&format!("http://127.0.0.1:{a}/simple/?node")),
            node_other = node_get(&format!("http://127.0.0.1:{b}/simple/?other-node")),
        );
        let run = exec_as(user, &[format!("127.0.0.1:{a}")], root.path(), home.path(), &script);
        run.assert_ok();
        assert!(run.stdout.contains("node 200"), "{user:?}: {}", run.stdout);
        assert!(run.stdout.contains("cordon_tiny_pkg-0.1-py3-none-any.whl"), "{}", run.stdout);
        assert!(root.path().join("tgt/cordon_tiny_pkg/__init__.py").is_file(), "{user:?}");
        let requests = allowed.requests();
        for path in ["/simple/?curl", "/simple/?urllib", "/simple/?node"] {
            assert!(requests.contains(&path.to_owned()), "{user:?}: {path} not in {requests:?}");
        }
        assert_eq!(
            requests.iter().filter(|p| p.ends_with(".whl")).count(),
            2,
            "{user:?}: pip download and pip install each fetch the wheel: {requests:?}"
        );
        // The other port: refused directly inside the namespace, and through the proxy with
        // the form that would allow a loopback service — never the port the command chose.
        assert!(run.stdout.contains("other-curl=7"), "{user:?}: {}", run.stdout);
        assert!(run.stdout.contains("other-node=3"), "{user:?}: {}", run.stdout);
        assert!(run.stdout.contains("(--allow-domain 127.0.0.1:PORT)"), "{user:?}: {}", run.stdout);
        assert!(
            !run.stdout.contains(&format!("--allow-domain 127.0.0.1:{b}")),
            "{user:?}: {}",
            run.stdout
        );
        assert!(other.requests().is_empty(), "{user:?}: {:?}", other.requests());
    }
}

#[test]
fn localhost_allows_the_hosts_localhost_on_both_families_and_is_recorded() {
    require_clients!();
    let v4 = Index::start("4");
    let port = v4.port;
    let (root, home) = dirs_for(User::Root);
    // `[::1]` inside only where the kernel has IPv6 (the helper skips an address it lacks).
    let ipv6 = Path::new("/proc/net/if_inet6").exists();
    // Node tries ::1 and 127.0.0.1 for `localhost`; curl and urllib too. Inside, both are
    // forwarded; outside, the host's localhost answers on whichever it listens.
    let script = format!(
        "set -e
         curl -sS --fail -o /dev/null http://localhost:{port}/simple/?curl
         {curl6}
         {py} -c 'import urllib.request; urllib.request.urlopen(\"http://localhost:{port}/simple/?urllib\").read()'
         {node}",
        py = python(),
        node = node_get(&format!("http://localhost:{port}/simple/?node")),
        curl6 = if ipv6 { format!("curl -sS --fail -o /dev/null 'http://[::1]:{port}/simple/?curl6'") } else { String::new() },
    );
    let mut args = vec!["exec", "--json", "-a", "never", "-s", "workspace-write"];
    let pattern = format!("localhost:{port}");
    args.extend_from_slice(&["--allow-domain", &pattern, "-C", root.path().to_str().unwrap()]);
    args.extend_from_slice(&["--", "sh", "-c", &script]);
    let mut command = cordon_command(User::Root, &args);
    command.env("HOME", home.path()).env("CORDON_HOME", home.path().join(".cordon"));
    let run: Run = command.output().unwrap().into();
    run.assert_ok();
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let connections = document["attempts"][0]["network"]["connections"].as_array().unwrap();
    assert!(connections.len() >= 3, "{connections:?}");
    for connection in connections {
        assert_eq!(connection["host"], "localhost", "{connection}");
        assert_eq!(connection["method"], "FORWARD", "{connection}");
        assert_eq!(connection["allowed"], true, "{connection}");
        assert_eq!(connection["rule"], pattern, "{connection}");
    }
    let requests = v4.requests();
    let expected: &[&str] = if ipv6 {
        &["/simple/?curl", "/simple/?curl6", "/simple/?urllib", "/simple/?node"]
    } else {
        &["/simple/?curl", "/simple/?urllib", "/simple/?node"]
    };
    for path in expected {
        assert!(requests.contains(&(*path).to_owned()), "{path} not in {requests:?}");
    }
}

#[test]
fn an_allowed_ipv6_loopback_port_reaches_the_hosts_ipv6_server() {
    require_clients!();
    skip_unless!(
        std::net::TcpListener::bind("[::1]:0").is_ok(),
        "needs IPv6 on the host's loopback"
    );
    let v6 = Index::start("6");
    let port = v6.port;
    let (root, home) = dirs_for(User::Root);
    let script = format!(
        "curl -sS --fail -o /dev/null 'http://[::1]:{port}/simple/?curl6' && {}",
        node_get(&format!("http://[::1]:{port}/simple/?node6"))
    );
    let run = exec_as(User::Root, &[format!("[::1]:{port}")], root.path(), home.path(), &script);
    run.assert_ok();
    assert_eq!(v6.requests(), ["/simple/?curl6", "/simple/?node6"]);
}

/// The forwarded ports are bound before the command exists: the command can neither take one
/// (to play the host's server to its own clients) nor share it, however it asks.
#[test]
fn the_command_cannot_bind_a_forwarded_port_before_or_beside_the_forwarder() {
    require_clients!();
    for user in USERS {
        let index = Index::start("4");
        let port = index.port;
        let (root, home) = dirs_for(user);
        let probe = format!(
            r#"
import socket
for family, host in [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"), (socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")]:
    try:
        s = socket.socket(family)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind((host, {port})); s.listen(); print("took", host)
    except OSError as e:
        print("refused", host, e.errno)
"#
        );
        let script = format!(
            "{py} -c '{probe}' && curl -sS --fail -o /dev/null http://localhost:{port}/simple/?after",
            py = python()
        );
        let run = exec_as(user, &[format!("localhost:{port}")], root.path(), home.path(), &script);
        run.assert_ok();
        assert!(!run.stdout.contains("took"), "{user:?}: {}", run.stdout);
        assert_eq!(run.stdout.matches("refused").count(), 4, "{user:?}: {}", run.stdout);
        assert_eq!(index.requests(), ["/simple/?after"], "{user:?}");
    }
}

#[test]
fn a_loopback_target_without_a_port_is_refused_before_anything_runs() {
    require_network_namespace!();
    let (root, home) = dirs_for(User::Root);
    for pattern in ["127.0.0.1", "localhost", "[::1]"] {
        let run = exec_as(User::Root, &[pattern.to_owned()], root.path(), home.path(), "touch ran");
        assert_eq!(run.code, Some(125), "{pattern}: {}", run.stderr);
        assert!(run.stderr.contains("a loopback target needs a port"), "{}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(!root.path().join("ran").exists(), "{pattern}");
    }
}

/// A forwarded connection is admitted like any other: the deny list wins over the allow
/// pattern that made the port forwarded, the host's server gets nothing, and the refusal is
/// recorded.
#[test]
fn the_deny_list_wins_for_a_forwarded_loopback_target() {
    require_clients!();
    let index = Index::start("4");
    let port = index.port;
    let (root, home) = dirs_for(User::Root);
    let config =
        format!(r#"network={{ allow = ["127.0.0.1:{port}"], deny = ["127.0.0.1:{port}"] }}"#);
    let script = format!("curl -sS -m 5 -o /dev/null http://127.0.0.1:{port}/simple/?denied");
    let args = [
        "exec",
        "--json",
        "-a",
        "never",
        "-s",
        "workspace-write",
        "-c",
        &config,
        "-C",
        root.path().to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ];
    let mut command = cordon_command(User::Root, &args);
    command.env("HOME", home.path()).env("CORDON_HOME", home.path().join(".cordon"));
    let run: Run = command.output().unwrap().into();
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let connections = &document["attempts"][0]["network"]["connections"];
    assert_eq!(connections[0]["method"], "FORWARD", "{connections}");
    assert_eq!(connections[0]["allowed"], false, "{connections}");
    assert_eq!(document["network_denied"], serde_json::json!([format!("127.0.0.1:{port}")]));
    assert!(index.requests().is_empty(), "{:?}", index.requests());
}

/// A client that goes straight to a loopback port nothing listens on inside (not forwarded):
/// the kernel of the command's namespace refuses it, and cordon names the address and port
/// with the pattern (port included) that would forward the host's server there. The host's
/// server on that port gets nothing.
#[test]
fn a_direct_connection_to_a_loopback_port_not_forwarded_is_named_with_its_pattern() {
    require_clients!();
    for user in USERS {
        let allowed = Index::start("4");
        let other = Index::start("4");
        let (root, home) = dirs_for(user);
        let (a, b) = (allowed.port, other.port);
        let script = format!(
            "curl -sS --fail -o /dev/null http://127.0.0.1:{a}/simple/?allowed
             curl -sS -o /dev/null http://127.0.0.1:{b}/simple/?direct
             {node}
             exit 1",
            node = node_get(&format!("http://127.0.0.1:{b}/simple/?node")),
        );
        let run = exec_as(user, &[format!("127.0.0.1:{a}")], root.path(), home.path(), &script);
        assert_eq!(run.code, Some(1), "{user:?}: {}", run.stderr);
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with("cordon: the network allow-list refused"))
            .unwrap_or_else(|| panic!("{user:?}: no cordon line: {}", run.stderr));
        assert!(line.contains(&format!("refused 127.0.0.1:{b}:")), "{user:?}: {line}");
        assert!(line.contains("(--allow-domain 127.0.0.1:PORT)"), "{user:?}: {line}");
        assert!(!line.contains(&format!("--allow-domain 127.0.0.1:{b}")), "{user:?}: {line}");
        assert!(other.requests().is_empty(), "{user:?}: {:?}", other.requests());
        assert_eq!(allowed.requests(), ["/simple/?allowed"], "{user:?}");
    }
}
