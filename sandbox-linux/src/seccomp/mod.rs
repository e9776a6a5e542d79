//! The seccomp program: built as a value from the network setting, installed in one call.
//!
//! Default action allow; a matched rule returns `EPERM`. Before the table, the program refuses
//! every architecture but the one it was built for (a 64-bit x86 process can still make i386
//! calls through `int 0x80`, whose numbers differ), refuses x32 numbers (the `0x4000_0000` bit),
//! and answers `clone3` and `openat2` with `ENOSYS` so libc falls back to `clone`/`openat`, whose
//! flags the filter can read (the new calls pass them in memory). The table ([`deny_rules`]) is data; [`bpf`] turns it
//! into a compact program (see there why not seccompiler's compiler); seccompiler installs it.
//!
//! Every integer argument compared is an `int`/`unsigned int` in the kernel (or, for `clone`, the
//! flags tested live in the low 32 bits), so those comparisons are on the low 32 bits: that is
//! what the kernel reads, so a caller cannot slip past the filter by setting high bits
//! (`TIOCSTI | 1<<32`). Pointers (`sendto`'s address) are compared on all 64 bits.

mod bpf;

pub use bpf::EmitError;

use seccompiler::BpfProgram;

/// Whether the sandboxed command may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Off,
    On,
    /// A domain list: IP sockets (the network namespace has only loopback, where cordon's proxy
    /// listens), but no UNIX socket the command could address a host daemon with — a pathname
    /// socket (a socat bridge, an IDE's socket in /tmp, a container engine) would reach the
    /// network around the proxy, and Landlock scopes those only from ABI 9.
    Proxied,
}

/// A comparison on one syscall argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq(u32),
    Ne(u32),
    /// `(arg & mask) == value`
    MaskedEq {
        mask: u32,
        value: u32,
    },
    /// `(arg & mask) != 0`
    AnyBits(u32),
    /// The whole 64-bit argument is not zero (a pointer that is not NULL).
    NonNull,
}

/// One deny rule: the syscall, when it is refused (every condition of one alternative holds;
/// an empty list of alternatives means always) and the escape it stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyRule {
    pub syscall: &'static str,
    pub nr: i64,
    /// Alternatives (OR) of condition lists (AND) on `(argument index, comparison)`.
    pub when: Vec<Vec<(u8, Cmp)>>,
    /// Human description of `when` ("always" when empty).
    pub condition: String,
    pub reason: &'static str,
}

const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_PACKET_TYPE: libc::c_int = 10;
const PER_LINUX: u32 = 0x0000;
const PER_LINUX32: u32 = 0x0008;
const PERSONALITY_QUERY: u32 = 0xffff_ffff;

fn always(syscall: &'static str, nr: i64, reason: &'static str) -> DenyRule {
    DenyRule { syscall, nr, when: Vec::new(), condition: "always".into(), reason }
}

fn when(
    syscall: &'static str,
    nr: i64,
    when: Vec<Vec<(u8, Cmp)>>,
    condition: impl Into<String>,
    reason: &'static str,
) -> DenyRule {
    DenyRule { syscall, nr, when, condition: condition.into(), reason }
}

#[expect(clippy::cast_sign_loss, reason = "libc's AF_*/SOCK_* constants are small positive ints")]
const fn u(v: libc::c_int) -> u32 {
    v as u32
}

/// `AF_UNIX` with a type other than STREAM and SEQPACKET: datagram (and raw, which the kernel
/// turns into datagram) sockets can send to any daemon socket on the host, and seccomp cannot
/// see the address inside sendmsg. Only STREAM (0b0001) and SEQPACKET (0b0101) have bit 0 set
/// and bits 1 and 3 clear, so three masked tests on the type (flags above 0xf ignored) refuse
/// every other type.
fn unix_datagram_alternatives() -> Vec<Vec<(u8, Cmp)>> {
    let unix = u(libc::AF_UNIX);
    let unix_type_bit =
        |mask: u32, value: u32| vec![(0, Cmp::Eq(unix)), (1, Cmp::MaskedEq { mask, value })];
    vec![unix_type_bit(0b0001, 0), unix_type_bit(0b0010, 0b0010), unix_type_bit(0b1000, 0b1000)]
}

