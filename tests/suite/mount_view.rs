//! The mount view: metadata outside the roots, protected paths, hidden paths, /dev/shm, and
//! honest degradation without namespaces.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use super::util::*;

fn listing(dir: &Path) -> Vec<String> {
    let out = Command::new("find").arg(dir).output().unwrap();
    let mut lines: Vec<String> =
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn metadata_changes_outside_the_roots_fail_and_leave_the_file_unchanged() {
    require_mount_view!();
    let root = scratch();
    let outside = scratch();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "x").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let setfattr = Command::new("setfattr").arg("--version").output().is_ok();
    for user in USERS {
        chown_nobody(outside.path());
        chown_nobody(root.path());
        let before = std::fs::metadata(&victim).unwrap();
        let v = victim.display();
        let o = outside.path().display();
        let script = format!(
            "chmod 777 {v}; chown 1:1 {v}; touch -d 2001-01-01 {v}; {} mknod {o}/node c 1 3; mkfifo {o}/fifo; ln -s x {o}/sym; true",
            if setfattr { format!("setfattr -n user.cordon -v 1 {v};") } else { String::new() }
        );
        let run = sandbox_sh(user, &["--full-auto"], root.path(), &script);
        run.assert_ok();
        let after = std::fs::metadata(&victim).unwrap();
        assert_eq!(after.mode(), before.mode(), "{user:?} chmod");
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()), "{user:?} chown");
        assert_eq!(after.mtime(), before.mtime(), "{user:?} utimes");
        for name in ["node", "fifo", "sym"] {
            assert!(
                std::fs::symlink_metadata(outside.path().join(name)).is_err(),
                "{user:?} {name}"
            );
        }
        if setfattr {
            let out =
                Command::new("getfattr").args(["-n", "user.cordon"]).arg(&victim).output().unwrap();
            assert!(!out.status.success(), "{user:?}: the xattr was set");
        }
    }
    skip_unless!(setfattr, "setfattr (package attr) missing: xattr case not checked");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn git_metadata_is_protected_while_git_keeps_working() {
    require_mount_view!();
    for user in USERS {
        let repo = scratch();
        let r = repo.path();
        git(r, &["init", "-q"]);
        git(r, &["config", "user.email", "t@example.invalid"]);
        git(r, &["config", "user.name", "t"]);
        std::fs::create_dir_all(r.join(".cordon")).unwrap();
        std::fs::write(r.join(".cordon/rules.toml"), "# rules\n").unwrap();
        std::fs::write(r.join("file.txt"), "content\n").unwrap();
        if user == User::Nobody {
            chown_nobody(r);
        }
        let config_before = std::fs::read_to_string(r.join(".git/config")).unwrap();
        let listing_before = listing(r);
        let script = "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
                      echo x >> .git/hooks/pre-push.sample; \
                      git config core.fsmonitor 'touch /tmp/pwned' && echo config-changed; \
                      echo allow >> .cordon/rules.toml; \
                      mv .git .git-moved && echo moved-git; mv .cordon .cordon-moved && echo moved-cordon; \
                      rm -rf .git/hooks 2>/dev/null; \
                      git add file.txt && git commit -qm x && echo committed";
        // Writing directly: the binds are what protects.
        let run = sandbox_sh(user, &["--full-auto", "--writes", "direct"], r, script);
        assert!(run.stdout.contains("committed"), "{user:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stdout.contains("config-changed"), "{user:?}");
        // Renaming `.git` away (to put a fresh, writable one in its place) is refused too.
        assert!(
            !run.stdout.contains("moved-git") && !run.stdout.contains("moved-cordon"),
            "{user:?}: {}",
            run.stdout
        );
        assert!(!r.join(".git-moved").exists() && r.join(".git/hooks").is_dir(), "{user:?}");
        assert!(!r.join(".git/hooks/pre-commit").exists(), "{user:?}");
        assert_eq!(
            std::fs::read_to_string(r.join(".git/config")).unwrap(),
            config_before,
            "{user:?}"
        );
        assert_eq!(std::fs::read_to_string(r.join(".cordon/rules.toml")).unwrap(), "# rules\n");
        let log = Command::new("git")
            .arg("-C")
            .arg(r)
            .args(["-c", "safe.directory=*", "log", "--oneline"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 1, "{user:?}");
        // Nothing appeared on the host but what git itself wrote (objects, refs, index, logs).
        let new: Vec<String> = listing(r)
            .into_iter()
            .filter(|p| !listing_before.contains(p))
            .filter(|p| {
                !p.contains("/.git/objects")
                    && !p.contains("/.git/refs")
                    && !p.contains("/.git/logs")
            })
            .filter(|p| {
                !p.ends_with("/.git/index")
                    && !p.ends_with("COMMIT_EDITMSG")
                    && !p.ends_with("ORIG_HEAD")
            })
            .collect();
        assert_eq!(new, Vec::<String>::new(), "{user:?}");
    }
}

/// Every place git reads code-running config from stays read-only — the git dirs
/// of submodules (`.git/modules`, whose configs run at the next `git status` in the
/// superproject), the `.git` pointer files of submodule checkouts and linked worktrees (which
/// could be pointed at a planted git dir) — while `git commit` keeps working.
#[test]
fn submodule_configs_and_git_pointer_files_are_protected_and_commit_still_works() {
    require_mount_view!();
    for user in USERS {
        let scratch_dir = scratch();
        let upstream = scratch_dir.path().join("upstream");
        let r = &scratch_dir.path().join("super");
        for repo in [&upstream, r] {
            std::fs::create_dir_all(repo).unwrap();
            git(repo, &["init", "-q"]);
            git(repo, &["config", "user.email", "t@example.invalid"]);
            git(repo, &["config", "user.name", "t"]);
        }
        std::fs::write(upstream.join("lib.txt"), "lib\n").unwrap();
        git(&upstream, &["add", "lib.txt"]);
        git(&upstream, &["commit", "-qm", "lib"]);
        let url = upstream.to_str().unwrap();
        git(r, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", url, "sub"]);
        git(r, &["commit", "-qm", "add sub"]);
        // A linked worktree of the submodule's upstream: its `.git` is a pointer file too.
        let linked = scratch_dir.path().join("linked");
        git(&upstream, &["worktree", "add", "-q", linked.to_str().unwrap()]);
        std::fs::write(r.join("file.txt"), "content\n").unwrap();
        if user == User::Nobody {
            chown_nobody(scratch_dir.path());
        }
        let module_config = r.join(".git/modules/sub/config");
        let before = |p: &Path| std::fs::read_to_string(p).unwrap();
        let (config0, pointer0, linked0) =
            (before(&module_config), before(&r.join("sub/.git")), before(&linked.join(".git")));
        let script = "git -C sub config core.fsmonitor 'touch /tmp/pwned' && echo sub-config; \
                      echo x > .git/modules/sub/hooks/pre-commit && echo sub-hook; \
                      mkdir -p .git/modules/new && echo new-module; \
                      echo 'gitdir: ../evil' > sub/.git && echo sub-pointer; \
                      git add file.txt && git commit -qm x && echo committed";
        // Writing directly: the binds are what protects.
        let run = sandbox_sh(user, &["--full-auto", "--writes", "direct"], r, script);
        let out = format!("{user:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("committed"), "{out}");
        for marker in ["sub-config", "sub-hook", "new-module", "sub-pointer"] {
            assert!(!run.stdout.contains(marker), "{marker} {out}");
        }
        assert_eq!(before(&module_config), config0, "{user:?}");
        assert_eq!(before(&r.join("sub/.git")), pointer0, "{user:?}");
        assert!(!r.join(".git/modules/sub/hooks/pre-commit").exists(), "{user:?}");
        assert!(!r.join(".git/modules/new").exists(), "{user:?}");
        let linked_dir = linked.to_str().unwrap();
        let run = sandbox_sh(
            user,
            &["--full-auto", "--writes", "direct"],
            &linked,
            "echo 'gitdir: /tmp/evil' > .git && echo linked-pointer",
        );
        assert!(!run.stdout.contains("linked-pointer"), "{user:?} {linked_dir}: {}", run.stdout);
        assert_eq!(before(&linked.join(".git")), linked0, "{user:?}");
    }
}

#[test]
fn hidden_paths_are_empty_and_unhide_restores_them() {
    require_mount_view!();
    for user in USERS {
        let home = scratch();
        let ssh = home.path().join(".ssh");
        std::fs::create_dir(&ssh).unwrap();
        std::fs::write(ssh.join("id_test"), "PRIVATE KEY").unwrap();
        std::fs::write(home.path().join(".netrc"), "machine x password y").unwrap();
        chown_nobody(home.path());
        let work = scratch();
        chown_nobody(work.path());
        let w = work.path().to_str().unwrap();
        let args = [
            "sandbox",
            "linux",
            "-C",
            w,
            "--",
            "sh",
            "-c",
            "cat ~/.ssh/id_test; echo rc=$?; cat ~/.netrc; ls -A ~/.ssh | wc -l",
        ];
        let run = cordon_as(user, &args, Some(home.path()));
        assert!(
            !run.stdout.contains("PRIVATE KEY") && !run.stdout.contains("password"),
            "{user:?}: {}",
            run.stdout
        );
        assert!(run.stdout.contains("rc=1"), "{user:?}: {}", run.stdout);
        let ssh_dir = ssh.to_str().unwrap();
        let args =
            ["sandbox", "linux", "--unhide", ssh_dir, "-C", w, "--", "cat", "~/.ssh/id_test"];
        let args: Vec<String> =
            args.iter().map(|a| a.replace('~', home.path().to_str().unwrap())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = cordon_as(user, &args, Some(home.path()));
        assert_eq!(run.stdout, "PRIVATE KEY", "{user:?}: {}", run.stderr);
    }
}

#[test]
fn dev_shm_is_a_private_writable_tmpfs() {
    require_mount_view!();
    skip_unless!(Path::new("/dev/shm").is_dir(), "no /dev/shm on this machine");
    let host_file = format!("/dev/shm/cordon-host-{}", std::process::id());
    std::fs::write(&host_file, "host").unwrap();
    let inside = format!("/dev/shm/cordon-inside-{}", std::process::id());
    let dir = scratch();
    for user in USERS {
        let code = "import multiprocessing as m\nl = m.Lock()\nwith l: print(\"lock-ok\")";
        let script = format!(
            "{} -c '{code}'; ls /dev/shm | wc -l; echo x > {inside} && echo wrote",
            python()
        );
        let run = sandbox_sh(user, &[], dir.path(), &script);
        assert_eq!(run.stdout, "lock-ok\n0\nwrote\n", "{user:?}: {}", run.stderr);
        assert!(!Path::new(&inside).exists(), "{user:?}: the private /dev/shm leaked");
    }
    std::fs::remove_file(&host_file).unwrap();
}

#[test]
fn without_namespaces_a_run_is_refused_unless_best_effort_and_the_gap_is_reported() {
    require_sandbox!(1);
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let no_unshare = [(libc::SYS_unshare, libc::EPERM)];
    let cordon = Path::new(CORDON);
    let run_under = |args: &[&str]| {
        let argv: Vec<&std::ffi::OsStr> =
            std::iter::once("cordon").chain(args.iter().copied()).map(os).collect();
        Run::from(under_filter(&no_unshare, cordon, &argv).output().unwrap())
    };
    // Without the mount view protected and hidden paths are not enforced: refused (125)
    // unless the user accepts less with --best-effort; Landlock still holds then.
    let refused = run_under(&["sandbox", "linux", "-C", d, "--", "sh", "-c", "echo ran"]);
    assert_eq!(refused.code, Some(125), "{}", refused.stderr);
    assert!(refused.stderr.contains("the mount view"), "{}", refused.stderr);
    assert!(!refused.stdout.contains("ran"));
    let run = run_under(&[
        "sandbox",
        "linux",
        "--best-effort",
        "-C",
        d,
        "--",
        "sh",
        "-c",
        "echo ran; echo x > /etc/cordon-nons",
    ]);
    assert!(run.stdout.contains("ran"), "{}", run.stderr);
    assert!(
        !Path::new("/etc/cordon-nons").exists(),
        "Landlock must still hold without the mount view"
    );

    let run = run_under(&["doctor", "--json"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_ne!(v["kernel"]["mount_view"], true);
    let gaps = v["modes"]["workspace-write"]["not_enforced"].to_string();
    assert!(gaps.contains("mount view"), "{gaps}");

    let run = run_under(&[
        "sandbox",
        "linux",
        "--require-mount-view",
        "-C",
        d,
        "--",
        "sh",
        "-c",
        "echo ran",
    ]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(!run.stdout.contains("ran"));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn mounts_inside_a_root_keep_their_writability_and_mounts_over_proc_stay_on_top() {
    require_mount_view!();
    skip_unless!(is_root(), "making the mounts of this test needs root");
    skip_unless!(Path::new("/proc/fs").is_dir(), "no /proc/fs to cover on this kernel");
    for user in USERS {
        let work = scratch();
        let outside = scratch();
        chown_nobody(work.path());
        let (w, o) = (work.path().display(), outside.path().display());
        let cordon = cordon_for(user).display().to_string();
        let run_as = match user {
            User::Root => String::new(),
            User::Nobody => "setpriv --reuid=65534 --regid=65534 --clear-groups --".to_owned(),
        };
        // Everything happens in a mount namespace of the test's own, which the host never sees;
        // what the command could write is listed there after cordon has exited.
        let script = format!(
            "set -e; mkdir {w}/rw {w}/ro
             mount -t tmpfs rw {w}/rw; mount -t tmpfs -o ro ro {w}/ro; mount -t tmpfs out {o}
             mount -t tmpfs cover /proc/fs; echo covered > /proc/fs/marker
             {run_as} {cordon} sandbox linux --full-auto -C {w} -- sh -c \
               'for d in {w} {w}/rw {w}/ro {o}; do touch $d/new 2>/dev/null || true; done; ls /proc/fs'
             for d in {w} {w}/rw {w}/ro {o}; do [ -e $d/new ] && echo \"written $d\" || echo \"kept $d\"; done"
        );
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .output()
            .unwrap();
        let run = Run::from(out);
        run.assert_ok();
        let stdout: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(
            stdout,
            vec![
                "marker".to_owned(),
                format!("written {w}"),
                format!("written {w}/rw"),
                format!("kept {w}/ro"),
                format!("kept {o}"),
            ],
            "{user:?}: {}",
            run.stderr
        );
    }
}

/// A protected name that another process makes and removes while cordon plans and builds its
/// view (Codex's own sandbox does so with `.git` and `.codex` in `/tmp`) never fails a launch.
#[test]
fn a_name_that_comes_and_goes_during_launches_never_fails_one() {
    require_mount_view!();
    let root = scratch();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let stop = std::sync::Arc::clone(&stop);
        let dir = root.path().to_path_buf();
        std::thread::spawn(move || {
            let mut rounds = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for name in [".git", ".codex", ".agents"] {
                    let _ = std::fs::create_dir_all(dir.join(name).join("hooks"));
                    let _ = std::fs::remove_dir_all(dir.join(name));
                }
                rounds += 1;
            }
            rounds
        })
    };
    let mut failures = Vec::new();
    for _ in 0..200 {
        let run = sandbox_sh(User::Root, &["--full-auto"], root.path(), "true");
        if run.code == Some(125) {
            failures.push(run.stderr);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = churn.join().unwrap();
    assert!(rounds > 0, "the names never came and went");
    assert!(
        failures.is_empty(),
        "{} of 200 launches failed: {:?}",
        failures.len(),
        failures.first()
    );
}
