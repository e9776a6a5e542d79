use super::*;
use pretty_assertions::assert_eq;

fn context(network: bool) -> DenialContext {
    DenialContext {
        cwd: PathBuf::from("/w"),
        writable_roots: vec![PathBuf::from("/w"), PathBuf::from("/tmp")],
        protected: vec![PathBuf::from("/w/.git/hooks"), PathBuf::from("/w/.cordon")],
        hidden: vec![PathBuf::from("/home/u/.ssh")],
        home_hidden: vec![PathBuf::from("/home/u/.tsh")],
        network,
        home: Some(PathBuf::from("/home/u")),
        own_dirs: vec![PathBuf::from("/home/u/.cargo/bin")],
        write_refusal: WriteRefusal::AnyDenial,
        read_only: false,
        host_loopback_ports: Vec::new(),
    }
}

#[test]
fn with_read_only_mounts_a_plain_permission_denied_outside_the_roots_is_a_failed_read() {
    let context = DenialContext { write_refusal: WriteRefusal::ReadOnlyMounts, ..context(false) };
    let denied = |stderr: &str| {
        classify(
            Finished { sandbox: SandboxKind::Linux, exit: ExitKind::Code(1), stdout: "", stderr },
            &context,
        )
    };
    assert_eq!(denied("cat: /proc/1/environ: Permission denied"), Verdict::Failure);
    assert_eq!(denied("cat: /root/secret: Permission denied"), Verdict::Failure);
    assert_eq!(
        denied("touch: cannot touch '/etc/x': Read-only file system"),
        Verdict::LikelySandboxDenied
    );
    assert_eq!(
        denied("chmod: changing permissions of '/etc/x': Operation not permitted"),
        Verdict::LikelySandboxDenied
    );
    assert_eq!(denied("cat: /home/u/.ssh/id: Permission denied"), Verdict::LikelySandboxDenied);
}

fn verdict(sandbox: SandboxKind, exit: ExitKind, stderr: &str) -> Verdict {
    classify(Finished { sandbox, exit, stdout: "", stderr }, &context(false))
}

#[test]
fn denials_need_a_sandbox_a_real_failure_and_evidence_that_fits_the_policy() {
    use SandboxKind::{Linux, None as Unsandboxed};
    let etc = "sh: 1: cannot create /etc/x: Read-only file system";
    let hooks = "touch: cannot touch '.git/hooks/pre-commit': Read-only file system";
    assert_eq!(
        [
            verdict(Linux, ExitKind::Code(2), etc),
            verdict(Linux, ExitKind::Code(1), etc),
            verdict(Linux, ExitKind::Code(1), hooks),
            verdict(Linux, ExitKind::Code(1), "curl: (6) Could not resolve host: example.org"),
            verdict(Linux, ExitKind::Code(1), "socket: Operation not permitted"),
            // Not denials: no sandbox, success, not found, a path the policy allows, no path.
            verdict(Unsandboxed, ExitKind::Code(1), etc),
            verdict(Linux, ExitKind::Code(0), etc),
            verdict(Linux, ExitKind::Code(127), etc),
            verdict(Linux, ExitKind::Code(1), "cannot create /w/x: Permission denied"),
            verdict(Linux, ExitKind::Code(1), "cannot create /tmp/x: Permission denied"),
            verdict(Linux, ExitKind::Code(1), "Operation not permitted"),
            verdict(Linux, ExitKind::Code(1), "Permission denied (publickey)."),
            verdict(Linux, ExitKind::Code(2), "usage: grep [OPTION]"),
            // cordon's filter answers with errors and never kills: SIGSYS is no evidence.
            verdict(Linux, ExitKind::Signal(libc::SIGSYS), ""),
            verdict(Linux, ExitKind::Code(128 + libc::SIGSYS), ""),
            verdict(Linux, ExitKind::Signal(libc::SIGKILL), ""),
            verdict(Linux, ExitKind::TimedOut, etc),
        ],
        [
            Verdict::LikelySandboxDenied,
            Verdict::LikelySandboxDenied,
            Verdict::LikelySandboxDenied,
            Verdict::LikelySandboxDenied,
            Verdict::LikelySandboxDenied,
            Verdict::Failure,
            Verdict::Success,
            Verdict::Failure,
            Verdict::Failure,
            Verdict::Failure,
            Verdict::Failure,
            Verdict::Failure,
            Verdict::Failure,
            Verdict::Signal,
            Verdict::Failure,
            Verdict::Signal,
            Verdict::Timeout,
        ]
    );
}

