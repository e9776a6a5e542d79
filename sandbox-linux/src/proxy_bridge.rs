//! The bridge from the command's network namespace to cordon's proxy.
//!
//! With a domain allow-list the command runs in a network namespace of its own with only
//! loopback up: it can reach nothing outside. cordon's proxy listens on a UNIX socket outside
//! the sandbox (a path, visible read-only in the mount view: abstract sockets belong to a
//! network namespace). The supervisor forks this bridge before it confines itself: it listens
//! on `127.0.0.1:PORT` inside the namespace and relays each connection to the proxy's socket,
//! where the proxy checks the destination. The command gets `HTTP_PROXY`/`HTTPS_PROXY`/
//! `ALL_PROXY` pointing at the bridge.
//!
//! The bridge lives in the command's PID namespace (it dies with the supervisor, or is killed
//! with the other descendants under the subreaper) and is not dumpable, so the confined command
//! cannot read or write its memory. It holds no descriptor but its listener and its
//! connections. One thread per direction per connection: it never confines or execs anything,
//! so threads are safe here.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::Signal;

use crate::error::HelperError;
use crate::sys::{self, Forked};

/// Stack size of a relay thread: each only copies through a 16 KiB buffer.
const RELAY_STACK: usize = 64 * 1024;

/// Listens on an ephemeral loopback port in the current (new) network namespace and forks the
/// bridge; returns the port. Call in the supervisor, before Landlock and seccomp.
pub fn start(proxy_socket: &Path) -> Result<u16, HelperError> {
    let error = |what| move |source| HelperError::NetworkNamespace { what, source };
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(error("listening on loopback for the proxy"))?;
    let port = listener.local_addr().map_err(error("reading the bridge's port"))?.port();
    match sys::fork().map_err(error("forking the proxy bridge"))? {
        Forked::Parent { .. } => Ok(port),
        Forked::Child => serve(listener, proxy_socket.to_path_buf()),
    }
}

fn serve(listener: TcpListener, proxy_socket: PathBuf) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let _ = nix::sys::prctl::set_dumpable(false);
    if sys::close_fds_except(listener.as_raw_fd()).is_err() {
        std::process::exit(crate::EXIT_SETUP_FAILED);
    }
    // Two descriptors per relayed connection: the usual soft limit of 1024 would stop the
    // bridge near 500 connections. Only this process: the command keeps its own limit.
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
    for stream in listener.incoming() {
        let Ok(client) = stream else { continue };
        let socket = proxy_socket.clone();
        // A thread that cannot start drops the connection; the bridge keeps serving.
        let _ = std::thread::Builder::new()
            .stack_size(RELAY_STACK)
            .spawn(move || relay_connection(client, &socket));
    }
    std::process::exit(0)
}

fn relay_connection(client: TcpStream, proxy_socket: &Path) {
    let Ok(upstream) = UnixStream::connect(proxy_socket) else {
        // The proxy is gone (cordon is exiting): the client sees the connection close.
        return;
    };
    let (Ok(client_back), Ok(upstream_back)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let to_proxy = std::thread::Builder::new().stack_size(RELAY_STACK).spawn(move || {
        copy(&client, &upstream);
        let _ = upstream.shutdown(Shutdown::Write);
    });
    copy(&upstream_back, &client_back);
    let _ = client_back.shutdown(Shutdown::Write);
    if let Ok(handle) = to_proxy {
        let _ = handle.join();
    }
}

fn copy(mut from: impl std::io::Read, mut to: impl std::io::Write) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

/// The proxy variables the command gets (both spellings: curl reads lower case `http_proxy`
/// only, many tools read upper case). HTTP and HTTPS go through the HTTP proxy; `ALL_PROXY`,
/// for every other protocol, through SOCKS5 on the same port (`socks5h`: the client sends host
/// names and the proxy resolves them). Loopback stays direct: the command's own servers.
pub fn proxy_env(port: u16) -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let no_proxy = "localhost,127.0.0.1,::1".to_owned();
    vec![
        ("HTTP_PROXY", url.clone()),
        ("http_proxy", url.clone()),
        ("HTTPS_PROXY", url.clone()),
        ("https_proxy", url),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", no_proxy.clone()),
        ("no_proxy", no_proxy),
        ("CORDON_SANDBOX_NETWORK", "proxy".to_owned()),
    ]
}