/// The network-on alternatives: packet, vsock and other families, netlink but ROUTE, raw INET.
fn network_on_alternatives() -> Vec<Vec<(u8, Cmp)>> {
    let (unix, inet, inet6, netlink) =
        (u(libc::AF_UNIX), u(libc::AF_INET), u(libc::AF_INET6), u(libc::AF_NETLINK));
    let mut alternatives = vec![
        vec![(0, Cmp::Ne(unix)), (0, Cmp::Ne(inet)), (0, Cmp::Ne(inet6)), (0, Cmp::Ne(netlink))],
        vec![(0, Cmp::Eq(netlink)), (2, Cmp::Ne(u(libc::NETLINK_ROUTE)))],
    ];
    for family in [inet, inet6] {
        // SOCK_PACKET (10) is the obsolete packet-socket type on INET sockets.
        for ty in [libc::SOCK_RAW, SOCK_PACKET_TYPE] {
            alternatives.push(vec![
                (0, Cmp::Eq(family)),
                (1, Cmp::MaskedEq { mask: SOCK_TYPE_MASK, value: u(ty) }),
            ]);
        }
    }
    alternatives
}

/// The `socket` and `socketpair` rules for `network` (argument 0 domain, 1 type, 2 protocol):
/// each call's alternatives, its condition as `doctor` shows it, and the reason.
fn socket_rules(network: Network) -> [DenyRule; 2] {
    let unix = u(libc::AF_UNIX);
    match network {
        Network::Off => {
            let mut alternatives = vec![vec![(0, Cmp::Ne(unix))]];
            alternatives.extend(unix_datagram_alternatives());
            let (condition, reason) = (
                "domain != AF_UNIX, or AF_UNIX with a type other than STREAM/SEQPACKET",
                "network off: only UNIX stream and seqpacket sockets; Landlock does not stop UDP or raw sockets",
            );
            [
                when("socket", libc::SYS_socket, alternatives.clone(), condition, reason),
                when("socketpair", libc::SYS_socketpair, alternatives, condition, reason),
            ]
        }
        Network::On => {
            let (condition, reason) = (
                "domain not UNIX/INET/INET6/NETLINK, netlink other than ROUTE, or raw INET",
                "network on: no packet, vsock or raw sockets (sniffing, spoofing, hypervisor channels)",
            );
            [
                when("socket", libc::SYS_socket, network_on_alternatives(), condition, reason),
                when(
                    "socketpair",
                    libc::SYS_socketpair,
                    network_on_alternatives(),
                    condition,
                    reason,
                ),
            ]
        }
        Network::Proxied => {
            // A socket of its own could connect to any UNIX socket file on the host; a pair is
            // connected to itself only (stream and seqpacket: a datagram pair could still send
            // to an address).
            let mut socket = network_on_alternatives();
            socket.push(vec![(0, Cmp::Eq(unix))]);
            let mut pair = network_on_alternatives();
            pair.extend(unix_datagram_alternatives());
            [
                when(
                    "socket",
                    libc::SYS_socket,
                    socket,
                    "domain AF_UNIX, or not INET/INET6/NETLINK, netlink other than ROUTE, or raw INET",
                    "domain list: no UNIX socket to reach a host daemon or a bridge around the \
                     proxy (Landlock scopes UNIX socket files only from ABI 9); no packet, vsock \
                     or raw sockets",
                ),
                when(
                    "socketpair",
                    libc::SYS_socketpair,
                    pair,
                    "AF_UNIX with a type other than STREAM/SEQPACKET, or as for socket",
                    "domain list: a UNIX pair reaches only itself; a datagram pair could send to \
                     a host socket",
                ),
            ]
        }
    }
}
/// The whole deny table for a network setting, in the order `doctor` prints it.
pub fn deny_rules(network: Network) -> Vec<DenyRule> {
    let clone_new = [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ];
    let personality_ok = vec![vec![
        (0, Cmp::Ne(PER_LINUX)),
        (0, Cmp::Ne(PER_LINUX32)),
        (0, Cmp::Ne(PERSONALITY_QUERY)),
    ]];
    let mut rules = vec![
        always(
            "ptrace",
            libc::SYS_ptrace,
            "reading or steering another process (its memory, its registers)",
        ),
        always("process_vm_readv", libc::SYS_process_vm_readv, "reading another process's memory"),
        always(
            "process_vm_writev",
            libc::SYS_process_vm_writev,
            "writing another process's memory",
        ),
        always(
            "pidfd_getfd",
            libc::SYS_pidfd_getfd,
            "stealing a file descriptor from another process",
        ),
        always(
            "io_uring_setup",
            libc::SYS_io_uring_setup,
            "io_uring runs socket and file operations seccomp cannot see",
        ),
        always(
            "io_uring_enter",
            libc::SYS_io_uring_enter,
            "io_uring runs socket and file operations seccomp cannot see",
        ),
        always(
            "io_uring_register",
            libc::SYS_io_uring_register,
            "io_uring runs socket and file operations seccomp cannot see",
        ),
        when(
            "ioctl",
            libc::SYS_ioctl,
            vec![
                vec![(1, Cmp::Eq(u32::try_from(libc::TIOCSTI).unwrap_or(0x5412)))],
                vec![(1, Cmp::Eq(u32::try_from(libc::TIOCLINUX).unwrap_or(0x541c)))],
            ],
            "request == TIOCSTI or TIOCLINUX (low 32 bits: the kernel truncates the request)",
            "typing into the user's terminal, which runs outside the sandbox",
        ),
        always(
            "unshare",
            libc::SYS_unshare,
            "new namespaces: user namespaces give capabilities and open kernel attack surface",
        ),
        always("setns", libc::SYS_setns, "joining another namespace"),
        when(
            "clone",
            libc::SYS_clone,
            vec![vec![(0, Cmp::AnyBits(clone_new.iter().fold(0, |mask, flag| mask | u(*flag))))]],
            "flags contain any CLONE_NEW*",
            "new namespaces through clone (clone3 answers ENOSYS so libc uses clone)",
        ),
        always("mount", libc::SYS_mount, "changing the mount view the sandbox relies on"),
        always("umount2", libc::SYS_umount2, "uncovering what the mount view hides or protects"),
        always("pivot_root", libc::SYS_pivot_root, "changing the root of the mount view"),
        always("chroot", libc::SYS_chroot, "classic chroot escapes"),
        always("open_tree", libc::SYS_open_tree, "new mount API: detached copies of mounts"),
        always("move_mount", libc::SYS_move_mount, "new mount API: attaching mounts"),
        always("fsopen", libc::SYS_fsopen, "new mount API: new filesystems"),
        always("fsconfig", libc::SYS_fsconfig, "new mount API: configuring filesystems"),
        always("fsmount", libc::SYS_fsmount, "new mount API: creating mounts"),
        always("fspick", libc::SYS_fspick, "new mount API: reconfiguring mounts"),
        always("mount_setattr", libc::SYS_mount_setattr, "making read-only mounts writable again"),
        always(
            "keyctl",
            libc::SYS_keyctl,
            "kernel keyrings are shared with the user's other processes",
        ),
        always(
            "add_key",
            libc::SYS_add_key,
            "kernel keyrings are shared with the user's other processes",
        ),
        always(
            "request_key",
            libc::SYS_request_key,
            "kernel keyrings are shared with the user's other processes",
        ),
        always("bpf", libc::SYS_bpf, "eBPF: large kernel attack surface"),
        always(
            "perf_event_open",
            libc::SYS_perf_event_open,
            "perf: kernel attack surface and side channels",
        ),
        always(
            "userfaultfd",
            libc::SYS_userfaultfd,
            "userfaultfd makes kernel race exploits reliable",
        ),
        always("kexec_load", libc::SYS_kexec_load, "loading a new kernel"),
        always("kexec_file_load", libc::SYS_kexec_file_load, "loading a new kernel"),
        always("init_module", libc::SYS_init_module, "loading kernel modules"),
        always("finit_module", libc::SYS_finit_module, "loading kernel modules"),
        always("delete_module", libc::SYS_delete_module, "unloading kernel modules"),
        always(
            "open_by_handle_at",
            libc::SYS_open_by_handle_at,
            "opening files by handle bypasses path checks (the shocker escape)",
        ),
        always(
            "name_to_handle_at",
            libc::SYS_name_to_handle_at,
            "file handles for open_by_handle_at",
        ),
        when(
            "personality",
            libc::SYS_personality,
            personality_ok,
            "persona other than PER_LINUX, PER_LINUX32 or the 0xffffffff query",
            "odd personalities (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE) weaken exploit mitigations",
        ),
        always("acct", libc::SYS_acct, "process accounting writes a host file"),
        always("swapon", libc::SYS_swapon, "swap devices are host-wide"),
        always("swapoff", libc::SYS_swapoff, "swap devices are host-wide"),
        always("reboot", libc::SYS_reboot, "rebooting the host"),
        always("settimeofday", libc::SYS_settimeofday, "the clock is host-wide"),
        always("clock_settime", libc::SYS_clock_settime, "the clock is host-wide"),
        always("clock_adjtime", libc::SYS_clock_adjtime, "the clock is host-wide"),
        always("adjtimex", libc::SYS_adjtimex, "the clock is host-wide"),
    ];
    rules.extend(host_process_rules());
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        always("iopl", libc::SYS_iopl, "raw I/O port access"),
        always("ioperm", libc::SYS_ioperm, "raw I/O port access"),
    ]);
    rules.extend(setid_rules());
    rules.push(always(
        "syslog",
        libc::SYS_syslog,
        "the kernel log: kernel addresses, other users' messages",
    ));
    rules.extend(socket_rules(network));
    match network {
        Network::On | Network::Proxied => {}
        Network::Off => rules.extend(peer_addressing_rules()),
    }
    rules
}