#[test]
fn network_failures_count_only_with_the_network_off() {
    let line = "curl: (6) Could not resolve host: example.org";
    let finished =
        Finished { sandbox: SandboxKind::Linux, exit: ExitKind::Code(6), stdout: "", stderr: line };
    assert_eq!(classify(finished, &context(false)), Verdict::LikelySandboxDenied);
    assert_eq!(classify(finished, &context(true)), Verdict::Failure);
}

#[test]
fn a_helper_that_could_not_set_up_is_a_setup_failure_not_a_denial() {
    let line = "codex-linux-sandbox: Landlock: not enforced by this kernel (sandbox unavailable)";
    assert_eq!(verdict(SandboxKind::Linux, ExitKind::Code(125), line), Verdict::SandboxSetupFailed);
    // The same status from the command itself, without the helper's line, is a failure.
    assert_eq!(
        verdict(SandboxKind::Linux, ExitKind::Code(125), "sandbox: permission denied"),
        Verdict::Failure
    );
    assert_eq!(setup_failure_line(&format!("x\n{line}\n")), Some(line));
}

/// `sandbox-exec`'s own failures are setup failures (never an unsandboxed retry):
/// nested inside another sandbox (exit 71), a profile that does not compile (exit 65).
#[test]
fn sandbox_exec_that_could_not_apply_its_profile_is_a_setup_failure() {
    let nested = "sandbox-exec: sandbox_apply: Operation not permitted";
    assert_eq!(
        verdict(SandboxKind::Seatbelt, ExitKind::Code(71), nested),
        Verdict::SandboxSetupFailed
    );
    let syntax = "sandbox-exec: syntax error in profile";
    assert_eq!(
        verdict(SandboxKind::Seatbelt, ExitKind::Code(65), syntax),
        Verdict::SandboxSetupFailed
    );
    // A command's own exit 71 with a permission message is judged as a command's failure.
    assert_ne!(
        verdict(SandboxKind::Seatbelt, ExitKind::Code(71), "cp: x: Operation not permitted"),
        Verdict::SandboxSetupFailed
    );
    // And the helper on Linux sets up with 125 only.
    assert_ne!(
        verdict(SandboxKind::Linux, ExitKind::Code(71), nested),
        Verdict::SandboxSetupFailed
    );
}

/// `sandbox-exec` exits 71 when it cannot start the command; that is the command's 127 or 126,
/// never a setup failure (a typo would otherwise read as a broken sandbox).
#[test]
fn a_command_sandbox_exec_could_not_start_ends_with_the_shells_status() {
    let exit = |stderr: &str| command_exit(SandboxKind::Seatbelt, ExitKind::Code(71), stderr);
    let missing = "sandbox-exec: execvp() of 'cargo-tset' failed: No such file or directory";
    assert_eq!(exit(missing), ExitKind::Code(127));
    assert_eq!(verdict(SandboxKind::Seatbelt, exit(missing), missing), Verdict::Failure);
    let not_executable = "sandbox-exec: execvp() of './run.sh' failed: Permission denied";
    assert_eq!(exit(not_executable), ExitKind::Code(126));
    let refused = "sandbox-exec: execvp() of '/Users/me/.ssh/x' failed: Operation not permitted";
    assert_eq!(exit(refused), ExitKind::Code(126));
    // Everything else keeps its status: another setup failure, the command's own 71, Linux.
    assert_eq!(exit("sandbox-exec: sandbox_apply: Operation not permitted"), ExitKind::Code(71));
    assert_eq!(exit("cp: x: Operation not permitted"), ExitKind::Code(71));
    assert_eq!(command_exit(SandboxKind::Linux, ExitKind::Code(71), missing), ExitKind::Code(71));
    assert_eq!(command_exit(SandboxKind::Seatbelt, ExitKind::Code(1), missing), ExitKind::Code(1));
}

