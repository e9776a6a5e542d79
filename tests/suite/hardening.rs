//! Privileges and the wider kernel surface: capabilities, other processes' environments,
//! device nodes, namespaces, keyrings, BPF, perf, userfaultfd, mounts, the i386 entry.

use std::path::Path;
use std::process::{Command, Stdio};

use super::util::*;

#[test]
fn root_runs_with_no_capabilities_at_all() {
    require_sandbox!(1);
    skip_unless!(is_root(), "needs root to check that root's capabilities are dropped");
    let dir = scratch();
    let run = sandbox_sh(
        User::Root,
        &[],
        dir.path(),
        "grep -E '^Cap(Eff|Prm|Bnd|Amb|Inh):' /proc/self/status; id -u",
    );
    run.assert_ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    for line in &lines[..5] {
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert_eq!(lines[5], "0", "the command still runs as uid 0");
}

#[test]
fn another_process_environment_cannot_be_read() {
    require_sandbox!(1);
    let victim = Command::new("sleep").arg("30").env("VICTIM_SECRET", "hunter2").spawn().unwrap();
    let dir = scratch();
    let run =
        sandbox_sh(User::Root, &[], dir.path(), &format!("cat /proc/{}/environ", victim.id()));
    let mut victim = victim;
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(!run.stdout.contains("hunter2"));
    assert_ne!(run.code, Some(0));
}

#[test]
fn device_nodes_cannot_be_made_in_a_writable_root() {
    require_sandbox!(1);
    let dir = scratch();
    for user in USERS {
        chown_nobody(dir.path());
        // Writing directly: what the kernel refuses, with the FIFO on disk as the control.
        let run = sandbox_sh(
            user,
            &["--full-auto", "--writes", "direct"],
            dir.path(),
            "mknod blk b 8 0; mknod chr c 1 3; mkfifo fifo && echo fifo-ok",
        );
        assert!(run.stdout.contains("fifo-ok"), "{user:?}: FIFOs stay allowed: {}", run.stderr);
        assert!(!dir.path().join("blk").exists(), "{user:?}");
        assert!(!dir.path().join("chr").exists(), "{user:?}");
        std::fs::remove_file(dir.path().join("fifo")).unwrap();
    }
}

#[test]
fn namespaces_keyrings_bpf_perf_userfaultfd_and_mounts_are_refused() {
    require_sandbox!(1);
    let dir = scratch();
    for user in USERS {
        let script = "unshare -U true && echo unshare-U; unshare -r true && echo unshare-r; \
                      keyctl show >/dev/null 2>&1 && echo keyctl; \
                      mount -t tmpfs none /mnt 2>/dev/null && echo mounted; true";
        let run = sandbox_sh(user, &[], dir.path(), script);
        run.assert_ok();
        assert_eq!(run.stdout, "", "{user:?}: these succeeded: {}", run.stdout);

        let calls = [
            (
                "clone_newuser",
                format!(
                    "libc.syscall({}, {}, 0, 0, 0, 0)",
                    libc::SYS_clone,
                    libc::CLONE_NEWUSER | libc::SIGCHLD
                ),
            ),
            ("unshare", format!("libc.unshare({})", libc::CLONE_NEWUSER)),
            ("keyctl", format!("libc.syscall({}, 0, -3, 0)", libc::SYS_keyctl)),
            ("add_key", format!("libc.syscall({}, b'user', b'k', b'v', 1, -3)", libc::SYS_add_key)),
            ("bpf", format!("libc.syscall({}, 0, 0, 0)", libc::SYS_bpf)),
            (
                "perf_event_open",
                format!(
                    "libc.syscall({}, ctypes.create_string_buffer(128), 0, -1, -1, 0)",
                    libc::SYS_perf_event_open
                ),
            ),
            ("userfaultfd", format!("libc.syscall({}, 0)", libc::SYS_userfaultfd)),
            ("fsopen", format!("libc.syscall({}, b'tmpfs', 0)", libc::SYS_fsopen)),
            ("open_tree", format!("libc.syscall({}, -100, b'/', 1)", libc::SYS_open_tree)),
            ("setns", format!("libc.syscall({}, 0, 0)", libc::SYS_setns)),
            (
                "open_by_handle_at",
                format!("libc.syscall({}, -100, 0, 0)", libc::SYS_open_by_handle_at),
            ),
            ("personality", "libc.personality(0x0400000)".to_owned()),
            ("x32_getpid", format!("libc.syscall(0x40000000 | {})", libc::SYS_getpid)),
        ];
        for (name, call) in calls {
            // This kernel has no x32 ABI, so an x32 number fails with ENOSYS without the filter:
            // the rule stays, and EPERM here shows it is the filter that answered.
            let run = python_sandboxed(user, &[], dir.path(), &syscall_probe(&call));
            assert_eperm(&run, &format!("{user:?} {name}"));
        }
    }
}

#[test]
fn programs_that_use_clone3_through_libc_still_work() {
    require_sandbox!(1);
    let dir = scratch();
    let code = "import threading\nr=[]\nt=[threading.Thread(target=r.append, args=(i,)) for i in range(4)]\n[x.start() for x in t]\n[x.join() for x in t]\nprint(len(r))";
    let script = format!(
        "{} -c '{code}' && git init -q repo && git -C repo status --short && echo git-ok; (cargo --version >/dev/null 2>&1 || ! command -v cargo >/dev/null) && echo cargo-ok",
        python()
    );
    let run = sandbox_sh(User::Root, &["--full-auto"], dir.path(), &script);
    run.assert_ok();
    assert_eq!(run.stdout, "4\ngit-ok\ncargo-ok\n", "{}", run.stderr);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn an_i386_socket_call_through_int_0x80_is_refused() {
    require_sandbox!(1);
    let dir = scratch();
    let src = dir.path().join("int80.c");
    // i386 socketcall-free `socket` is number 359; AF_INET=2, SOCK_STREAM=1.
    std::fs::write(
        &src,
        r#"#include <stdio.h>
int main(void) {
    long ret;
    __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(359), "b"(2), "c"(1), "d"(0) : "memory");
    printf("ret=%ld\n", ret);
    return ret >= 0 ? 0 : 1;
}
"#,
    )
    .unwrap();
    let bin = dir.path().join("int80");
    let cc = Command::new("cc").arg("-O0").arg("-o").arg(&bin).arg(&src).output();
    skip_unless!(
        cc.as_ref().is_ok_and(|o| o.status.success()),
        "needs a C compiler (cc) for the int 0x80 probe"
    );
    let bare = Command::new(&bin).output().unwrap();
    skip_unless!(
        bare.status.success(),
        "this kernel has no IA32 emulation: the probe fails even unsandboxed"
    );
    let run = sandbox_sh(User::Root, &[], dir.path(), &bin.display().to_string());
    assert!(
        !run.stdout.contains("ret=") || run.stdout.contains("ret=-"),
        "the socket was created: {}",
        run.stdout
    );
    assert_ne!(run.code, Some(0));
}

#[test]
fn raw_disk_devices_are_covered_for_root() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    use std::os::unix::fs::FileTypeExt;
    let block: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        .map(|e| e.path().display().to_string())
        .collect();
    skip_unless!(!block.is_empty(), "no block device in /dev to check");
    let dir = scratch();
    // Gone (a `/dev` of the sandbox's own) or covered by /dev/null (the host's `/dev`, kept
    // for a working directory or a root there): never a disk.
    let script: String = block
        .iter()
        .map(|dev| {
            format!(
                "stat -L -c '%t:%T' {dev} 2>/dev/null || echo gone; \
                 head -c 4096 {dev} 2>/dev/null | wc -c;"
            )
        })
        .collect();
    let run = sandbox_sh(User::Root, &[], dir.path(), &script);
    run.assert_ok();
    for (i, line) in run.stdout.lines().enumerate() {
        if i % 2 == 0 {
            assert!(line == "1:3" || line == "gone", "{} is reachable: {line}", block[i / 2]);
        } else {
            assert_eq!(line.trim(), "0", "{} gave data", block[i / 2]);
        }
    }
}

