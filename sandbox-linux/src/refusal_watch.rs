//! Seeing the command's refused loopback connections, so cordon can name them.
//!
//! With a domain list the command's loopback is its own network namespace's: a client that
//! connects to a loopback port nothing listens on there — a server on the host it expected to
//! reach, say — gets "connection refused" from the kernel, and cordon's proxy never hears of
//! it. Before it confines itself, the supervisor opens a raw TCP socket per address family in
//! that namespace, with a classic BPF filter that keeps only the kernel's answer to a SYN on a
//! closed port (RST and ACK set, sequence number 0), and hands them to the proxy with the
//! listeners; the proxy reports each refused address and port once, with the allow pattern
//! that would forward it. The command never holds them (nor could it open one: seccomp
//! refuses raw sockets). This is a diagnosis, not a boundary: where a raw socket cannot be
//! opened, nothing is watched and everything else is the same.

use std::os::fd::OwnedFd;

use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};

use crate::sys;

/// The filter for packets that start at the TCP header (IPv6 raw sockets).
const FROM_TCP_HEADER: &[libc::sock_filter] = &[
    // A = the flags byte; keep RST|ACK with both set.
    op(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS, 0, 0, 13),
    op(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, 0, 0, RST_ACK),
    op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 3, RST_ACK),
    // The sequence number of an answer to a SYN is 0.
    op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 4),
    op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 1, 0),
    op(libc::BPF_RET | libc::BPF_K, 0, 0, KEEP_BYTES),
    op(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
];

/// The filter for packets that start at the IPv4 header (IPv4 raw sockets): the same, past a
/// header of the length it states.
const FROM_IPV4_HEADER: &[libc::sock_filter] = &[
    // X = the IPv4 header's length.
    op(libc::BPF_LDX | libc::BPF_B | libc::BPF_MSH, 0, 0, 0),
    op(libc::BPF_LD | libc::BPF_B | libc::BPF_IND, 0, 0, 13),
    op(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, 0, 0, RST_ACK),
    op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 3, RST_ACK),
    op(libc::BPF_LD | libc::BPF_W | libc::BPF_IND, 0, 0, 4),
    op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 1, 0),
    op(libc::BPF_RET | libc::BPF_K, 0, 0, KEEP_BYTES),
    op(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
];

/// One classic BPF instruction.
const fn op(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    // Every opcode fits in the 16 bits of `code`.
    libc::sock_filter { code: code as u16, jt, jf, k }
}

/// TCP's RST (0x04) and ACK (0x10) flags.
const RST_ACK: u32 = 0x14;
/// Enough of a packet for an IPv4 header with options and the TCP header's first 20 bytes.
const KEEP_BYTES: u32 = 80;

/// The raw sockets watching the current network namespace (IPv4, then IPv6 where the kernel
/// has it); none where one cannot be opened or filtered.
pub fn open() -> Vec<OwnedFd> {
    [(AddressFamily::Inet, FROM_IPV4_HEADER), (AddressFamily::Inet6, FROM_TCP_HEADER)]
        .into_iter()
        .filter_map(|(family, filter)| {
            let flags = SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK;
            let socket = socket(family, SockType::Raw, flags, SockProtocol::Tcp).ok()?;
            sys::attach_socket_filter(&socket, filter).ok()?;
            Some(socket)
        })
        .collect()
}