#[test]
fn macos_name_resolution_failures_count_as_network_denials_with_the_network_off() {
    let line = "curl: (6) Could not resolve host: example.org; nodename nor servname provided, or not known";
    let finished = Finished {
        sandbox: SandboxKind::Seatbelt,
        exit: ExitKind::Code(6),
        stdout: "",
        stderr: line,
    };
    assert_eq!(classify(finished, &context(false)), Verdict::LikelySandboxDenied);
    let python = "urllib.error.URLError: <urlopen error [Errno 8] nodename nor servname provided, or not known>";
    let finished = Finished {
        sandbox: SandboxKind::Seatbelt,
        exit: ExitKind::Code(1),
        stdout: "",
        stderr: python,
    };
    assert_eq!(classify(finished, &context(false)), Verdict::LikelySandboxDenied);
}

#[test]
fn shell_status_follows_the_convention() {
    assert_eq!(ExitKind::Code(3).shell_status(), 3);
    assert_eq!(ExitKind::Signal(9).shell_status(), 137);
    assert_eq!(ExitKind::TimedOut.shell_status(), 124);
}

#[test]
fn a_denial_names_what_was_blocked_and_the_knob() {
    let context = context(false);
    let cases = [
        (
            "sh: 1: cannot create /etc/x: Read-only file system",
            Blocked::OutsideRoots {
                path: "/etc/x".into(),
                allow: Allow::OutsideTheSandbox {
                    why: "a system directory, or another user's home".into(),
                },
            },
            "run it outside the sandbox",
        ),
        (
            "fatal: Unable to create '/etc/.git/index.lock': Read-only file system",
            Blocked::OutsideRoots {
                path: "/etc/.git/index.lock".into(),
                allow: Allow::OutsideTheSandbox {
                    why: "a system directory, or another user's home".into(),
                },
            },
            "run it outside the sandbox",
        ),
        (
            "touch: cannot touch '/home/v/x': Read-only file system",
            Blocked::OutsideRoots {
                path: "/home/v/x".into(),
                allow: Allow::OutsideTheSandbox {
                    why: "a system directory, or another user's home".into(),
                },
            },
            "run it outside the sandbox",
        ),
        (
            "touch: cannot touch '/home/u/.config/direnv/direnvrc': Read-only file system",
            Blocked::OutsideRoots {
                path: "/home/u/.config/direnv/direnvrc".into(),
                allow: Allow::OutsideTheSandbox {
                    why: "a start-up directory of your home (code there runs later)".into(),
                },
            },
            "run it outside the sandbox",
        ),
        (
            "touch: cannot touch '.git/hooks/pre-commit': Read-only file system",
            Blocked::Protected { path: "/w/.git/hooks/pre-commit".into() },
            "protected",
        ),
        (
            "cat: /home/u/.ssh/id_ed25519: Permission denied",
            Blocked::Hidden { path: "/home/u/.ssh/id_ed25519".into() },
            "--unhide",
        ),
        (
            "cat: /home/u/.tsh/keys/u: Permission denied",
            Blocked::NotOnHomeList {
                path: "/home/u/.tsh/keys/u".into(),
                entry: "/home/u/.tsh".into(),
            },
            "--unhide /home/u/.tsh",
        ),
        (
            "curl: (6) Could not resolve host: example.org",
            Blocked::Network { preset: None, host: Some("example.org".into()) },
            "--allow-domain example.org",
        ),
        (
            "npm error request to https://registry.npmjs.org/lodash failed, reason: getaddrinfo \
             EAI_AGAIN registry.npmjs.org",
            Blocked::Network { preset: Some("npm"), host: Some("registry.npmjs.org".into()) },
            "--preset npm",
        ),
        (
            "npm error getaddrinfo ENOTFOUND registry.npmjs.org",
            Blocked::Network { preset: Some("npm"), host: Some("registry.npmjs.org".into()) },
            "--preset npm",
        ),
        (
            "go: github.com/x/y@v1: Get \"https://proxy.golang.org/github.com/x/y/@v/v1.mod\": \
             dial tcp: lookup proxy.golang.org: no such host",
            Blocked::Network { preset: None, host: Some("proxy.golang.org".into()) },
            "--allow-domain proxy.golang.org",
        ),
        (
            "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            Blocked::Network { preset: None, host: None },
            "--network",
        ),
        (
            "warning: failed to write cache, path: /home/u/.cargo/registry/index/ix-1/.cache/cf/\
             g-/cfg-if, error: Read-only file system (os error 30)",
            Blocked::OutsideRoots {
                path: "/home/u/.cargo/registry/index/ix-1/.cache/cf/g-/cfg-if".into(),
                allow: Allow::Preset { preset: "cargo".into() },
            },
            "--preset cargo",
        ),
        (
            "touch: cannot touch '/home/u/.npm/_cacache/tmp/x': Read-only file system",
            Blocked::OutsideRoots {
                path: "/home/u/.npm/_cacache/tmp/x".into(),
                allow: Allow::Preset { preset: "npm".into() },
            },
            "--preset npm",
        ),
        (
            "touch: cannot touch '/srv/data/x': Read-only file system",
            Blocked::OutsideRoots {
                path: "/srv/data/x".into(),
                allow: Allow::AddDir { dir: "/srv/data".into() },
            },
            "--add-dir /srv/data",
        ),
        (
            "fatal: Unable to create '/r/.git/index.lock': Read-only file system",
            Blocked::OutsideRoots {
                path: "/r/.git/index.lock".into(),
                allow: Allow::RepositoryRoot { root: "/r".into() },
            },
            "-C /r",
        ),
        (
            "sh: 1: cannot create /home/u/notes.txt: Read-only file system",
            Blocked::OutsideRoots {
                path: "/home/u/notes.txt".into(),
                allow: Allow::OutsideTheSandbox {
                    why: "your home directory, or above it (start-up files there run outside \
                          any sandbox later)"
                        .into(),
                },
            },
            "-a on-failure",
        ),
        (
            "mv: cannot move 'x' to '/home/u/.cargo/bin/cordon': Read-only file system",
            Blocked::OutsideRoots {
                path: "/home/u/.cargo/bin/cordon".into(),
                allow: Allow::OutsideTheSandbox { why: "where cordon itself is installed".into() },
            },
            "-a on-failure",
        ),
    ];
    for (line, blocked, knob) in cases {
        assert_eq!(explain(line, &context), Some(blocked.clone()), "{line}");
        assert!(blocked.advice().contains(knob), "{}", blocked.advice());
    }
    assert_eq!(explain("cannot create /w/ok: Permission denied", &context), None);
}