/// A second devtmpfs (every device node of the machine) mounted at a new directory for a
/// test, unmounted when dropped.
/// `bash -c SCRIPT` as `user` in `dir`, with stdin from `/dev/null`: (stdout, stderr).
fn bash_as(user: User, dir: &Path, script: &str) -> (String, String) {
    let out = command_as(user, "bash")
        .args(["-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A file system of the kernel's own mounted at a scratch path, unmounted on drop.
struct Mounted(std::path::PathBuf);

impl Mounted {
    /// Makes `at` and mounts a `kind` there (`devtmpfs`, `sysfs`); `None` when the mount is
    /// refused.
    fn kernel_fs(kind: &str, at: &Path) -> Option<Mounted> {
        std::fs::create_dir(at).unwrap();
        let status = Command::new("mount").args(["-t", kind, kind]).arg(at).status();
        status.is_ok_and(|status| status.success()).then(|| Mounted(at.to_owned()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Device nodes open only in the sandbox's `/dev`: a node of the same device anywhere else —
/// on disk outside the writable roots, in the workspace, on a second devtmpfs (which holds every
/// disk of the machine) — opens nothing, for root (whom a disk's node lets read the disk whole,
/// every hidden secret with it) as for anyone, writing through a transaction or directly. The
/// control opens each one outside; and a directory of `/dev` the user names as a writable root
/// (as for `/dev/dri`) keeps its devices.
#[test]
fn device_nodes_outside_the_sandboxs_dev_open_nothing() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    skip_unless!(is_root(), "making device nodes and mounting a devtmpfs needs root");
    use std::os::unix::fs::FileTypeExt;
    let outside = scratch();
    let work = scratch();
    let mknod = |path: &Path| {
        let made =
            Command::new("mknod").args(["-m", "0666"]).arg(path).args(["c", "1", "5"]).status();
        assert!(made.unwrap().success(), "mknod {}", path.display());
    };
    mknod(&outside.path().join("zero"));
    mknod(&work.path().join("zero"));
    let devfs = outside.path().join("devfs");
    let mounted = Mounted::kernel_fs("devtmpfs", &devfs);
    skip_unless!(mounted.is_some(), "cannot mount a devtmpfs here");
    let mut nodes = vec![outside.path().join("zero"), work.path().join("zero"), devfs.join("zero")];
    // A disk, where the machine has one: what the node would give away.
    nodes.extend(
        std::fs::read_dir(&devfs)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
            .map(|e| e.path())
            .take(1),
    );
    let code: String = nodes
        .iter()
        .map(|node| {
            let node = node.display();
            format!(
                "try:\n    open('{node}', 'rb').read(1); print('opened {node}')\n\
                 except OSError as e:\n    print('refused {node}', e.errno)\n"
            )
        })
        .collect();
    for user in USERS {
        for flags in [&[][..], &["--writes", "direct"][..]] {
            let run = python_sandboxed(user, flags, work.path(), &code);
            run.assert_ok();
            for node in &nodes {
                let refused = format!("refused {} 13", node.display());
                assert!(run.stdout.contains(&refused), "{user:?} {flags:?}: {}", run.stdout);
            }
        }
    }
    let control = Command::new(python()).args(["-c", &code]).output().unwrap();
    let control = String::from_utf8_lossy(&control.stdout);
    for node in &nodes {
        assert!(control.contains(&format!("opened {}", node.display())), "{control}");
    }
    let named = Path::new("/dev").join(format!("cordon-test-{}", std::process::id()));
    std::fs::create_dir(&named).unwrap();
    struct Remove<'a>(&'a Path);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0);
        }
    }
    let _remove = Remove(&named);
    mknod(&named.join("zero"));
    let node = named.join("zero").display().to_string();
    let code = format!("print(len(open('{node}', 'rb').read(3)))");
    for user in USERS {
        let flags = ["--full-auto", "--add-dir", &named.display().to_string()];
        let run = python_sandboxed(user, &flags, work.path(), &code);
        run.assert_ok();
        assert_eq!(run.stdout.trim(), "3", "{user:?}");
    }
}

/// A directory descriptor the caller passes on (`exec 3< DIR`, a harness that leaks one) is
/// closed before the command runs, with a warning: it resolves through the caller's mounts,
/// around the view (a chmod of a file outside the roots would pass its read-only mounts).
/// Through `cordon sandbox` and the helper called directly, as root and as uid 65534; the
/// control makes the same change through the same descriptor outside the sandbox.
#[test]
fn a_directory_descriptor_passed_on_is_closed_before_the_command_runs() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    use std::os::unix::fs::PermissionsExt;
    let probe = [
        "import os, sys\n",
        "try:\n",
        "    os.chmod('victim', 0o666, dir_fd=int(sys.argv[1]))\n",
        "    print('changed')\n",
        "except OSError as e:\n",
        "    print('refused', e.errno)\n",
    ]
    .concat();
    let py = python();
    for user in USERS {
        let outside = scratch();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "x").unwrap();
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&victim, private.clone()).unwrap();
        if user == User::Nobody {
            chown_nobody(&victim);
        }
        let work = scratch();
        let probe_file = work.path().join("probe.py");
        std::fs::write(&probe_file, &probe).unwrap();
        let cordon = cordon_for(user);
        let (o, w, c, p) = (
            outside.path().display(),
            work.path().display(),
            cordon.display(),
            probe_file.display(),
        );
        // Above the standard streams, and as one of them (`< DIR`), whose number the command
        // takes over: closed, or `/dev/null` in its place (EBADF, ENOTDIR).
        let runs = [
            format!("exec 3< {o}; exec {c} sandbox linux -s read-only -C {w} -- {py} {p} 3"),
            format!(
                "exec 3< {o}; exec -a codex-linux-sandbox {c} --sandbox-policy-cwd {w} \
                 --sandbox-policy '{{\"type\":\"read-only\"}}' -- {py} {p} 3"
            ),
            format!("exec {c} sandbox linux -s read-only -C {w} -- {py} {p} 0 < {o}"),
            format!(
                "exec {c} exec -a never -s workspace-write --writes direct -C {w} -- {py} {p} 0 < {o}"
            ),
        ];
        let bash = |script: &str| bash_as(user, work.path(), script);
        let mode = || std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777;
        for run in runs {
            let (stdout, stderr) = bash(&run);
            let refused = stdout.contains("refused 9") || stdout.contains("refused 20");
            assert!(refused, "{user:?} {run}: {stdout}{stderr}");
            assert!(
                stderr.contains("directory descriptor") || stderr.contains("were directories"),
                "{user:?}: {stderr}"
            );
            assert_eq!(mode(), 0o600, "{user:?} {run}");
        }
        let (stdout, stderr) = bash(&format!("exec 3< {o}; {py} {p} 3"));
        assert!(stdout.contains("changed"), "{user:?}: the control: {stdout}{stderr}");
        assert_eq!(mode(), 0o666, "{user:?}: the control");
    }
}