/// Setting the set-user-ID or set-group-ID bit. A root caller's command is uid 0 without
/// capabilities, and an owner needs none to make its file set-user-ID: a copy of a shell in a
/// writable root, chmod 4755, would be a root shell for every local user once the sandbox is
/// gone. Refused when a mode with those bits is set or used to create a file (what systemd's
/// RestrictSUIDSGID= does).
fn setid_rules() -> Vec<DenyRule> {
    const SETID: u32 = 0o6000;
    const WHY: &str =
        "root inside the sandbox leaving set-user-ID files behind (a root shell for later)";
    const CONDITION: &str = "mode has S_ISUID or S_ISGID";
    // O_CREAT, and O_TMPFILE's own bit (the rest of O_TMPFILE is O_DIRECTORY).
    let creates = u(libc::O_CREAT) | 0o2000_0000;
    let mode_at = |arg: u8| vec![vec![(arg, Cmp::AnyBits(SETID))]];
    let create_at = |flags: u8, mode: u8| {
        vec![vec![(flags, Cmp::AnyBits(creates)), (mode, Cmp::AnyBits(SETID))]]
    };
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut rules = vec![
        when("fchmod", libc::SYS_fchmod, mode_at(1), CONDITION, WHY),
        when("fchmodat", libc::SYS_fchmodat, mode_at(2), CONDITION, WHY),
        when("fchmodat2", FCHMODAT2, mode_at(2), CONDITION, WHY),
        when(
            "openat",
            libc::SYS_openat,
            create_at(2, 3),
            "creating a file whose mode has S_ISUID or S_ISGID",
            WHY,
        ),
        when("mknodat", libc::SYS_mknodat, mode_at(2), CONDITION, WHY),
    ];
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        when("chmod", libc::SYS_chmod, mode_at(1), CONDITION, WHY),
        when(
            "open",
            libc::SYS_open,
            create_at(1, 2),
            "creating a file whose mode has S_ISUID or S_ISGID",
            WHY,
        ),
        when("creat", libc::SYS_creat, mode_at(1), CONDITION, WHY),
        when("mknod", libc::SYS_mknod, mode_at(1), CONDITION, WHY),
    ]);
    rules
}