fn blocked(stderr: &str, context: &DenialContext) -> Vec<Blocked> {
    explain_output("", stderr, context)
}

#[test]
fn the_program_that_speaks_is_never_the_blocked_path() {
    let found =
        blocked("/bin/sh: 1: cannot create /srv/out.txt: Read-only file system", &context(false));
    assert_eq!(
        found,
        [Blocked::OutsideRoots {
            path: PathBuf::from("/srv/out.txt"),
            allow: Allow::AddDir { dir: PathBuf::from("/srv") }
        }]
    );
}

#[test]
fn quoted_bare_names_are_paths_and_read_only_mode_never_advises_add_dir() {
    let read_only = DenialContext { writable_roots: Vec::new(), read_only: true, ..context(false) };
    let found = blocked("touch: cannot touch 'out.txt': Read-only file system", &read_only);
    assert_eq!(
        found,
        [Blocked::OutsideRoots {
            path: PathBuf::from("/w/out.txt"),
            allow: Allow::WorkspaceWrite { dir: PathBuf::new() }
        }]
    );
    assert!(found[0].advice().contains("-s workspace-write"), "{}", found[0].advice());
    assert!(!found[0].advice().contains("--add-dir"), "{}", found[0].advice());
    let elsewhere = blocked("sh: 1: cannot create /srv/x: Read-only file system", &read_only);
    assert!(elsewhere[0].advice().contains("--add-dir /srv"), "{}", elsewhere[0].advice());
}

#[test]
fn a_relative_path_refused_inside_a_root_is_reported_as_unlocated() {
    let found = blocked("touch: cannot touch 'rel.txt': Read-only file system", &context(false));
    assert_eq!(found, [Blocked::Unlocated { path: PathBuf::from("rel.txt") }]);
    // Permission denied inside a root is no evidence of where the command was.
    assert_eq!(blocked("touch: cannot touch 'rel.txt': Permission denied", &context(false)), []);
}