/// Where the host's `/dev` stays (here: a working directory in it), a read right that lands
/// on another mount of its file system — a second devtmpfs beside the user's home, which the
/// home's allow-list grants entry by entry — does not grant the devices of `/dev` that the
/// read rights leave out (the consoles, other devices), as it would by inode.
#[test]
fn a_second_devtmpfs_grants_nothing_of_the_hosts_dev() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    skip_unless!(is_root(), "uid 0 owns the consoles; mounting a devtmpfs needs root");
    use std::os::unix::fs::FileTypeExt;
    let ordinary = ["null", "zero", "full", "random", "urandom", "tty", "ptmx", "console"];
    // Those this caller can open outside (each without blocking).
    let devices: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_char_device()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !ordinary.contains(&name.as_str()) && !name.starts_with("tty"))
        .filter(|name| {
            let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
            nix::fcntl::open(&Path::new("/dev").join(name), flags, nix::sys::stat::Mode::empty())
                .is_ok()
        })
        .collect();
    skip_unless!(!devices.is_empty(), "no other character device in /dev that root can open");
    let around = scratch();
    let home = around.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let devfs = around.path().join("devfs");
    let mounted = Mounted::kernel_fs("devtmpfs", &devfs);
    skip_unless!(mounted.is_some(), "cannot mount a devtmpfs here");
    let in_dev = tempfile::Builder::new().prefix("cordon-e2e-").tempdir_in("/dev/shm").unwrap();
    let code: String = devices
        .iter()
        .chain(std::iter::once(&"null".to_owned()))
        .map(|name| {
            format!(
                "try:\n    os.close(os.open('/dev/{name}', os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)); print('opened {name}')\n\
                 except OSError as e:\n    print('refused {name}', e.errno)\n"
            )
        })
        .collect();
    let code = format!("import os\n{code}");
    let run = Command::new(CORDON)
        .args(["sandbox", "linux", "--writes", "direct", "-C"])
        .arg(in_dev.path())
        .args(["--", python(), "-c", &code])
        .env("HOME", &home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("opened null"), "{stdout}{}", String::from_utf8_lossy(&run.stderr));
    for name in &devices {
        assert!(stdout.contains(&format!("refused {name} ")), "/dev/{name} opened: {stdout}");
    }
}