/// Calls that reach other processes or host-wide state by pid or by device (what Docker's
/// default profile refuses). Inside the PID namespace host pids are invisible anyway; these
/// also hold under the subreaper fallback, where they are not. `setpriority` is left alone:
/// `nice` and `renice` of the command's own children must work, an unprivileged (capability-
/// less) caller can only lower a priority, and in the namespace a host pid cannot be named.
/// System V IPC is separated by the IPC namespace, not by a rule.
fn host_process_rules() -> Vec<DenyRule> {
    const NUMA: &str = "NUMA memory policy and page placement: moves memory of other processes \
                        (migrate_pages, move_pages) and degrades the host's performance";
    vec![
        when(
            "prlimit64",
            libc::SYS_prlimit64,
            vec![vec![(0, Cmp::Ne(0))]],
            "pid != 0 (another process; 0 = itself, what setrlimit and getrlimit use)",
            "reading or changing the resource limits of a process outside the sandbox",
        ),
        always(
            "kcmp",
            libc::SYS_kcmp,
            "comparing kernel objects of other processes (address-space and fd probing)",
        ),
        always(
            "process_madvise",
            libc::SYS_process_madvise,
            "advising (reclaiming, paging out) another process's memory",
        ),
        always("mbind", libc::SYS_mbind, NUMA),
        always("set_mempolicy", libc::SYS_set_mempolicy, NUMA),
        always("set_mempolicy_home_node", SET_MEMPOLICY_HOME_NODE, NUMA),
        always("migrate_pages", libc::SYS_migrate_pages, NUMA),
        always("move_pages", libc::SYS_move_pages, NUMA),
        always("quotactl", libc::SYS_quotactl, "disk quotas are host-wide"),
        always("quotactl_fd", QUOTACTL_FD, "disk quotas are host-wide"),
    ]
}

