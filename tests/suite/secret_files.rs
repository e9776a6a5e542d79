//! The catalogue of secrets (`cordon_policies::SECRET_FILES`), generated into throwaway homes:
//! every credential file and directory stays unreadable and every agent or bus socket gets no
//! connection, as root and as uid 65534, checked from outside (the planted file's marker never
//! shows, the listener accepts nothing); `cordon doctor` lists what exists and what it removes.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use cordon_policies::{
    PolicyEnv, RELOCATING_VARIABLES, Relocations, SECRET_FILES, SecretKind, expand_hidden_path,
};
use serde_json::{Value, json};

use super::util::*;

macro_rules! require_mount_view {
    () => {
        require_sandbox!(1);
        skip_unless!(features().path_rules(), "hiding paths needs the mount view");
    };
}

/// Every catalogue entry that lives under the home directory, the runtime directory, the agent,
/// the session bus or where a relocating variable points (the XDG base directories included),
/// planted in throwaway ones: a marker file at each file entry and inside
/// each directory entry, a listener at each socket entry and inside each socket directory.
/// System paths (`/etc/shadow`, `/run/docker.sock`, `/tmp/tmux-$UID`) are not planted.
struct Planted {
    home: tempfile::TempDir,
    runtime: tempfile::TempDir,
    sockets_dir: tempfile::TempDir,
    /// Where the relocating variables (`GNUPGHOME`, `XDG_CONFIG_HOME`, …) point.
    elsewhere: tempfile::TempDir,
    relocations: Relocations,
    /// Files holding `SECRET <entry>`.
    files: Vec<PathBuf>,
    /// Listening sockets, with the catalogue entry each stands for.
    listeners: Vec<(String, PathBuf, UnixListener)>,
}

impl Planted {
    fn new() -> Planted {
        let elsewhere = scratch();
        let relocations: Relocations = RELOCATING_VARIABLES
            .iter()
            .map(|name| {
                let path = elsewhere.path().join(name);
                let paths = match *name {
                    "KUBECONFIG" => vec![path.join("a"), path.join("b")],
                    _ => vec![path],
                };
                ((*name).to_owned(), paths)
            })
            .collect();
        let mut planted = Planted {
            home: scratch(),
            runtime: scratch(),
            sockets_dir: scratch(),
            elsewhere,
            relocations,
            files: Vec::new(),
            listeners: Vec::new(),
        };
        let dirs = [&planted.home, &planted.runtime, &planted.sockets_dir, &planted.elsewhere]
            .map(|dir| dir.path().to_path_buf());
        let [home, runtime, sockets_dir, _] = &dirs;
        let relocations = planted.relocations.clone();
        let (agent, bus) = (sockets_dir.join("agent"), sockets_dir.join("bus"));
        let env = PolicyEnv {
            home: Some(home),
            runtime_dir: Some(runtime),
            ssh_auth_sock: Some(&agent),
            session_bus: Some(&bus),
            relocations: Some(&relocations),
            ..PolicyEnv::default()
        };
        for entry in SECRET_FILES {
            for path in expand_hidden_path(entry.path, &env) {
                if dirs.iter().any(|dir| path.starts_with(dir)) {
                    planted.plant(entry.path, entry.kind, &path);
                }
            }
        }
        for dir in &dirs {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            chown_nobody(dir);
        }
        for (_, path, _) in &planted.listeners {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        planted
    }

    fn plant(&mut self, entry: &str, kind: SecretKind, path: &Path) {
        let marker = format!("SECRET {entry}\n");
        match kind {
            SecretKind::File => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, marker).unwrap();
                self.files.push(path.to_path_buf());
            }
            SecretKind::Directory => {
                std::fs::create_dir_all(path).unwrap();
                std::fs::write(path.join("secret"), marker).unwrap();
                self.files.push(path.join("secret"));
            }
            SecretKind::Socket => self.listen(entry, path),
            SecretKind::SocketDirectory => {
                std::fs::create_dir_all(path).unwrap();
                self.listen(entry, &path.join("agent.sock"));
            }
        }
    }

    fn listen(&mut self, entry: &str, path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        self.listeners.push((entry.to_owned(), path.to_path_buf(), listener));
    }

    /// `cordon exec -a never` as `user` with this home, runtime directory, agent and bus.
    fn exec(&self, user: User, work: &Path, flags: &[&str], argv: &[&str]) -> Run {
        let mut args = vec!["exec", "-a", "never", "-C", work.to_str().unwrap()];
        args.extend_from_slice(&["-c", "shell_environment_policy.inherit=all"]);
        args.extend_from_slice(flags);
        args.push("--");
        args.extend_from_slice(argv);
        let bus = self.sockets_dir.path().join("bus");
        let mut command = cordon_command(user, &args);
        for (name, paths) in &self.relocations {
            command.env(name, std::env::join_paths(paths).unwrap());
        }
        command
            .env("HOME", self.home.path())
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env("SSH_AUTH_SOCK", self.sockets_dir.path().join("agent"))
            .env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={},guid=0", bus.display()))
            .output()
            .unwrap()
            .into()
    }

    /// The listeners that accepted a connection since the last call.
    #[cfg(target_os = "linux")]
    fn reached(&self) -> Vec<&str> {
        self.listeners
            .iter()
            .filter(|(_, _, listener)| listener.accept().is_ok())
            .map(|(entry, _, _)| entry.as_str())
            .collect()
    }
}