/// A protected file the caller hands on open read-only (a hook as stdin, a repository's config
/// on fd 3) is read as given, and stays read-only: reopened for writing through
/// `/proc/self/fd/N` it resolves through the caller's writable mount, around the view's
/// read-only bind, unless the command is given the file through the view. Writing directly
/// (where that bind is what protects it), through `cordon exec` and `cordon sandbox`, as root
/// and as an unprivileged user; the hook on disk is unchanged and git's next commit outside
/// runs nothing planted. The control appends through the same descriptor outside.
#[test]
fn a_protected_file_handed_on_read_only_cannot_be_reopened_for_writing() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    let append = "for fd in 0 3; do echo 'echo PLANTED' >> /proc/self/fd/$fd && echo \"wrote $fd\"; done\n\
                  head -c 9 <&0; echo; head -c 6 <&3; echo\n";
    for user in USERS {
        let work = scratch();
        let w = work.path().display();
        super::code_runs_later::git(work.path(), &["init", "-q"]);
        let hook = work.path().join(".git/hooks/pre-commit");
        std::fs::write(&hook, "#!/bin/sh\necho hook\n").unwrap();
        let config = work.path().join(".git/config");
        std::fs::write(work.path().join("probe.sh"), append).unwrap();
        chown_nobody(work.path());
        let before = (std::fs::read(&hook).unwrap(), std::fs::read(&config).unwrap());
        let cordon = cordon_for(user);
        let c = cordon.display();
        // `cordon exec` passes the standard streams on, `cordon sandbox` every descriptor.
        let fronts = [
            (format!("{c} exec -a never -s workspace-write --writes direct -C {w} --"), "\n"),
            (format!("{c} sandbox linux -s workspace-write --writes direct -C {w} --"), "\n[core]"),
        ];
        let bash = |script: &str| bash_as(user, work.path(), script);
        for (front, then) in &fronts {
            let run = format!("exec 3< .git/config; {front} sh probe.sh < .git/hooks/pre-commit");
            let (stdout, stderr) = bash(&run);
            assert!(!stdout.contains("wrote"), "{user:?} {front}: {stdout}{stderr}");
            // Still readable, from where the caller's descriptor stood.
            let read = format!("#!/bin/sh{then}");
            assert!(stdout.starts_with(&read), "{user:?} {front}: {stdout}{stderr}");
            let after = (std::fs::read(&hook).unwrap(), std::fs::read(&config).unwrap());
            assert_eq!(after, before, "{user:?} {front}");
        }
        // Opened by another name of the same directories (a bind mount of the workspace):
        // Landlock's rights go by the directories, whatever the name.
        if user == User::Root {
            let alias = scratch();
            let a = alias.path().display();
            let mut bind = Command::new("mount");
            bind.arg("--bind").arg(work.path()).arg(alias.path());
            assert!(bind.status().unwrap().success());
            let run = format!(
                "exec 3< {a}/.git/config; {} sh probe.sh < {a}/.git/hooks/pre-commit",
                fronts[1].0
            );
            let (stdout, stderr) = bash(&run);
            let _ = Command::new("umount").arg(alias.path()).status();
            assert!(!stdout.contains("wrote"), "through a bind: {stdout}{stderr}");
            let after = (std::fs::read(&hook).unwrap(), std::fs::read(&config).unwrap());
            assert_eq!(after, before, "through a bind");
            // Opened through a bind that is gone by the run (detached): the name no longer
            // leads to the file, which is closed, with a warning.
            let mut bind = Command::new("mount");
            bind.arg("--bind").arg(work.path()).arg(alias.path());
            assert!(bind.status().unwrap().success());
            let run = format!(
                "exec 3< {a}/.git/config 4< {a}/.git/hooks/pre-commit; umount -l {a}; \
                 {} sh probe.sh <&4",
                fronts[1].0
            );
            let (stdout, stderr) = bash(&run);
            // (Standard input becomes `/dev/null`, which takes the write.)
            assert!(!stdout.contains("wrote 3"), "through a detached bind: {stdout}{stderr}");
            let warned = "closed inherited descriptor(s) 0 (no longer reachable by its name), 3 (";
            assert!(stderr.contains(warned), "{stderr}");
            let after = (std::fs::read(&hook).unwrap(), std::fs::read(&config).unwrap());
            assert_eq!(after, before, "through a detached bind");
        }
        let (stdout, stderr) = bash("exec 3< .git/config; sh probe.sh < .git/hooks/pre-commit");
        assert!(stdout.contains("wrote 0"), "{user:?}: the control: {stdout}{stderr}");
        assert_ne!(std::fs::read(&hook).unwrap(), before.0, "{user:?}: the control");
    }
}

