use std::io::Write;

use cordon_policies::DomainRules;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// Sends `CONNECT target` and returns the proxy's answer head and the stream.
async fn connect_through(port: u16, target: &str) -> (String, TcpStream) {
    let mut client = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    client.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if client.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).into_owned(), client)
}

#[tokio::test]
async fn the_loopback_proxy_tunnels_to_allowed_hosts_and_refuses_the_rest() {
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream_addr = upstream.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in upstream.incoming() {
            let _ = stream.and_then(|mut s| s.write_all(b"pong"));
        }
    });
    let proxy = NetworkProxy::start_on_loopback(&ProxySettings {
        rules: DomainRules { allow: vec!["allowed.test".parse().unwrap()], deny: Vec::new() },
        narrowed_by: None,
        test_resolve: vec![("allowed.test".to_owned(), upstream_addr)],
    })
    .unwrap();
    let ProxyEndpoint::Loopback(port) = proxy.endpoint() else {
        panic!("not on the loopback: {:?}", proxy.endpoint())
    };

    let allowed = format!("allowed.test:{}", upstream_addr.port());
    let (head, mut tunnel) = connect_through(port, &allowed).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut pong = [0u8; 4];
    tunnel.read_exact(&mut pong).await.unwrap();
    assert_eq!(&pong, b"pong");

    let (head, _) = connect_through(port, "denied.test:443").await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");

    let log = proxy.finish();
    let seen: Vec<(&str, bool)> =
        log.connections.iter().map(|c| (c.host.as_str(), c.allowed)).collect();
    assert_eq!(seen, [("allowed.test", true), ("denied.test", false)]);
}

/// Two connected loopback sockets: (the side a test holds, the side given to the relay).
async fn socket_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let near = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (far, _) = listener.accept().await.unwrap();
    (near, far)
}

/// Bytes unlike their neighbours, so a reordered or lost piece shows.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

#[tokio::test]
async fn a_tunnel_carries_every_byte_both_ways_and_passes_on_each_half_close() {
    let (mut client, client_end) = socket_pair().await;
    let (mut upstream, upstream_end) = socket_pair().await;
    let relay = tokio::spawn(async move {
        let first = super::relay::FirstBytes { carried: Vec::new(), host: Some("upstream.test") };
        super::relay::relay_tcp(client_end, upstream_end, first).await
    });
    // More than the pipes and socket buffers hold, so the relay has to wait for the reader.
    let request = pattern(24 << 20, 0x5a);
    let response = pattern(9 << 20, 0xa5);

    let sent_request = request.clone();
    let sender = tokio::spawn(async move {
        client.write_all(&sent_request).await.unwrap();
        // The client's half-close reaches the upstream as end of file ...
        client.shutdown().await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        got
    });
    let mut got_request = Vec::new();
    let read = upstream.read_to_end(&mut got_request);
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("no end of file").unwrap();
    assert!(got_request == request, "the request arrived changed ({} bytes)", got_request.len());
    // ... and the other direction still runs after it, to its own end of file.
    upstream.write_all(&response).await.unwrap();
    upstream.shutdown().await.unwrap();
    let got_response = tokio::time::timeout(Duration::from_secs(30), sender)
        .await
        .expect("no end of file")
        .unwrap();
    assert!(got_response == response, "the answer arrived changed ({} bytes)", got_response.len());
    assert_eq!(relay.await.unwrap(), None);
}

/// A deny entry that names an address holds for every name that resolves there; an allowed name
/// that resolves elsewhere still goes through (the control).
#[tokio::test]
async fn a_name_that_resolves_to_a_denied_address_is_refused_while_others_pass() {
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream_addr = upstream.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in upstream.incoming() {
            let _ = stream.and_then(|mut s| s.write_all(b"pong"));
        }
    });
    let port = upstream_addr.port();
    let proxy = NetworkProxy::start_on_loopback(&ProxySettings {
        rules: DomainRules {
            allow: vec![
                format!("*.example.test:{port}").parse().unwrap(),
                format!("127.0.0.1:{port}").parse().unwrap(),
            ],
            deny: vec!["127.0.0.1".parse().unwrap()],
        },
        narrowed_by: None,
        test_resolve: vec![
            ("alias.example.test".to_owned(), upstream_addr),
            ("good.example.test".to_owned(), "127.0.0.2:9".parse().unwrap()),
        ],
    })
    .unwrap();
    let ProxyEndpoint::Loopback(proxy_port) = proxy.endpoint() else {
        panic!("not on the loopback: {:?}", proxy.endpoint())
    };
    let (head, _) = connect_through(proxy_port, &format!("alias.example.test:{port}")).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let (head, _) = connect_through(proxy_port, &format!("127.0.0.1:{port}")).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    // Allowed by name and not denied by address: admitted (the connection itself then fails,
    // nothing listens there), so the refusal above came from the deny list.
    let (head, _) = connect_through(proxy_port, &format!("good.example.test:{port}")).await;
    assert!(!head.starts_with("HTTP/1.1 403"), "{head}");
    let log = proxy.finish();
    let denied = log.connections.iter().find(|c| c.host == "alias.example.test").unwrap();
    assert!(!denied.allowed);
}