/// Reads each path in argv and prints what it got (the contents, or the error).
const READ_ALL: &str = r#"
import sys
for path in sys.argv[1:]:
    try:
        print(path, open(path).read().strip())
    except OSError as error:
        print(path, "unreadable:", error.strerror)
"#;

#[test]
fn every_catalogue_file_planted_in_a_throwaway_home_stays_unreadable() {
    require_mount_view!();
    for user in USERS {
        let planted = Planted::new();
        let work = scratch();
        let control = planted.home.path().join("notes");
        std::fs::write(&control, "CONTROL\n").unwrap();
        chown_nobody(&control);
        let mut argv = vec![python(), "-c", READ_ALL, control.to_str().unwrap()];
        argv.extend(planted.files.iter().map(|p| p.to_str().unwrap()));
        assert!(planted.files.len() > 300, "{}", planted.files.len());
        // From outside, every file reads as planted: the sandbox's refusals are the hiding.
        let outside = Run::from(command_as(user, argv[0]).args(&argv[1..]).output().unwrap());
        assert_eq!(outside.stdout.matches("SECRET").count(), planted.files.len());

        let run = planted.exec(user, work.path(), &[], &argv);
        assert!(run.stdout.contains("CONTROL"), "{user:?}: {}{}", run.stdout, run.stderr);
        let read: Vec<&str> = run.stdout.lines().filter(|l| l.contains("SECRET")).collect();
        assert!(read.is_empty(), "{user:?}: read {read:#?}");
        assert_eq!(run.stdout.lines().count(), planted.files.len() + 1, "{}", run.stderr);

        // Without the mount view (no namespaces) the run is refused, not run with them exposed.
        #[cfg(target_os = "linux")]
        if user == User::Root {
            let no_unshare = [(libc::SYS_unshare, libc::EPERM)];
            let mut args =
                vec!["cordon", "exec", "-a", "never", "-C", work.path().to_str().unwrap()];
            args.push("--");
            args.extend_from_slice(&argv);
            let argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| os(a)).collect();
            let out = under_filter(&no_unshare, Path::new(CORDON), &argv)
                .env("HOME", planted.home.path())
                .output()
                .unwrap();
            let refused = Run::from(out);
            assert_eq!(refused.code, Some(125), "{}", refused.stderr);
            assert!(!refused.stdout.contains("SECRET"), "{}", refused.stdout);
        }
    }
}