/// A file handed on keeps its mode, times and extended attributes: those take ownership, not
/// write access, and the caller's descriptor reaches the file through the caller's mount,
/// around the view's read-only ones. Files outside the roots, a repository's config, a device
/// node and the terminal, on fd 0 and above, through `cordon exec` and `cordon sandbox` (the
/// gate's layer and direct writes), as root and uid 65534; each checked from outside, with the
/// control run outside the sandbox.
#[test]
fn a_file_handed_on_keeps_its_mode_times_and_attributes() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    let probe = "for fd in 0 3 4 5; do chmod 600 /proc/self/fd/$fd 2>/dev/null && echo \"chmod $fd\"; \
                 touch -d 2001-01-01 /proc/self/fd/$fd 2>/dev/null && echo \"touch $fd\"; done\n\
                 head -c 3 <&0; echo\n";
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    for user in USERS {
        let work = scratch();
        let w = work.path().display();
        super::code_runs_later::git(work.path(), &["init", "-q"]);
        let outside = scratch();
        let file = outside.path().join("o");
        std::fs::write(&file, "out\n").unwrap();
        std::fs::write(work.path().join("probe.sh"), probe).unwrap();
        let config = work.path().join(".git/config");
        // A device node of the caller's (root makes one: `/dev/null`'s numbers) or a second file.
        let fourth = outside.path().join("fourth");
        let made = user == User::Root
            && Command::new("mknod").arg(&fourth).args(["c", "1", "3"]).status().unwrap().success();
        if !made {
            std::fs::write(&fourth, "4\n").unwrap();
        }
        // A named pipe: its inode is on disk, as a file's is.
        let fifo = outside.path().join("fifo");
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        for path in [&file, &config, &fourth, &fifo] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        // Owned by the caller, whose ownership is what lets it change them.
        if user == User::Nobody {
            chown_nobody(work.path());
            chown_nobody(outside.path());
        }
        let identity = |path: &Path| {
            let meta = std::fs::metadata(path).unwrap();
            (meta.mode(), meta.mtime())
        };
        let paths = [&file, &config, &fourth, &fifo];
        let before: Vec<_> = paths.iter().map(|path| identity(path)).collect();
        let cordon = cordon_for(user);
        let c = cordon.display();
        let o = outside.path().display();
        // (front, whether the repository's config is judged: through the gate's layer a change
        // of the workspace's files is the command's, held back or applied at the end).
        let fronts = [
            (format!("{c} exec -a never -s workspace-write -C {w} --"), false),
            (format!("{c} sandbox linux -s workspace-write -C {w} --"), false),
            (format!("{c} sandbox linux -s workspace-write --writes direct -C {w} --"), true),
            (format!("{c} sandbox linux -s read-only -C {w} --"), true),
        ];
        let bash = |script: &str| bash_as(user, work.path(), script);
        for (front, config_judged) in &fronts {
            // (A run through the gate's layer may have changed the config's: judged afresh.)
            let before: Vec<_> = paths.iter().map(|path| identity(path)).collect();
            let run =
                format!("{front} sh probe.sh < {o}/o 3< .git/config 4< {o}/fourth 5<> {o}/fifo");
            let (stdout, stderr) = bash(&run);
            for fd in ["0", "4", "5"].iter().chain(config_judged.then_some(&"3")) {
                let what = format!("{user:?} {front}: fd {fd}: {stdout}{stderr}");
                assert!(!stdout.contains(&format!("chmod {fd}")), "{what}");
                assert!(!stdout.contains(&format!("touch {fd}")), "{what}");
            }
            // Still read.
            assert!(stdout.ends_with("out\n"), "{user:?} {front}: {stdout}{stderr}");
            let after: Vec<_> = paths.iter().map(|path| identity(path)).collect();
            let outside = |of: &[(u32, i64)]| [of[0], of[2], of[3]];
            assert_eq!(outside(&after), outside(&before), "{user:?} {front}");
            if *config_judged {
                assert_eq!(after[1], before[1], "{user:?} {front}");
            }
        }
        // The terminal it is handed: its mode, read by the shell that ran cordon, afterwards.
        let in_terminal = format!(
            "script -qec \"{} sh -c 'chmod 666 /proc/self/fd/0 2>/dev/null && echo changed; \
             tty'; stat -c mode=%a \\$(tty)\" /dev/null",
            fronts[1].0
        );
        let (stdout, stderr) = bash(&in_terminal);
        assert!(stdout.contains("mode=6") && !stdout.contains("mode=666"), "{stdout}{stderr}");
        assert!(!stdout.contains("changed"), "{user:?}: {stdout}{stderr}");
        // The terminal on a descriptor above the standard streams.
        let above = format!(
            "script -qec \"{} sh -c 'chmod 666 /proc/self/fd/5 2>/dev/null && echo changed' \
             5<>\\$(tty) </dev/null >/dev/null 2>&1; stat -c mode=%a \\$(tty)\" /dev/null",
            fronts[1].0
        );
        let (stdout, stderr) = bash(&above);
        assert!(stdout.contains("mode=6") && !stdout.contains("mode=666"), "{stdout}{stderr}");
        let control = bash(&in_terminal.replace(&format!("{} ", fronts[1].0), ""));
        assert!(control.0.contains("mode=666"), "{user:?}: the control: {control:?}");
        // A device from a read-only mount in the workspace (an unpacked root file system's
        // `/dev`): a device opens for writing there, and the caller's mount is not `nodev`.
        if user == User::Root {
            let devices = work.path().join("chroot-dev");
            std::fs::create_dir(&devices).unwrap();
            let bind = |args: &[&str]| Command::new("mount").args(args).status().unwrap().success();
            let dv = devices.to_str().unwrap();
            assert!(bind(&["--bind", "/dev", dv]) && bind(&["-o", "remount,bind,ro", dv]));
            let marker = format!("cordon-e2e-kmsg-{}", std::process::id());
            let run = format!(
                "{} sh -c 'echo {marker} > /proc/self/fd/5' 5< chroot-dev/kmsg",
                fronts[2].0
            );
            let (stdout, stderr) = bash(&run);
            let _ = Command::new("umount").arg(&devices).status();
            let log = Command::new("dmesg").output().unwrap();
            let log = String::from_utf8_lossy(&log.stdout);
            assert!(!log.contains(&marker), "the kernel log took it: {stdout}{stderr}");
        }
        // The control: run directly, the probe changes them.
        let control = format!("sh probe.sh < {o}/o 3< .git/config 4< {o}/fourth 5<> {o}/fifo");
        let (stdout, stderr) = bash(&control);
        assert!(stdout.contains("chmod 0") && stdout.contains("touch 3"), "{stdout}{stderr}");
        assert!(stdout.contains("chmod 5"), "{stdout}{stderr}");
        assert_ne!(identity(&file), before[0], "{user:?}: the control");
    }
}

