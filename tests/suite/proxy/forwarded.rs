//! What the proxy forwards must name the destination it admitted: one Host header equal to
//! an absolute-form request's target (or, in origin form, the one Host the request is judged
//! on), and in a tunnel a TLS ClientHello whose server name (SNI) is the CONNECT host. Checked
//! from outside: what the loopback servers received.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::super::util::*;
use super::{Server, exec_sh};

/// Python run in the sandbox: talks to the proxy (from `HTTP_PROXY`) with raw requests and
/// prints the status line of each answer, then the answer's body's first line.
const RAW_REQUESTS: &str = r#"
import os, socket, sys
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
for name, request in [
    ("fronted", b"GET http://allowed.test/fronted HTTP/1.1\r\nHost: denied.test\r\n\r\n"),
    ("no-host", b"GET http://allowed.test/no-host HTTP/1.1\r\n\r\n"),
    ("two-hosts", b"GET http://allowed.test/two-hosts HTTP/1.1\r\nHost: allowed.test\r\nHost: allowed.test\r\n\r\n"),
    ("origin-two", b"GET /origin-two HTTP/1.1\r\nHost: allowed.test\r\nHost: denied.test\r\n\r\n"),
    ("origin-none", b"GET /origin-none HTTP/1.1\r\n\r\n"),
    ("userinfo", b"GET http://allowed.test/userinfo HTTP/1.1\r\nHost: denied.test@allowed.test\r\n\r\n"),
    ("huge", b"GET http://allowed.test/huge HTTP/1.1\r\nHost: allowed.test\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n"),
    ("same", b"GET http://Allowed.Test:80/same HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n"),
]:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(request)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    print(name, head.split(b"\r\n")[0].decode(), "|", body.split(b"\n")[0].decode(errors="replace"))
    s.close()
"#;

#[test]
fn a_request_must_name_the_server_it_is_sent_to_in_exactly_one_host_header() {
    require_network_namespace!();
    let server = Server::start();
    let root = scratch();
    let script = format!("{} -c '{}'", python(), RAW_REQUESTS.replace('\'', "'\\''"));
    let run = exec_sh(&server, &["--allow-domain", "allowed.test"], root.path(), &script);
    let line = |name: &str| -> String {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name}: {}\n{}", run.stdout, run.stderr))
            .to_owned()
    };
    // Domain fronting: sent for allowed.test, with a Host naming another server.
    let fronted = line("fronted");
    assert!(fronted.contains(" 400 "), "{fronted}");
    assert!(fronted.contains("allowed.test:80") && fronted.contains("denied.test:80"), "{fronted}");
    for name in ["no-host", "two-hosts", "userinfo"] {
        let answer = line(name);
        assert!(answer.contains(" 400 "), "{answer}");
        assert!(answer.contains("allowed.test:80"), "{answer}");
    }
    let origin_two = line("origin-two");
    assert!(origin_two.contains(" 400 "), "{origin_two}");
    assert!(origin_two.contains("(allowed.test, denied.test)"), "{origin_two}");
    assert!(line("origin-none").contains(" 400 "), "{}", run.stdout);
    assert!(line("huge").contains(" 431 "), "{}", run.stdout);
    assert!(line("same").contains(" 200 "), "{}", run.stdout);
    // From outside: only the request that named one server, the one it went to, arrived.
    assert_eq!(server.requests(), ["/same"]);
}

/// A TLS-shaped listener: records every byte each connection sent, answers nothing.
struct Listener {
    port: u16,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Listener {
    fn start() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let record = Arc::clone(&record);
                std::thread::spawn(move || {
                    let index = {
                        let mut all = record.lock().unwrap();
                        all.push(Vec::new());
                        all.len() - 1
                    };
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        record.lock().unwrap()[index].extend_from_slice(&buf[..n]);
                    }
                });
            }
        });
        Listener { port, received }
    }

    fn received(&self) -> Vec<Vec<u8>> {
        self.received.lock().unwrap().clone()
    }
}

/// Python run in the sandbox: `CONNECT allowed.test:PORT` through the proxy, then a TLS
/// handshake naming argv[1]; prints how the handshake ended.
const TLS_THROUGH_CONNECT: &str = r#"
import os, socket, ssl, sys
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test\r\n\r\n" % sys.argv[2]).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print("connect", head.split(b"\r\n")[0].decode())
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
s.settimeout(3)
try:
    context.wrap_socket(s, server_hostname=sys.argv[1])
    print("handshake done")
except Exception as error:
    print("handshake failed:", error)
    sys.exit(1)
"#;

#[test]
fn a_tunnel_whose_tls_server_name_is_another_host_carries_nothing() {
    require_network_namespace!();
    let tls = Listener::start();
    let root = scratch();
    let resolve = format!("allowed.test=127.0.0.1:{}", tls.port);
    let run_with = |name: &str| -> Run {
        let port = tls.port.to_string();
        let args = [
            "exec",
            "-a",
            "never",
            "--allow-domain",
            "allowed.test",
            "-C",
            root.path().to_str().unwrap(),
            "--",
            python(),
            "-c",
            TLS_THROUGH_CONNECT,
            name,
            &port,
        ];
        let mut command = cordon_command(User::Root, &args);
        command.env("CORDON_TEST_RESOLVE", &resolve);
        command.output().unwrap().into()
    };
    let fronted = run_with("denied.test");
    assert!(
        fronted.stdout.contains("connect HTTP/1.1 200"),
        "{}{}",
        fronted.stdout,
        fronted.stderr
    );
    assert!(fronted.stdout.contains("handshake failed"), "{}", fronted.stdout);
    assert!(fronted.stdout.to_lowercase().contains("access denied"), "{}", fronted.stdout);
    assert!(fronted.stderr.contains(&format!("denied.test:{}", tls.port)), "{}", fronted.stderr);
    // From outside: the tunnel was opened, and not one byte of the ClientHello arrived.
    let received = tls.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(received[0].is_empty(), "{} bytes reached the upstream", received[0].len());

    // The same handshake naming the CONNECT host goes through (the listener never answers:
    // the client gives up after its timeout, with the ClientHello delivered).
    let same = run_with("Allowed.Test");
    assert!(same.stdout.contains("connect HTTP/1.1 200"), "{}{}", same.stdout, same.stderr);
    let received = tls.received();
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(received[1].first(), Some(&0x16), "no ClientHello arrived: {received:?}");
}
