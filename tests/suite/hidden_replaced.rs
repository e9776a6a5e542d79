//! Hidden paths hold while the host changes them: a hidden file that a program outside the
//! sandbox renames a new file over during a run (`docker login`, `npm login`, a shell saving
//! its history), or creates during it, stays unreadable to the command — with the mount view
//! and without it, with a workspace of its own and with `$HOME` as the workspace — while its
//! ordinary neighbours and the workspace stay readable. Checked from outside: the command waits
//! for the test to change the files, then prints what it can read.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::util::*;

/// The secrets the host writes during the run, relative to the home directory: renamed over an
/// existing hidden file, over one in a directory that is not hidden, created where nothing was.
const CHANGED: &[(&str, Change)] = &[
    (".git-credentials", Change::RenamedOver),
    (".docker/config.json", Change::RenamedOver),
    (".bash_history", Change::RenamedOver),
    (".netrc", Change::Created),
    (".config/gh/hosts.yml", Change::Created),
    // Dotfile managers' links to secrets not written yet (or left after a logout).
    (".pypirc", Change::ThroughDanglingLink),
    (".config/glab-cli/config.yml", Change::ThroughDanglingLink),
];

/// Where the dangling links of [`CHANGED`] lead, relative to the home directory: a file link,
/// and a directory link a path below the hidden one goes through.
const DANGLING_LINKS: &[(&str, &str)] =
    &[(".pypirc", "vault/pypirc"), (".config/glab-cli", "../vault/glab")];

/// The secrets of [`CHANGED`] the command must not read in `workspace`. With `$HOME` as the
/// workspace a dangling link's target (`~/vault/…`) lies inside the writable root, where read
/// goes with write (the command could write there itself): what is written through the link
/// lands in the command's own space, a limit docs/secrets.md states.
fn hidden_in(workspace: Workspace) -> impl Iterator<Item = &'static str> {
    CHANGED.iter().filter_map(move |(path, change)| match (workspace, change) {
        (Workspace::Home, Change::ThroughDanglingLink) => None,
        _ => Some(*path),
    })
}

#[derive(Clone, Copy)]
enum Change {
    RenamedOver,
    Created,
    /// Written through a link that led nowhere when the run started.
    ThroughDanglingLink,
}

/// Where the command runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Workspace {
    /// A directory of its own, outside `$HOME`.
    Own,
    /// `$HOME` itself (`--allow-home-root`): sealed, its plain entries writable.
    Home,
}

struct Setup {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    cordon_home: tempfile::TempDir,
}

impl Setup {
    fn new(user: User) -> Setup {
        let setup = Setup { home: scratch(), work: scratch(), cordon_home: scratch() };
        let home = setup.home.path();
        std::fs::create_dir_all(home.join(".docker")).unwrap();
        std::fs::create_dir_all(home.join("project")).unwrap();
        for (path, change) in CHANGED {
            if let Change::RenamedOver = change {
                std::fs::write(home.join(path), "SECRET before the run\n").unwrap();
            }
        }
        std::fs::create_dir_all(home.join("vault")).unwrap();
        std::fs::create_dir_all(home.join(".config")).unwrap();
        for (link, target) in DANGLING_LINKS {
            std::os::unix::fs::symlink(target, home.join(link)).unwrap();
        }
        std::fs::write(home.join("notes"), "CONTROL notes\n").unwrap();
        std::fs::write(home.join(".docker/daemon.json"), "CONTROL daemon\n").unwrap();
        if user == User::Nobody {
            for dir in [&setup.home, &setup.work, &setup.cordon_home] {
                chown_nobody(dir.path());
            }
        }
        setup
    }

    /// Where the command and the test signal each other: writable to the command.
    fn signals(&self, workspace: Workspace) -> PathBuf {
        match workspace {
            Workspace::Own => self.work.path().to_path_buf(),
            Workspace::Home => self.home.path().join("project"),
        }
    }