/// A writable root that holds `/dev` — `/`, `/dev` itself (the default workspace of a command
/// started there), a `$TMPDIR` there — would grant every device of the machine to read and
/// write: refused with 125 and the reason, by every launch shape; a directory inside `/dev`
/// may be one when the user names it, and a read-only run may start there.
#[test]
fn a_writable_root_that_holds_dev_is_refused() {
    require_sandbox!(1);
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let runs: [&[&str]; 4] = [
        &["exec", "-a", "never", "-s", "workspace-write", "-C", "/dev", "--", "true"],
        &["exec", "-a", "never", "-C", d, "--add-dir", "/", "--allow-home-root", "--", "true"],
        &["sandbox", "linux", "-s", "workspace-write", "-C", "/dev", "--", "true"],
        &["sandbox", "linux", "-s", "read-only", "-C", "/dev", "--", "true"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let run = cordon(args);
        if i == 3 {
            run.assert_ok();
            continue;
        }
        assert_eq!(run.code, Some(125), "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("holds /dev"), "{args:?}: {}", run.stderr);
    }
    let policy = r#"{"type":"workspace-write"}"#;
    let run = helper(policy, Path::new("/dev"), &["true"]);
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("holds /dev"), "{}", run.stderr);
    // A directory in `/dev` is a root only when named as one: not because a command starts
    // there (its devices would be granted unasked).
    let unnamed = ["sandbox", "linux", "-s", "workspace-write", "-C", "/dev/pts", "--", "true"];
    let run = cordon(&unnamed);
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("lies in /dev"), "{}", run.stderr);
    let run = helper(policy, Path::new("/dev/pts"), &["true"]);
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("lies in /dev"), "{}", run.stderr);
    let named = ["sandbox", "linux", "-s", "workspace-write", "--add-dir", "/dev/pts", "-C", d];
    let mut named = named.to_vec();
    named.extend(["--", "true"]);
    cordon(&named).assert_ok();
}

