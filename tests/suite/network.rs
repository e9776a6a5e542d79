//! Network off: with the mount view, a network namespace of its own with only loopback (a local
//! server works, nothing leaves; UNIX sockets only as pairs); without it, no TCP, UDP, raw,
//! packet or netlink, UNIX stream sockets only. Network on: TCP/UDP over IPv4/IPv6 and name
//! lookup work, packet/vsock/raw sockets do not.

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use super::util::*;

/// Python that connects a UNIX stream socket to `path`, sends a few bytes, and prints
/// `CONNECTED` or `refused ERRNO`.
fn unix_connect_probe(path: &std::path::Path) -> String {
    format!(
        "{PY_LIBC}try:\n    s = socket.socket(socket.AF_UNIX); s.connect({:?}); s.sendall(b'send-keys'); print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)",
        path.display().to_string()
    )
}

fn policy(network: bool) -> (tempfile::TempDir, String) {
    let root = scratch();
    let policy = only_root_policy(root.path(), network);
    (root, policy)
}

#[test]
fn tcp_connect_to_an_outside_listener_fails_and_the_listener_sees_nothing() {
    require_sandbox!(1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (root, policy) = policy(false);
    let code = format!(
        "{PY_LIBC}try:\n    s = socket.socket(); s.connect(('127.0.0.1', {port})); print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)"
    );
    let run = python_in(&policy, root.path(), &code);
    run.assert_ok();
    // In a network namespace of its own (with the mount view) nothing listens on the
    // command's loopback; without one, seccomp refuses the call.
    let errno = if features().path_rules() { libc::ECONNREFUSED } else { libc::EPERM };
    assert_eq!(run.stdout.trim(), format!("refused {errno}"), "{}", run.stderr);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
}

#[test]
fn with_network_access_the_tcp_connect_succeeds() {
    require_sandbox!(1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (root, policy) = policy(true);
    let code = format!(
        "{PY_LIBC}s = socket.create_connection(('127.0.0.1', {port})); s.sendall(b'hi'); print('CONNECTED')"
    );
    let run = python_in(&policy, root.path(), &code);
    run.assert_ok();
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the listener got no connection");
}

#[test]
fn a_udp_datagram_to_an_outside_socket_never_arrives() {
    require_sandbox!(1);
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let port = receiver.local_addr().unwrap().port();
    let (root, policy) = policy(false);
    let code = format!(
        "{PY_LIBC}try:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'leak', ('127.0.0.1', {port})); print('SENT')\nexcept OSError as e:\n    print('refused', e.errno)"
    );
    let run = python_in(&policy, root.path(), &code);
    // Sent to the command's own loopback where it has one, refused where it has not: either
    // way nothing arrives here.
    let expected = if features().path_rules() { "SENT" } else { "refused" };
    assert!(run.stdout.contains(expected), "{}{}", run.stdout, run.stderr);
    let mut buf = [0u8; 16];
    assert!(receiver.recv(&mut buf).is_err(), "a datagram arrived");
}

/// Python that tries each `(label, domain, type, proto)` socket and prints `label ok|errno`.
fn socket_matrix(cases: &[(&str, &str)]) -> String {
    let mut code = String::from(PY_LIBC);
    code.push_str("def t(label, f):\n    try:\n        f(); print(label, 'ok')\n    except OSError as e:\n        print(label, e.errno)\n");
    for (label, expr) in cases {
        code.push_str(&format!("t({label:?}, lambda: {expr})\n"));
    }
    code
}

fn results(run: &Run) -> std::collections::HashMap<String, String> {
    run.stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

#[test]
fn network_off_refuses_every_socket_family_but_unix_streams() {
    require_sandbox!(1);
    let (root, policy) = policy(false);
    let code = socket_matrix(&[
        ("inet", "socket.socket(socket.AF_INET, socket.SOCK_STREAM)"),
        ("inet6", "socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)"),
        ("raw", "socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)"),
        ("netlink", "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)"),
        ("packet", "socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)"),
        ("vsock", "socket.socket(40, socket.SOCK_STREAM)"),
        ("unix_dgram", "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)"),
        (
            "unix_dgram_cloexec",
            "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)",
        ),
        ("unix_raw", "socket.socket(socket.AF_UNIX, 3)"),
        ("pair_dgram", "socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)"),
        ("pair_stream", "socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)"),
        (
            "pair_seqpacket",
            "socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)",
        ),
        ("unix_stream", "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)"),
    ]);
    let run = python_in(&policy, root.path(), &code);
    run.assert_ok();
    let r = results(&run);
    let eperm = libc::EPERM.to_string();
    // With a network namespace of its own (the mount view's), IP sockets and netlink reach
    // only the command's loopback and a UNIX socket only a pair; without one, seccomp leaves
    // UNIX streams (whose connect it refuses) and pairs.
    let (denied, allowed): (&[&str], &[&str]) = if features().path_rules() {
        (
            &["raw", "packet", "vsock", "unix_dgram", "unix_dgram_cloexec", "unix_raw"],
            &["inet", "inet6", "netlink", "pair_stream", "pair_seqpacket"],
        )
    } else {
        (
            &[
                "inet",
                "inet6",
                "raw",
                "netlink",
                "packet",
                "vsock",
                "unix_dgram",
                "unix_dgram_cloexec",
                "unix_raw",
                "pair_dgram",
            ],
            &["pair_stream", "pair_seqpacket", "unix_stream"],
        )
    };
    for denied in denied {
        assert_eq!(r.get(*denied), Some(&eperm), "{denied}: {}", run.stdout);
    }
    for allowed in allowed {
        assert_eq!(r.get(*allowed).map(String::as_str), Some("ok"), "{allowed}: {}", run.stdout);
    }
    if features().path_rules() {
        assert_eq!(r.get("unix_stream"), Some(&eperm), "{}", run.stdout);
    }
}

#[test]
fn network_off_refuses_unix_socket_files_outside_so_tmux_and_agents_are_unreachable() {
    require_sandbox!(1);
    use std::os::unix::net::UnixListener;
    // A stand-in for tmux's server socket (/tmp/tmux-UID/default), ssh-agent or D-Bus: in /tmp,
    // a writable root, so only the socket rules stand in the way.
    let dir = tempfile::Builder::new().prefix("cordon-tmux-").tempdir_in("/tmp").unwrap();
    let path = dir.path().join("default");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let work = scratch();
    let code = unix_connect_probe(&path);
    for user in USERS {
        // Writing directly: /tmp is the host's, and only the socket rules stand in the way.
        let direct = ["--full-auto", "--writes", "direct"];
        let run = python_sandboxed(user, &direct, work.path(), &code);
        assert!(run.stdout.contains("refused"), "{user:?}: {}{}", run.stdout, run.stderr);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            ErrorKind::WouldBlock,
            "{user:?}"
        );
    }
    // With the network on, UNIX sockets are reachable like any other endpoint.
    let direct = ["--full-auto", "--network", "--writes", "direct"];
    let run = python_sandboxed(User::Root, &direct, work.path(), &code);
    assert!(run.stdout.contains("CONNECTED"), "{}{}", run.stdout, run.stderr);
}

#[test]
fn socketpair_streams_carry_data_with_the_network_off() {
    require_sandbox!(1);
    let (root, policy) = policy(false);
    let code = format!("{PY_LIBC}a, b = socket.socketpair(); a.sendall(b'x'); print(b.recv(1))");
    let run = python_in(&policy, root.path(), &code);
    run.assert_ok();
    assert!(run.stdout.contains("b'x'"));
}

#[test]
fn network_on_allows_inet_and_lookups_but_not_packet_vsock_or_raw() {
    require_sandbox!(1);
    let (root, policy) = policy(true);
    let tcp6 = TcpListener::bind("[::1]:0").ok();
    let port6 = tcp6.as_ref().map_or(0, |l| l.local_addr().unwrap().port());
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let mut cases = vec![
        ("lookup".to_owned(), "socket.getaddrinfo('localhost', 80)".to_owned()),
        (
            "udp4".to_owned(),
            format!(
                "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'u', ('127.0.0.1', {udp_port}))"
            ),
        ),
        ("packet".to_owned(), "socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)".to_owned()),
        ("vsock".to_owned(), "socket.socket(40, socket.SOCK_STREAM)".to_owned()),
        ("raw4".to_owned(), "socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)".to_owned()),
        ("raw6".to_owned(), "socket.socket(socket.AF_INET6, socket.SOCK_RAW, 58)".to_owned()),
        (
            "netlink_audit".to_owned(),
            "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)".to_owned(),
        ),
        (
            "netlink_route".to_owned(),
            "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)".to_owned(),
        ),
    ];
    if tcp6.is_some() {
        cases.push(("tcp6".to_owned(), format!("socket.create_connection(('::1', {port6}))")));
    }
    let borrowed: Vec<(&str, &str)> = cases.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let run = python_in(&policy, root.path(), &socket_matrix(&borrowed));
    run.assert_ok();
    let r = results(&run);
    let eperm = libc::EPERM.to_string();
    for allowed in ["lookup", "udp4", "netlink_route"] {
        assert_eq!(r.get(allowed).map(String::as_str), Some("ok"), "{allowed}: {}", run.stdout);
    }
    for denied in ["packet", "vsock", "raw4", "raw6", "netlink_audit"] {
        assert_eq!(r.get(denied), Some(&eperm), "{denied}: {}", run.stdout);
    }
    let mut buf = [0u8; 4];
    assert_eq!(udp.recv(&mut buf).unwrap(), 1, "the UDP datagram did not arrive");
    if let Some(listener) = tcp6 {
        assert_eq!(r.get("tcp6").map(String::as_str), Some("ok"), "{}", run.stdout);
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_ok());
    }
}

#[test]
fn with_the_network_on_agent_and_multiplexer_sockets_stay_hidden() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "hiding sockets needs the mount view");
    use std::os::unix::net::UnixListener;
    let agent_dir = scratch();
    let agent = agent_dir.path().join("agent.42");
    let agent_listener = UnixListener::bind(&agent).unwrap();
    agent_listener.set_nonblocking(true).unwrap();
    let tmux_dir = std::path::PathBuf::from(format!("/tmp/tmux-{}", nix::unistd::getuid()));
    let created_tmux_dir = !tmux_dir.exists();
    std::fs::create_dir_all(&tmux_dir).unwrap();
    let tmux = tmux_dir.join(format!("cordon-test-{}", std::process::id()));
    let tmux_listener = UnixListener::bind(&tmux).unwrap();
    tmux_listener.set_nonblocking(true).unwrap();
    let work = scratch();
    for target in [&agent, &tmux] {
        let code = unix_connect_probe(target);
        let argv = [python(), "-c", code.as_str()];
        let out = sandbox_command(&["--full-auto", "--network"], work.path(), &argv)
            .env("SSH_AUTH_SOCK", &agent)
            .output()
            .unwrap();
        let run = Run::from(out);
        assert!(run.stdout.contains("refused"), "{target:?}: {}{}", run.stdout, run.stderr);
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(agent_listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
    assert_eq!(tmux_listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
    drop(tmux_listener);
    let _ = std::fs::remove_file(&tmux);
    if created_tmux_dir {
        let _ = std::fs::remove_dir(&tmux_dir);
    }
}

/// With a domain list the command has IP sockets (cordon's proxy listens on loopback in its
/// network namespace), but a UNIX socket on the host — a socat bridge to the network, an IDE's
/// socket in /tmp — would be a way around the proxy: below Landlock ABI 9 the command can make
/// no UNIX socket (a connected pair still works), from ABI 9 Landlock refuses the socket file.
/// Checked from outside: neither listener gets a connection.
#[test]
fn a_domain_list_keeps_host_unix_sockets_out_of_reach() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    require_sandbox!(1);
    skip_unless!(features().mount_view, "a domain list needs the mount view's namespaces");
    // In /tmp, a writable root: only the socket rules stand in the way.
    let dir = tempfile::Builder::new().prefix("cordon-bridge-").tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = dir.path().join("bridge.sock");
    let bridge = UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    bridge.set_nonblocking(true).unwrap();
    let name = format!("cordon-e2e-bridge-{}", std::process::id());
    let abstract_bridge =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    abstract_bridge.set_nonblocking(true).unwrap();
    let code = format!(
        "import socket\n\
         for label, address in [('path', {path:?}), ('abstract', '\\0{name}')]:\n    \
             try:\n        \
                 s = socket.socket(socket.AF_UNIX); s.connect(address); s.sendall(b'x')\n        \
                 print(label, 'CONNECTED')\n    \
             except OSError as e:\n        \
                 print(label, 'refused', e.errno)\n\
         a, b = socket.socketpair(); a.sendall(b'p'); print('pair', b.recv(1).decode())\n",
        path = path.display().to_string()
    );
    let work = scratch();
    let dir_arg = work.path().to_str().unwrap();
    let nothing_arrived = |who: &str| {
        std::thread::sleep(Duration::from_millis(50));
        for listener in [&bridge, &abstract_bridge] {
            let accepted = listener.accept().map(|_| ());
            assert_eq!(accepted.unwrap_err().kind(), ErrorKind::WouldBlock, "{who}");
        }
    };
    for user in USERS {
        let args = ["exec", "-a", "never", "--allow-domain", "example.test", "-C", dir_arg, "--"];
        let mut args = args.to_vec();
        args.extend_from_slice(&[python(), "-c", &code]);
        let run: Run = cordon_command(user, &args).output().unwrap().into();
        let out = &run.stdout;
        assert!(out.contains("path refused"), "{user:?}: {out}{}", run.stderr);
        assert!(out.contains("abstract refused"), "{user:?}: {out}");
        assert!(out.contains("pair p"), "{user:?}: {out}");
        nothing_arrived(&format!("{user:?}"));
    }
    // With the network on and direct writes, the bridge is reachable like any other endpoint
    // (the probe works).
    let on = ["exec", "-a", "never", "--network", "-C", dir_arg];
    let run = cordon(&[&on[..], &["--writes", "direct", "--", python(), "-c", &code]].concat());
    assert!(run.stdout.contains("path CONNECTED"), "{}{}", run.stdout, run.stderr);
    if super::util::write_layer_missing().is_none() {
        // Through a write layer /tmp is the workspace's own: a socket there is the host's only
        // when named. (Its state where a layer can be kept: outside /tmp, not on tmpfs.)
        let state = scratch();
        let layered = |extra: &[&str]| -> Run {
            let args = [&on[..], &["--writes", "transaction"], extra].concat();
            cordon_command(User::Root, &args)
                .env("CORDON_HOME", state.path().join(".cordon"))
                .output()
                .unwrap()
                .into()
        };
        let run = layered(&["--", python(), "-c", &code]);
        assert!(run.stdout.contains("path refused"), "{}{}", run.stdout, run.stderr);
        let path_arg = path.to_str().unwrap();
        let run = layered(&["--allow-unix-socket", path_arg, "--", python(), "-c", &code]);
        assert!(run.stdout.contains("path CONNECTED"), "{}{}", run.stdout, run.stderr);
    }
}

/// This machine's address on its default route, if it has one (no packet is sent).
fn outside_address() -> Option<std::net::IpAddr> {
    let probe = UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("10.255.255.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// With the network off a command has a loopback of its own: a test suite's server on
/// 127.0.0.1 (Node's `http`) answers its client, cordon says nothing about it, and neither the
/// host's loopback nor its outside address receives a connection.
#[test]
fn with_the_network_off_a_local_test_server_works_and_nothing_leaves() {
    require_sandbox!(1);
    skip_unless!(
        features().path_rules(),
        "a network namespace of its own comes with the mount view's namespaces"
    );
    skip_unless!(
        std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "needs node (tests/setup.sh installs it)"
    );
    let host_loopback = TcpListener::bind("127.0.0.1:0").unwrap();
    host_loopback.set_nonblocking(true).unwrap();
    let outside = TcpListener::bind("0.0.0.0:0").unwrap();
    outside.set_nonblocking(true).unwrap();
    let outside_target = outside_address()
        .map(|ip| format!("{ip}:{}", outside.local_addr().unwrap().port()))
        .unwrap_or_else(|| format!("127.0.0.1:{}", outside.local_addr().unwrap().port()));
    let script = format!(
        "const http = require('http'), net = require('net');\n\
         const probe = (label, target, next) => {{\n\
           const [host, port] = [target.slice(0, target.lastIndexOf(':')), +target.slice(target.lastIndexOf(':') + 1)];\n\
           const s = net.connect(port, host, () => {{ console.log('reached ' + label); s.destroy(); next(); }});\n\
           s.on('error', e => {{ console.log('unreached ' + label + ' ' + e.code); next(); }});\n\
         }};\n\
         const server = http.createServer((q, r) => r.end('pong')).listen(0, '127.0.0.1', () => {{\n\
           http.get('http://127.0.0.1:' + server.address().port + '/', res => {{\n\
             let body = ''; res.on('data', d => body += d);\n\
             res.on('end', () => {{ console.log('local ' + body);\n\
               probe('host-loopback', '127.0.0.1:{}', () => probe('outside', '{outside_target}', () => server.close()));\n\
             }});\n\
           }});\n\
         }});\n",
        host_loopback.local_addr().unwrap().port()
    );
    let dir = scratch();
    let out: Run = without_terminal(CORDON)
        .args(["exec", "-a", "never", "--", "node", "-e", &script])
        .current_dir(dir.path())
        .env("CORDON_HOME", dir.path().join("home"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    out.assert_ok();
    assert!(out.stdout.contains("local pong"), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("unreached host-loopback"), "{}", out.stdout);
    assert!(out.stdout.contains("unreached outside"), "{}", out.stdout);
    assert!(!out.stderr.contains("cordon: blocked"), "{}", out.stderr);
    std::thread::sleep(Duration::from_millis(100));
    for listener in [&host_loopback, &outside] {
        assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
    }
}

/// Each real client's failure with the network off is named, with the narrowest fix for that
/// tool: its preset where there is one, else the host it names, and `--network` last. (Retries
/// are turned down through each client's own settings so that the test does not wait for them.)
#[test]
fn every_clients_network_failure_is_named_with_its_narrowest_fix() {
    require_sandbox!(1);
    // `--version`, or go's `version`.
    let available = |program: &str| {
        ["--version", "version"].iter().any(|flag| {
            std::process::Command::new(program).arg(flag).output().is_ok_and(|o| o.status.success())
        })
    };
    let dir = scratch();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "npm",
            "npm view is-number version --fetch-retries=0 --fetch-timeout=5000",
            "--preset npm",
        ),
        ("npx", "npx --yes --fetch-retries=0 cowsay-not-installed-here hi", "--preset npm"),
        ("pip", "pip download --no-deps --retries 0 --timeout 5 six==1.17.0", "--preset pip"),
        ("cargo", "cargo search --limit 1 serde", "--preset cargo"),
        ("curl", "curl -sS https://example.org/", "--allow-domain example.org"),
        (
            "go",
            "GOFLAGS=-mod=mod go list -m golang.org/x/text@latest",
            "--allow-domain proxy.golang.org",
        ),
    ];
    let mut tried = 0;
    for (program, script, advice) in cases {
        if !available(program) {
            eprintln!("SKIPPED {program}: not installed (tests/setup.sh installs it)");
            continue;
        }
        tried += 1;
        let mut command = without_terminal(CORDON);
        command
            .args(["exec", "-a", "never", "--", "sh", "-c", script])
            .current_dir(&ws)
            .env("HOME", &home)
            .env("CORDON_HOME", dir.path().join("cordon"))
            .env("CARGO_NET_RETRY", "0")
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .stdin(std::process::Stdio::null());
        // rustup's proxies find the toolchains through RUSTUP_HOME and CARGO_HOME (the real
        // user's), with HOME pointing elsewhere.
        for (name, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            let place = std::env::var_os(name).map(std::path::PathBuf::from).or_else(|| {
                std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(default))
            });
            if let Some(place) = place.filter(|p| p.is_dir()) {
                command.env(name, place);
            }
        }
        let out: Run = command.output().unwrap().into();
        assert_ne!(out.code, Some(0), "{program}: {}", out.stderr);
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with("cordon: blocked") && l.contains("the network is off"))
            .unwrap_or_else(|| panic!("{program}: the network is not named:\n{}", out.stderr));
        assert!(line.contains(advice), "{program}: {line}");
        let network = line.find("--network").unwrap_or(0);
        assert!(line.find(advice).unwrap_or(usize::MAX) < network, "{program}: {line}");
    }
    assert!(tried > 0, "no client was installed");
}

/// With the network off, a connection to a loopback port the host serves (a database, a dev
/// server) is named as the sandbox's doing, with the forward that reaches it; one to a port
/// nothing serves is the command's own failure, and cordon says nothing.
#[test]
fn a_host_service_on_loopback_is_named_and_a_dead_port_is_not() {
    require_sandbox!(1);
    skip_unless!(
        features().path_rules(),
        "a network namespace of its own comes with the mount view's namespaces"
    );
    skip_unless!(std::path::Path::new("/usr/bin/curl").exists(), "needs curl");
    let served = TcpListener::bind("127.0.0.1:0").unwrap();
    served.set_nonblocking(true).unwrap();
    let port = served.local_addr().unwrap().port();
    let dead = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = scratch();
    let run = |port: u16| -> Run {
        without_terminal(CORDON)
            .args([
                "exec",
                "-a",
                "never",
                "--",
                "curl",
                "-sS",
                &format!("http://127.0.0.1:{port}/"),
            ])
            .current_dir(dir.path())
            .env("CORDON_HOME", dir.path().join("home"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into()
    };
    let out = run(port);
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains(&format!("--allow-domain 127.0.0.1:{port}")), "{}", out.stderr);
    assert_eq!(served.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
    let out = run(dead);
    assert_ne!(out.code, Some(0));
    assert!(!out.stderr.contains("cordon: blocked"), "{}", out.stderr);
}