    /// What the host does during the run: every secret of [`CHANGED`], and a new file next to
    /// the workspace's own in an ordinary directory.
    fn change_on_the_host(&self) {
        let home = self.home.path();
        for (path, change) in CHANGED {
            let path = home.join(path);
            let parent = path.parent().unwrap();
            if parent.is_symlink() {
                // A program writing through a directory link makes the directory it leads to.
                let target = parent.parent().unwrap().join(std::fs::read_link(parent).unwrap());
                std::fs::create_dir_all(target).unwrap();
            } else {
                std::fs::create_dir_all(parent).unwrap();
            }
            let text = format!("SECRET written during the run at {}\n", path.display());
            match change {
                Change::RenamedOver => {
                    let temporary = path.with_extension("cordon-test-new");
                    std::fs::write(&temporary, text).unwrap();
                    std::fs::rename(&temporary, &path).unwrap();
                }
                Change::Created | Change::ThroughDanglingLink => {
                    std::fs::write(&path, text).unwrap()
                }
            }
        }
        std::fs::write(home.join("project/new"), "CONTROL new\n").unwrap();
    }

    /// Runs the command, changes the files once it is waiting, and returns what it printed.
    fn run(&self, user: User, workspace: Workspace, view: &[&str]) -> Run {
        let home = self.home.path();
        let signals = self.signals(workspace);
        let (ready, go) = (signals.join("ready"), signals.join("go"));
        let mut reads: Vec<String> =
            hidden_in(workspace).map(|path| home.join(path).display().to_string()).collect();
        for control in ["notes", ".docker/daemon.json", "project/new"] {
            reads.push(home.join(control).display().to_string());
        }
        let script = format!(
            "touch {ready}; i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.05; \
             i=$((i+1)); done; for f in {reads}; do echo \"$f: $(cat \"$f\" 2>&1)\"; done; \
             echo CONTROL mine > {mine} && echo \"$(cat {mine})\"",
            ready = ready.display(),
            go = go.display(),
            reads = reads.join(" "),
            mine = signals.join("mine").display(),
        );
        let cwd = match workspace {
            Workspace::Own => self.work.path(),
            Workspace::Home => home,
        };
        // Direct writes: the host watches for the command's `ready` in the workspace.
        let mut args =
            vec!["exec", "-a", "never", "--writes", "direct", "-C", cwd.to_str().unwrap()];
        if workspace == Workspace::Home {
            args.push("--allow-home-root");
        }
        args.extend_from_slice(view);
        args.extend_from_slice(&["--", "sh", "-c", &script]);
        let child = cordon_command(user, &args)
            .env("HOME", home)
            .env("CORDON_HOME", self.cordon_home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + scaled(Duration::from_secs(30));
        while !ready.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(ready.exists(), "the command never got ready");
        self.change_on_the_host();
        std::fs::write(&go, "").unwrap();
        child.wait_with_output().unwrap().into()
    }
}

fn views() -> Vec<&'static [&'static str]> {
    let without = features().no_mount_view();
    if features().mount_view { vec![&[], without] } else { vec![without] }
}

fn check(user: User, workspace: Workspace) {
    for view in views() {
        let setup = Setup::new(user);
        let run = setup.run(user, workspace, view);
        let what = format!("{user:?} {workspace:?} {view:?}:\n{}{}", run.stdout, run.stderr);
        assert_eq!(run.code, Some(0), "{what}");
        for control in ["CONTROL notes", "CONTROL daemon", "CONTROL new", "CONTROL mine"] {
            assert!(run.stdout.contains(control), "{control}: {what}");
        }
        assert!(!run.stdout.contains("SECRET"), "{what}");
        // The same files read from outside, as the same user: the sandbox is what refused.
        let home = setup.home.path();
        for (path, _) in CHANGED {
            let outside = command_as(user, "cat").arg(home.join(path)).output().unwrap();
            let text = String::from_utf8_lossy(&outside.stdout);
            let error = String::from_utf8_lossy(&outside.stderr);
            assert!(text.contains("SECRET written during the run"), "{path}: {text}{error}");
        }
    }
}

#[test]
fn a_hidden_file_replaced_or_created_on_the_host_during_a_run_stays_unreadable() {
    require_sandbox!(1);
    for user in USERS {
        check(user, Workspace::Own);
    }
}