/// Nor may a writable root be, hold or lie on the kernel's own interface — `/sys`, `/proc`, a
/// cgroup tree, a directory of sysfs a command was started in: a root caller's command keeps
/// uid 0 without capabilities and would change the machine's settings through files that only
/// their modes guard. Refused with 125 and the reason by every launch shape, before the
/// command runs (the marker it would write beside stays absent; the control writes it).
#[test]
fn a_writable_root_on_the_kernels_interface_is_refused() {
    require_sandbox!(1);
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let ws = ["-s", "workspace-write", "--writes", "direct", "--add-dir", d];
    // Mounted elsewhere, by its type (root alone can mount one).
    let elsewhere = dir.path().join("sysfs");
    let mounted = if is_root() { Mounted::kernel_fs("sysfs", &elsewhere) } else { None };
    let elsewhere = elsewhere.to_str().unwrap();
    let mut places: Vec<(&[&str], &str)> = vec![
        (&["-C", "/sys/kernel/mm"], "lies in /sys"),
        (&["--add-dir", "/proc/sys/kernel"], "lies in /proc"),
        (&["--add-dir", "/sys"], "holds /sys"),
        (&["--add-dir", "/proc"], "holds /proc"),
        (&["--add-dir", "/sys/fs/cgroup"], "lies in /sys"),
    ];
    let add_elsewhere = ["--add-dir", elsewhere];
    if mounted.is_some() {
        places.push((&add_elsewhere, "lies on the kernel's sysfs"));
    }
    for front in [&["sandbox", "linux"][..], &["exec", "-a", "never"][..]] {
        for (place, why) in &places {
            let mut args: Vec<&str> = front.to_vec();
            args.extend(ws);
            args.extend(place.iter());
            args.extend(["--", "sh", "-c", touch.as_str()]);
            let run = cordon(&args);
            assert_eq!(run.code, Some(125), "{args:?}: {}{}", run.stdout, run.stderr);
            assert!(run.stderr.contains(*why), "{args:?}: {}", run.stderr);
            assert!(!marker.exists(), "{args:?} ran the command");
        }
    }
    let policy = r#"{"type":"workspace-write"}"#;
    let run = helper(policy, Path::new("/sys/kernel/mm"), &["sh", "-c", &touch]);
    assert_eq!(run.code, Some(125), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("lies in /sys"), "{}", run.stderr);
    // A root that holds one below it (a chroot's `/sys`, a bind of `/`).
    if mounted.is_some() {
        let mut args = vec!["sandbox", "linux"];
        args.extend(ws);
        args.extend(["-C", d, "--", "sh", "-c", touch.as_str()]);
        let run = cordon(&args);
        assert_eq!(run.code, Some(125), "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(&format!("holds {elsewhere} (sysfs)")), "{}", run.stderr);
        assert!(!marker.exists(), "{args:?} ran the command");
    }
    drop(mounted);
    // Without the mount view, a file system of devices below a root: with the view it is
    // `nodev`, and the run goes on.
    let devices = dir.path().join("dev");
    if let Some(mounted) = is_root().then(|| Mounted::kernel_fs("devtmpfs", &devices)).flatten() {
        let mut args = vec!["sandbox", "linux", "--no-mount-view"];
        args.extend(ws);
        args.extend(["-C", d, "--", "sh", "-c", touch.as_str()]);
        let run = cordon(&args);
        assert_eq!(run.code, Some(125), "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("(devtmpfs), whose devices only"), "{}", run.stderr);
        assert!(!marker.exists(), "{args:?} ran the command");
        args.remove(2);
        cordon(&args).assert_ok();
        std::fs::remove_file(&marker).unwrap();
        drop(mounted);
    }
    // Without the mount view, a root that is itself a device file system mounted elsewhere (a
    // bind of `/dev/pts`: every terminal of the machine), and an unnamed root in `/dev/shm`
    // (the host's there).
    let terminals = dir.path().join("pts");
    std::fs::create_dir(&terminals).unwrap();
    let bound = is_root()
        && Command::new("mount")
            .arg("--bind")
            .arg("/dev/pts")
            .arg(&terminals)
            .status()
            .unwrap()
            .success();
    if bound {
        let t = terminals.to_str().unwrap();
        let mut args = vec!["sandbox", "linux", "--no-mount-view"];
        args.extend(ws);
        args.extend(["-C", t, "--", "sh", "-c", touch.as_str()]);
        let run = cordon(&args);
        let _ = Command::new("umount").arg(&terminals).status();
        assert_eq!(run.code, Some(125), "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("(devpts), whose devices only"), "{}", run.stderr);
        assert!(!marker.exists(), "{args:?} ran the command");
    }
    // The marker's name, written through `$TMPDIR` and looked for in the host's `/dev/shm`.
    let shm_name = format!("cordon-e2e-{}", std::process::id());
    let with_tmpdir = |tmpdir: &Path| -> Run {
        let write = format!("echo x > {}/{shm_name}", tmpdir.display());
        let mut args = vec!["sandbox", "linux", "--no-mount-view"];
        args.extend(ws);
        args.extend(["-C", d, "--", "sh", "-c", write.as_str()]);
        cordon_command(User::Root, &args).env("TMPDIR", tmpdir).output().unwrap().into()
    };
    let refused = |run: &Run, tmpdir: &Path| {
        assert_eq!(run.code, Some(125), "{tmpdir:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("the host's /dev/shm"), "{}", run.stderr);
        let written = Path::new("/dev/shm").join(&shm_name).exists();
        assert!(!written, "TMPDIR={tmpdir:?} wrote the host's /dev/shm");
    };
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        refused(&with_tmpdir(shm), shm);
    }
    // By another name: a bind of `/dev/shm` (root alone can make one).
    let shm_bind = dir.path().join("shm");
    std::fs::create_dir(&shm_bind).unwrap();
    let bound = is_root()
        && Command::new("mount")
            .arg("--bind")
            .arg("/dev/shm")
            .arg(&shm_bind)
            .status()
            .unwrap()
            .success();
    if bound {
        let run = with_tmpdir(&shm_bind);
        let _ = Command::new("umount").arg(&shm_bind).status();
        refused(&run, &shm_bind);
    }
    // The control: the same run with the scratch directory as its only root writes the marker.
    let mut args = vec!["sandbox", "linux"];
    args.extend(ws);
    args.extend(["-C", d, "--", "sh", "-c", touch.as_str()]);
    cordon(&args).assert_ok();
    assert!(marker.exists());
}

#[test]
fn the_sandboxs_dev_holds_only_the_ordinary_devices_and_they_work() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    let dir = scratch();
    // What the host has beyond them (consoles, input, disks, the kernel log): a positive
    // control that there is something to leave out.
    let ordinary =
        ["fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty"];
    let extra: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !ordinary.contains(&name.as_str()) && name != "urandom" && name != "zero")
        .collect();
    skip_unless!(!extra.is_empty(), "the host's /dev holds nothing but the ordinary devices");
    let code = [
        "import os, pty\n",
        "print(' '.join(sorted(os.listdir('/dev'))))\n",
        "open('/dev/null', 'w').write('x')\n",
        "print(len(open('/dev/urandom', 'rb').read(8)), len(open('/dev/zero', 'rb').read(8)))\n",
        "main, follower = pty.openpty()\n",
        "os.write(follower, b'through a new terminal\\n')\n",
        "print(os.read(main, 100).decode().strip())\n",
        "print(os.ttyname(follower).startswith('/dev/pts/'))\n",
    ]
    .concat();
    for user in USERS {
        let run = python_sandboxed(user, &["--full-auto"], dir.path(), &code);
        run.assert_ok();
        let lines: Vec<&str> = run.stdout.lines().collect();
        let mut expected: Vec<&str> = ordinary.iter().copied().chain(["urandom", "zero"]).collect();
        expected.sort();
        assert_eq!(lines.first().copied(), Some(expected.join(" ").as_str()), "{user:?}");
        assert_eq!(&lines[1..], ["8 8", "through a new terminal", "True"], "{user:?}");
    }
}

#[test]
fn set_user_id_bits_cannot_be_set_or_created() {
    require_sandbox!(1);
    let dir = scratch();
    for user in USERS {
        chown_nobody(dir.path());
        let code = [
            PY_LIBC,
            "open('plain', 'w').close()\n",
            "cases = (('chmod', lambda: os.chmod('plain', 0o4755)), ('chmod_g', lambda: os.chmod('plain', 0o2755)),\n",
            "         ('create', lambda: os.close(os.open('created', os.O_CREAT | os.O_WRONLY, 0o4755))),\n",
            "         ('fchmod', lambda: os.fchmod(os.open('plain', os.O_RDONLY), 0o6755)))\n",
            "for label, f in cases:\n",
            "    try:\n",
            "        f(); print(label, 'ok')\n",
            "    except OSError as e:\n",
            "        print(label, e.errno)\n",
            "os.chmod('plain', 0o755); print('plain-chmod ok')\n",
        ]
        .concat();
        let run = python_sandboxed(user, &["--full-auto"], dir.path(), &code);
        run.assert_ok();
        for label in ["chmod", "chmod_g", "create", "fchmod"] {
            assert!(
                run.stdout.contains(&format!("{label} {}", libc::EPERM)),
                "{user:?} {label}: {}",
                run.stdout
            );
        }
        assert!(
            run.stdout.contains("plain-chmod ok"),
            "ordinary chmod must keep working: {}",
            run.stdout
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(dir.path().join("plain")).unwrap().permissions().mode() & 0o7777,
            0o755
        );
        assert!(!dir.path().join("created").exists());
        std::fs::remove_file(dir.path().join("plain")).unwrap();
    }
}

#[test]
fn root_cannot_read_password_hashes_or_host_keys() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "hiding files needs the mount view");
    skip_unless!(is_root(), "needs root: only uid 0 can read /etc/shadow at all");
    skip_unless!(Path::new("/etc/shadow").exists(), "no /etc/shadow on this machine");
    let dir = scratch();
    // uid 0 without capabilities still owns /etc/shadow (mode 0640): only hiding stops it.
    let run = sandbox_sh(User::Root, &[], dir.path(), "cat /etc/shadow | wc -c");
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "0", "/etc/shadow was readable");
    let run =
        sandbox_sh(User::Root, &["--unhide", "/etc/shadow"], dir.path(), "cat /etc/shadow | wc -c");
    assert_ne!(run.stdout.trim(), "0", "--unhide must restore it");
}