/// Without the mount view Landlock is what hides: read is granted entry by entry around every
/// catalogue path, never on the path itself, so each planted secret is refused while the
/// control next to them reads.
#[cfg(target_os = "linux")]
#[test]
fn with_the_mount_view_turned_off_every_catalogue_file_stays_unreadable() {
    require_sandbox!(1);
    for user in USERS {
        let planted = Planted::new();
        let work = scratch();
        let control = planted.home.path().join("notes");
        std::fs::write(&control, "CONTROL\n").unwrap();
        chown_nobody(&control);
        let mut argv = vec![python(), "-c", READ_ALL, control.to_str().unwrap()];
        argv.extend(planted.files.iter().map(|p| p.to_str().unwrap()));
        let run = planted.exec(user, work.path(), features().no_mount_view(), &argv);
        assert!(run.stdout.contains("CONTROL"), "{user:?}: {}{}", run.stdout, run.stderr);
        let read: Vec<&str> = run.stdout.lines().filter(|l| l.contains("SECRET")).collect();
        assert!(read.is_empty(), "{user:?}: read {read:#?}");
        assert_eq!(run.stdout.lines().count(), planted.files.len() + 1, "{}", run.stderr);
        assert_eq!(
            run.stdout.matches("unreadable: Permission denied").count(),
            planted.files.len(),
            "{user:?}: {}",
            run.stdout
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn no_catalogue_socket_answers_a_sandboxed_command_with_the_network_on() {
    require_mount_view!();
    for user in USERS {
        let planted = Planted::new();
        let work = scratch();
        let runtime = planted.runtime.path();
        let paths: Vec<&str> =
            planted.listeners.iter().map(|(_, path, _)| path.to_str().unwrap()).collect();
        assert!(paths.len() >= 15, "{paths:?}");
        // The probe reaches every listener from outside.
        let mut argv = vec![python(), "-c", CONNECT_ALL];
        argv.extend_from_slice(&paths);
        let outside = Run::from(command_as(user, argv[0]).args(&argv[1..]).output().unwrap());
        assert_eq!(outside.stdout.matches(" connected").count(), paths.len(), "{}", outside.stdout);
        assert_eq!(planted.reached().len(), paths.len());

        let run = planted.exec(user, work.path(), &["--network"], &argv);
        assert_eq!(run.stdout.matches(" refused").count(), paths.len(), "{}", run.stderr);
        assert_eq!(planted.reached(), Vec::<&str>::new(), "{user:?}");

        // The entries inside the runtime directory stay hidden when the user un-hides it.
        let inside: Vec<&(String, PathBuf, UnixListener)> = planted
            .listeners
            .iter()
            .filter(|(entry, path, _)| path.starts_with(runtime) && entry != "$XDG_RUNTIME_DIR")
            .collect();
        assert!(inside.len() >= 6, "{}", inside.len());
        let mut argv = vec![python(), "-c", CONNECT_ALL];
        argv.extend(inside.iter().map(|(_, path, _)| path.to_str().unwrap()));
        let unhide = ["--network", "--unhide", runtime.to_str().unwrap()];
        let run = planted.exec(user, work.path(), &unhide, &argv);
        assert_eq!(run.stdout.matches(" refused").count(), inside.len(), "{}", run.stderr);
        assert_eq!(planted.reached(), Vec::<&str>::new(), "{user:?}");

        // The probe does connect from inside when a socket is allowed: the refusals above are
        // the hiding, not a broken probe.
        let bus = planted.sockets_dir.path().join("bus");
        let allow = ["--network", "--allow-unix-socket", bus.to_str().unwrap()];
        let run = planted.exec(
            user,
            work.path(),
            &allow,
            &[python(), "-c", CONNECT_ALL, bus.to_str().unwrap()],
        );
        assert!(run.stdout.contains(" connected"), "{user:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(planted.reached(), vec!["$DBUS_SESSION_BUS_ADDRESS"]);
    }
}

/// A HOME pointed elsewhere does not uncover the account's own files: the helper hides each
/// `~` entry under the user view's `home` and under its `account_home`.
#[cfg(target_os = "linux")]
#[test]
fn a_home_pointed_elsewhere_still_hides_the_account_homes_files() {
    require_mount_view!();
    let (account, elsewhere, work) = (scratch(), scratch(), scratch());
    for home in [&account, &elsewhere] {
        std::fs::write(home.path().join(".pgpass"), "SECRET pgpass\n").unwrap();
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        std::fs::write(home.path().join(".aws/credentials"), "SECRET aws\n").unwrap();
    }
    let view = |account_home: Option<&Path>| {
        let mut view = json!({"home": elsewhere.path(), "uid": nix::unistd::getuid().as_raw()});
        if let Some(account_home) = account_home {
            view["account_home"] = json!(account_home);
        }
        view.to_string()
    };
    let policy = json!({"type": "workspace-write", "writable_roots": [work.path()]}).to_string();
    let script = format!(
        "cat {0}/.pgpass {0}/.aws/credentials {1}/.pgpass {1}/.aws/credentials; echo ran",
        account.path().display(),
        elsewhere.path().display()
    );
    let run = |view: String| -> Run {
        helper_cmd(&policy, work.path(), &["--user-view", &view], &["/bin/sh", "-c", &script])
            .output()
            .unwrap()
            .into()
    };
    let hidden = run(view(Some(account.path())));
    assert!(hidden.stdout.contains("ran"), "{}{}", hidden.stdout, hidden.stderr);
    assert!(!hidden.stdout.contains("SECRET"), "{}", hidden.stdout);
    // Without the account's home in the view only the HOME given is hidden: the test reads.
    let only_home = run(view(None));
    assert_eq!(only_home.stdout.matches("SECRET").count(), 2, "{}", only_home.stdout);
}

#[test]
fn doctor_lists_the_secrets_this_user_has_and_the_variables_it_would_remove() {
    let home = scratch();
    let cordon_home = scratch();
    std::fs::write(home.path().join(".pgpass"), "db:5432:*:u:pw\n").unwrap();
    std::fs::create_dir_all(home.path().join(".config/gh")).unwrap();
    std::fs::write(home.path().join(".gitconfig"), "[user]\n").unwrap();
    let doctor = |json: bool| -> Run {
        let mut args = vec!["doctor"];
        if json {
            args.push("--json");
        }
        Command::new(CORDON)
            .args(&args)
            .env("HOME", home.path())
            .env("CORDON_HOME", cordon_home.path())
            .env("DB_PW", "hunter2-value")
            .env("NOTES", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")
            .env("EDITOR", "vi")
            .output()
            .unwrap()
            .into()
    };
    let run = doctor(true);
    assert!(matches!(run.code, Some(0 | 1)), "{}", run.stderr);
    for value in ["hunter2-value", "ghp_abcdefghij"] {
        assert!(!run.stdout.contains(value), "a value leaked: {value}");
    }
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    let hidden = document["hidden_here"].as_array().unwrap();
    let pgpass = home.path().join(".pgpass");
    let listed = |path: &Path| hidden.iter().find(|item| item["path"] == json!(path)).cloned();
    let entry = listed(&pgpass).unwrap_or_else(|| panic!("{pgpass:?} not in {hidden:#?}"));
    assert_eq!(entry["tool"], "PostgreSQL");
    assert_eq!(entry["entry"], "~/.pgpass");
    // What hides it here: the mechanisms this kernel has.
    #[cfg(target_os = "linux")]
    {
        let by = entry["hidden_by"].as_array().unwrap();
        assert_eq!(by.contains(&json!("landlock")), features().landlock_abi >= 1, "{by:?}");
        assert_eq!(by.contains(&json!("mount view")), features().mount_view, "{by:?}");
    }
    assert_eq!(listed(&home.path().join(".config/gh")).unwrap()["tool"], "GitHub CLI");
    assert!(listed(&home.path().join(".gitconfig")).is_none());
    let catalogue = document["hidden_catalogue"].as_array().unwrap();
    assert!(catalogue.iter().any(|e| e["path"] == "$DBUS_SESSION_BUS_ADDRESS"), "{catalogue:?}");
    let removed = document["environment"]["removed_here"].as_array().unwrap();
    for expected in [
        json!({"name": "DB_PW", "reason": "secret_name"}),
        json!({"name": "NOTES", "reason": "secret_value"}),
    ] {
        assert!(removed.contains(&expected), "{expected} missing from {removed:?}");
    }
    assert!(!removed.iter().any(|r| r["name"] == "EDITOR"), "{removed:?}");

    let text = doctor(false).stdout;
    assert!(text.contains("PostgreSQL: passwords"), "{text}");
    #[cfg(target_os = "linux")]
    if features().landlock_abi >= 1 {
        assert!(text.contains("Landlock (no read right"), "{text}");
    }
    assert!(text.contains("DB_PW (secret_name)"), "{text}");
    assert!(!text.contains("hunter2-value"), "{text}");
}