/// With the network off only UNIX sockets can be created, but a UNIX stream socket still
/// reaches every daemon on the host by path: tmux and screen servers (typing into the user's
/// shell), ssh-agent, the D-Bus session bus (`systemd-run --user`), X11, container engines.
/// Landlock decides `connect()` on socket files only from ABI 9, so the calls that address a
/// peer are refused; `socketpair()` and inherited sockets keep working.
fn peer_addressing_rules() -> Vec<DenyRule> {
    const WHY: &str = "network off: reaching daemons on the host through UNIX socket files (tmux, ssh-agent, D-Bus, X11)";
    vec![
        always("connect", libc::SYS_connect, WHY),
        always("bind", libc::SYS_bind, WHY),
        always("listen", libc::SYS_listen, WHY),
        always("accept", libc::SYS_accept, WHY),
        always("accept4", libc::SYS_accept4, WHY),
        when(
            "sendto",
            libc::SYS_sendto,
            vec![vec![(4, Cmp::NonNull)]],
            "with a destination address (send() without one stays allowed)",
            "network off: datagrams to an address through an inherited socket",
        ),
    ]
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

// The generic syscall table numbers these the same on x86-64 and arm64.
const CLONE3: u32 = 435;
const OPENAT2: u32 = 437;
const FCHMODAT2: i64 = 452;
const QUOTACTL_FD: i64 = 443;
const SET_MEMPOLICY_HOME_NODE: i64 = 450;

fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (u(e) & libc::SECCOMP_RET_DATA)
}

/// Compiles the deny table for `network` into one BPF program.
pub fn build_program(network: Network) -> Result<BpfProgram, EmitError> {
    const ENOSYS_CALLS: &[u32] = &[CLONE3, OPENAT2];
    let target = bpf::Target {
        audit_arch: AUDIT_ARCH,
        enosys_calls: ENOSYS_CALLS,
        deny: errno(libc::EPERM),
        enosys: errno(libc::ENOSYS),
    };
    bpf::emit(&deny_rules(network), target)
}