#[test]
fn with_home_as_the_workspace_a_hidden_file_replaced_on_the_host_stays_unreadable() {
    require_sandbox!(1);
    for user in USERS {
        check(user, Workspace::Home);
    }
}

/// A symbolic link in the workspace to a hidden file, reached directly and through
/// `/proc/self/root`: it reads nothing once the host has replaced the file.
#[test]
fn a_link_in_the_workspace_to_a_replaced_hidden_file_reads_nothing() {
    require_sandbox!(1);
    let setup = Setup::new(User::Root);
    let (home, work) = (setup.home.path(), setup.work.path());
    let link = work.join("credentials");
    std::os::unix::fs::symlink(home.join(".git-credentials"), &link).unwrap();
    setup.change_on_the_host();
    let script = format!("cat {0} /proc/self/root{0}; echo ran", link.display());
    for view in views() {
        let mut args =
            vec!["exec", "-a", "never", "--writes", "direct", "-C", work.to_str().unwrap()];
        args.extend_from_slice(view);
        args.extend_from_slice(&["--", "sh", "-c", &script]);
        let run: Run = cordon_command(User::Root, &args)
            .env("HOME", home)
            .env("CORDON_HOME", setup.cordon_home.path())
            .output()
            .unwrap()
            .into();
        assert!(run.stdout.contains("ran"), "{view:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stdout.contains("SECRET"), "{view:?}: {}", run.stdout);
    }
}

/// A directory on the way to a hidden path with more entries than Landlock's plan grants one
/// by one: without the mount view nothing would hide the secret there, so the run is refused
/// (125) unless best effort is asked for, which says so. A home directory as large is still
/// granted entry by entry: its secrets stay hidden and the run goes ahead.
#[test]
fn without_the_mount_view_a_secret_in_a_huge_directory_refuses_the_run() {
    require_sandbox!(1);
    let setup = Setup::new(User::Root);
    let home = setup.home.path();
    let big = scratch();
    for i in 0..10_001 {
        std::fs::File::create(home.join(format!("f{i}"))).unwrap();
        std::fs::File::create(big.path().join(format!("f{i}"))).unwrap();
    }
    std::fs::write(home.join(".netrc"), "SECRET netrc\n").unwrap();
    let secret = big.path().join("secret");
    std::fs::write(&secret, "SECRET big\n").unwrap();
    let work = setup.work.path().to_str().unwrap();
    let netrc = home.join(".netrc");
    let mut no_view = vec!["--no-mount-view"];
    if features().landlock_abi < 3 {
        no_view.push("--best-effort");
    }
    let mut args = vec!["exec", "-a", "never", "-C", work];
    args.extend_from_slice(&no_view);
    args.extend_from_slice(&["--", "cat", netrc.to_str().unwrap()]);
    let home_run: Run = cordon_command(User::Root, &args)
        .env("HOME", home)
        .env("CORDON_HOME", setup.cordon_home.path())
        .output()
        .unwrap()
        .into();
    assert_eq!(home_run.code, Some(1), "{}{}", home_run.stdout, home_run.stderr);
    assert!(!home_run.stdout.contains("SECRET"), "{}", home_run.stdout);
    let run_with = |extra: &[&str]| -> Run {
        let mut args = vec!["exec", "-a", "never", "--no-mount-view", "-C", work];
        args.extend_from_slice(&["--hide", secret.to_str().unwrap()]);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "cat", secret.to_str().unwrap()]);
        cordon_command(User::Root, &args)
            .env("HOME", home)
            .env("CORDON_HOME", setup.cordon_home.path())
            .output()
            .unwrap()
            .into()
    };
    // Below Landlock ABI 3 a run without the mount view needs best effort anyway (truncate),
    // so only the warning can be seen there.
    if features().landlock_abi >= 3 {
        let refused = run_with(&[]);
        assert_eq!(refused.code, Some(125), "{}{}", refused.stdout, refused.stderr);
        assert!(!refused.stdout.contains("SECRET"), "{}", refused.stdout);
        assert!(refused.stderr.contains("more than 10000 entries"), "{}", refused.stderr);
    }
    let weaker = run_with(&["--best-effort"]);
    assert!(weaker.stderr.contains("not enforced: hiding"), "{}", weaker.stderr);
}