#[test]
fn a_busy_protected_path_is_named_and_a_busy_device_is_not_evidence() {
    let found = blocked(
        "error: could not write config file /w/.cordon/x: Device or resource busy",
        &context(false),
    );
    assert_eq!(found, [Blocked::Protected { path: PathBuf::from("/w/.cordon/x") }]);
    assert_eq!(
        blocked("umount: /srv: target is busy; Device or resource busy", &context(false)),
        []
    );
}

#[test]
fn a_denial_without_a_path_takes_the_path_of_the_lines_before_it() {
    let cargo = "error: failed to write /srv/Cargo.lock\n\nCaused by:\n  Read-only file system (os error 30)";
    assert_eq!(
        blocked(cargo, &context(false)),
        [Blocked::OutsideRoots {
            path: PathBuf::from("/srv/Cargo.lock"),
            allow: Allow::AddDir { dir: PathBuf::from("/srv") }
        }]
    );
}

#[test]
fn erofs_inside_a_name_is_no_evidence() {
    let tsc =
        "src/app.ts(3,7): error TS2339: Property 'numberOfSamples' does not exist on type 'Stats'.";
    assert_eq!(blocked(tsc, &context(false)), []);
    let note = "note: numberOfSamples declared in /usr/include/stats.h line 12";
    assert_eq!(blocked(note, &context(false)), []);
    let node = "Error: EROFS: read-only file system, open '/srv/x'";
    assert_eq!(
        blocked(node, &context(false)),
        [Blocked::OutsideRoots {
            path: PathBuf::from("/srv/x"),
            allow: Allow::AddDir { dir: PathBuf::from("/srv") }
        }]
    );
}

/// With the network off a command has a loopback of its own: a connection refused there is
/// the command's own outcome (its test server did not start) unless the host serves that port
/// (then the sandbox kept it apart, and it can be forwarded); a refused or unreachable outside
/// address is the sandbox's.
#[test]
fn a_connection_refused_on_loopback_is_a_denial_only_where_the_host_listens() {
    let off = context(false);
    for line in [
        "Error: connect ECONNREFUSED 127.0.0.1:3000",
        "curl: (7) Failed to connect to localhost port 8080 after 0 ms: Connection refused",
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=5432): \
         Failed to establish a new connection: [Errno 111] Connection refused",
        "dial tcp [::1]:6379: connect: connection refused",
    ] {
        assert_eq!(explain(line, &off), None, "{line}");
    }
    let serving = DenialContext { host_loopback_ports: vec![5432, 3000], ..context(false) };
    for (line, port) in [
        (
            "psql: error: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: \
          Connection refused",
            5432,
        ),
        ("Error: connect ECONNREFUSED 127.0.0.1:3000", 3000),
        (
            "curl: (7) Failed to connect to localhost port 5432 after 0 ms: Couldn't connect to \
          server",
            5432,
        ),
    ] {
        assert_eq!(
            explain(line, &serving),
            Some(Blocked::Network { preset: None, host: Some(format!("127.0.0.1:{port}")) }),
            "{line}"
        );
    }
    let wget = "Connecting to localhost (localhost)|127.0.0.1|:5432... failed: Connection refused.";
    assert_eq!(
        explain(wget, &serving),
        Some(Blocked::Network { preset: None, host: Some("127.0.0.1:5432".to_owned()) })
    );
    // Refused with no address (Python's errno text): never the sandbox's.
    let python = "ConnectionRefusedError: [Errno 111] Connection refused";
    assert_eq!(explain(python, &serving), None);
    // Refused by seccomp (no namespace of its own): the sandbox's, as always.
    let eperm = "ConnectionRefusedError? no: PermissionError: [Errno 1] Operation not permitted: \
                 connect to 127.0.0.1:9";
    assert!(matches!(explain(eperm, &off), Some(Blocked::Network { .. })), "{eperm}");
    for line in [
        "curl: (7) Failed to connect to 93.184.216.34 port 443 after 0 ms: Network is unreachable",
        "npm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN \
         registry.npmjs.org",
    ] {
        assert!(matches!(explain(line, &off), Some(Blocked::Network { .. })), "{line}");
    }
    // pip without retries names no network at all, only an index that offered nothing.
    let pip = "ERROR: Could not find a version that satisfies the requirement six==1.17.0 \
               (from versions: none)";
    assert_eq!(explain(pip, &off), Some(Blocked::Network { preset: Some("pip"), host: None }));
    assert_eq!(explain(pip, &context(true)), None);
}