/// Installs `program` on the calling thread. Needs `no_new_privs` (or CAP_SYS_ADMIN).
pub fn install(program: &BpfProgram) -> Result<(), seccompiler::Error> {
    seccompiler::apply_filter(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_within_the_kernel_limit() {
        for network in [Network::Off, Network::On, Network::Proxied] {
            let program = build_program(network).unwrap();
            assert!(program.len() < 4096, "{} instructions", program.len());
        }
    }

    #[test]
    fn every_rule_names_its_reason_and_no_syscall_is_listed_twice() {
        for network in [Network::Off, Network::On, Network::Proxied] {
            let rules = deny_rules(network);
            let mut seen = std::collections::HashSet::new();
            for rule in &rules {
                assert!(!rule.reason.is_empty() && !rule.condition.is_empty());
                assert!(seen.insert(rule.nr), "{} listed twice", rule.syscall);
            }
        }
    }

    #[test]
    fn the_unix_type_bits_allow_exactly_stream_and_seqpacket() {
        let rules = deny_rules(Network::Off);
        let socket = rules.iter().find(|r| r.syscall == "socket").unwrap();
        let denied = |ty: u32| {
            socket.when.iter().any(|alternative| {
                alternative.iter().all(|(arg, cmp)| {
                    let value = if *arg == 0 { u(libc::AF_UNIX) } else { ty };
                    match *cmp {
                        Cmp::Eq(v) => value == v,
                        Cmp::Ne(v) => value != v,
                        Cmp::MaskedEq { mask, value: v } => value & mask == v,
                        Cmp::AnyBits(mask) => value & mask != 0,
                        Cmp::NonNull => unreachable!(),
                    }
                })
            })
        };
        let flags = u(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK);
        for ty in 0..16 {
            let allowed = ty == u(libc::SOCK_STREAM) || ty == u(libc::SOCK_SEQPACKET);
            assert_eq!(denied(ty), !allowed, "type {ty}");
            assert_eq!(denied(ty | flags), !allowed, "type {ty} with flags");
        }
    }

    /// Whether `rule` refuses a call with these `(argument, value)`s (others 0).
    fn refuses(rule: &DenyRule, args: &[(u8, u32)]) -> bool {
        let value = |arg: u8| args.iter().find(|(a, _)| *a == arg).map_or(0, |(_, v)| *v);
        rule.when.iter().any(|alternative| {
            alternative.iter().all(|(arg, cmp)| match *cmp {
                Cmp::Eq(v) => value(*arg) == v,
                Cmp::Ne(v) => value(*arg) != v,
                Cmp::MaskedEq { mask, value: v } => value(*arg) & mask == v,
                Cmp::AnyBits(mask) => value(*arg) & mask != 0,
                Cmp::NonNull => value(*arg) != 0,
            })
        })
    }

    #[test]
    fn a_domain_list_refuses_unix_sockets_but_keeps_ip_and_stream_pairs() {
        let rules = deny_rules(Network::Proxied);
        let rule = |name: &str| rules.iter().find(|r| r.syscall == name).unwrap();
        let (unix, inet, inet6) = (u(libc::AF_UNIX), u(libc::AF_INET), u(libc::AF_INET6));
        let (stream, dgram, seqpacket) =
            (u(libc::SOCK_STREAM), u(libc::SOCK_DGRAM), u(libc::SOCK_SEQPACKET));
        let flags = u(libc::SOCK_CLOEXEC);
        for ty in [stream, dgram, seqpacket, stream | flags] {
            assert!(refuses(rule("socket"), &[(0, unix), (1, ty)]), "AF_UNIX type {ty}");
        }
        for family in [inet, inet6] {
            assert!(!refuses(rule("socket"), &[(0, family), (1, stream)]));
            assert!(!refuses(rule("socket"), &[(0, family), (1, dgram)]));
            assert!(refuses(rule("socket"), &[(0, family), (1, u(libc::SOCK_RAW))]));
        }
        assert!(!refuses(rule("socketpair"), &[(0, unix), (1, stream | flags)]));
        assert!(!refuses(rule("socketpair"), &[(0, unix), (1, seqpacket)]));
        assert!(refuses(rule("socketpair"), &[(0, unix), (1, dgram)]));
        // The proxy is reached with connect(): no peer-addressing rule.
        assert!(rules.iter().all(|r| r.syscall != "connect"));
    }

    #[test]
    fn clone_rule_never_matches_the_exit_signal_bits() {
        // CLONE_NEWTIME (0x80) shares its bit with the exit signal in clone's flags: it must not
        // be in the clone rule, or every fork with SIGCHLD|0x80 patterns would break.
        let rules = deny_rules(Network::Off);
        let clone = rules.iter().find(|r| r.syscall == "clone").unwrap();
        for alternative in &clone.when {
            for (_, cmp) in alternative {
                if let Cmp::AnyBits(mask) = cmp {
                    assert_eq!(mask & 0xff, 0);
                }
            }
        }
    }
}