/// Where the command needs a place of the host's `/dev` — it starts there, or a writable root
/// lies in `/dev/shm` — it still gets it, and what it writes in the root arrives.
#[test]
fn a_command_that_starts_in_dev_or_writes_a_root_in_dev_shm_still_works() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "needs the mount view");
    skip_unless!(Path::new("/dev/shm").is_dir(), "no /dev/shm here");
    let dir = scratch();
    let mut in_dev =
        cordon_command(User::Root, &["exec", "-a", "never", "-s", "read-only", "--", "pwd"]);
    let run: Run = in_dev.current_dir("/dev").output().unwrap().into();
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "/dev");
    let root = tempfile::Builder::new().prefix("cordon-e2e-shm-").tempdir_in("/dev/shm").unwrap();
    let root_arg = root.path().to_str().unwrap();
    let run = cordon(&[
        "exec",
        "-a",
        "never",
        "-s",
        "workspace-write",
        "--writes",
        "direct",
        "--add-dir",
        root_arg,
        "-C",
        dir.path().to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &format!("echo written > {root_arg}/made; ls /dev/shm"),
    ]);
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(root.path().join("made")).unwrap(), "written\n");
    // The root is put back into a private /dev/shm: the host's other files there stay out.
    let name = root.path().file_name().unwrap().to_str().unwrap();
    assert_eq!(run.stdout.trim(), name, "{}", run.stdout);
}

/// With a terminal handed over (bound into the sandbox's own `/dev`), what a root caller's
/// command could read in the host's `/dev` besides the ordinary devices and its own terminal —
/// the consoles' input and screens, other devices — is not readable.
#[test]
fn a_root_command_handed_a_terminal_reads_no_console_or_other_device() {
    require_sandbox!(1);
    skip_unless!(is_root(), "uid 0 owns the consoles");
    skip_unless!(
        Command::new("script").arg("--version").output().is_ok(),
        "needs script(1) from util-linux"
    );
    use std::os::unix::fs::FileTypeExt;
    let ordinary = ["null", "zero", "full", "random", "urandom", "tty", "ptmx", "console"];
    let devices: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_char_device()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !ordinary.contains(&name.as_str()))
        .collect();
    skip_unless!(!devices.is_empty(), "no other character device in /dev");
    let dir = scratch();
    // Each device opened without blocking; the control reads /dev/null the same way.
    let probe: String = devices
        .iter()
        .chain(std::iter::once(&"null".to_owned()))
        .map(|name| {
            format!(
                "import os\\ntry:\\n    os.close(os.open('/dev/{name}', os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)); print('opened {name}')\\nexcept OSError as e:\\n    print('refused {name}', e.errno)\\n"
            )
        })
        .collect();
    let script_file = dir.path().join("probe.py");
    std::fs::write(&script_file, probe.replace("\\n", "\n")).unwrap();
    let inner = format!(
        "{CORDON} sandbox linux -C {} -- {} {}",
        dir.path().display(),
        python(),
        script_file.display()
    );
    let out = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("opened null"), "{stdout}");
    for name in &devices {
        assert!(!stdout.contains(&format!("opened {name}\r")), "/dev/{name} opened: {stdout}");
    }
}
