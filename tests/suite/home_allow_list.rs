//! The home directory's read allow-list: in a throwaway home laid out as tools lay theirs out,
//! every entry that is not on the list stays unreadable (its marker never shows), as root and
//! as uid 65534, while what a developer's tools need keeps working: git with a dotfile
//! manager's `~/.gitconfig` and an `includeIf`, a login shell whose `~/.profile` sources a
//! hidden file, a program on a `PATH` directory inside a hidden entry, a workspace inside a
//! dot entry, a link into an allowed toolchain directory.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::util::*;

/// The secrets a planted home holds (relative to it): none is in the catalogue of secrets, so
/// only the allow-list hides them.
const UNLISTED: &[&str] = &[
    ".tsh/keys/u",
    ".config/Cursor/User/globalStorage/state.vscdb",
    ".config/Code/User/globalStorage/state.vscdb",
    ".config/JetBrains/IU2024/c.kdbx",
    ".config/unknowntool/token",
    ".unknowntool/credentials",
    ".doppler/.doppler.yaml",
    ".continue/config.json",
    ".mitmproxy/mitmproxy-ca.pem",
    ".local/share/TelegramDesktop/tdata/key",
    ".local/state/unknowntool/session",
    ".cache/unknowntool/token",
    ".var/app/org.example.App/config/token",
    "snap/someapp/current/token",
    ".secrets",
    ".dotfiles/token",
    ".ivy2/.credentials",
];

/// The catalogue's own secret inside an allowed entry, and the TLS keys docker contexts keep.
const CATALOGUED_INSIDE_ALLOWED: &[&str] =
    &[".docker/config.json", ".docker/contexts/tls/abc/docker/key.pem", ".cargo/credentials.toml"];

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn plant() -> Home {
        let home = Home { dir: scratch() };
        for rel in UNLISTED.iter().chain(CATALOGUED_INSIDE_ALLOWED) {
            home.write(rel, &format!("SECRET {rel}\n"));
        }
        // Controls: what tools read.
        home.write("notes.txt", "CONTROL notes\n");
        home.write(".docker/contexts/meta/abc/meta.json", "CONTROL docker-meta\n");
        home.write(".cargo/env", "CONTROL cargo-env\n");
        home.write(".config/git/ignore", "CONTROL git-ignore\n");
        home.write(
            ".dotfiles/gitconfig",
            "[user]\n\tname = Planted User\n[includeIf \"gitdir:/\"]\n\tpath = ~/.dotfiles/work.inc\n",
        );
        symlink(home.path().join(".dotfiles/gitconfig"), home.path().join(".gitconfig")).unwrap();
        home.write(".dotfiles/work.inc", "[user]\n\temail = work@example.org\n");
        home.write(
            ".profile",
            ". \"$HOME/.secrets\"\n[ -f ~/.sometool/env ] && . ~/.sometool/env\necho profile-ran\n",
        );
        home.write(".sometool/env", "SECRET_SOMETOOL=1\n");
        home.write(".sometool/secret", "SECRET .sometool/secret\n");
        // An installer's program in `~/.local/bin`, a link into its own environment.
        let poetry =
            home.write(".local/share/pypoetry/venv/bin/poetry", "#!/bin/sh\necho CONTROL poetry\n");
        let other = home
            .write(".local/share/sometool/venv/bin/sometool", "#!/bin/sh\necho SECRET sometool\n");
        std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::set_permissions(&poetry, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::create_dir_all(home.path().join(".local/bin")).unwrap();
        symlink(&poetry, home.path().join(".local/bin/poetry")).unwrap();
        // A program linked in from an installation the list does not name does not run.
        symlink(&other, home.path().join(".local/bin/sometool")).unwrap();
        let tool = home.write(".mytool/bin/mytool", "#!/bin/sh\necho CONTROL mytool\n");
        std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        home.write(".mytool/secret", "SECRET .mytool/secret\n");
        let uv = home.write(".local/share/uv/python/bin/tool", "#!/bin/sh\necho CONTROL uv-tool\n");
        std::fs::set_permissions(&uv, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        home.write(".myproject/ws/README", "CONTROL workspace-in-dot-entry\n");
        home.write(".myproject/other", "CONTROL beside-the-workspace\n");
        chown_nobody(home.path());
        home
    }

    /// `cordon exec -a never` as `user` in `work`, with this home and `PATH` holding the hidden
    /// entry's `bin`.
    fn exec(&self, user: User, work: &Path, flags: &[&str], script: &str) -> Run {
        let mut args = vec!["exec", "-a", "never", "-C", work.to_str().unwrap()];
        args.extend_from_slice(&["-c", "shell_environment_policy.inherit=all"]);
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "/bin/bash", "-c", script]);
        let path = format!(
            "{}:{}:/usr/local/bin:/usr/bin:/bin",
            self.path().join(".mytool/bin").display(),
            self.path().join(".local/bin").display()
        );
        cordon_command(user, &args)
            .env("HOME", self.path())
            .env("PATH", path)
            .output()
            .unwrap()
            .into()
    }
}

/// Prints each file's contents, or `unreadable PATH`.
fn read_script(home: &Path, rels: &[&str]) -> String {
    rels.iter()
        .map(|rel| {
            let path = home.join(rel);
            format!("cat '{0}' 2>/dev/null || echo 'unreadable {0}'\n", path.display())
        })
        .collect()
}

#[test]
fn unlisted_home_entries_stay_unreadable_and_everyday_tools_keep_working() {
    require_sandbox!(1);
    for user in USERS {
        let home = Home::plant();
        let work = scratch();
        let secrets: Vec<&str> =
            UNLISTED.iter().chain(CATALOGUED_INSIDE_ALLOWED).copied().collect();
        // From outside every marker reads: what is missing inside is the sandbox's doing.
        let outside = Run::from(
            command_as(user, "/bin/bash")
                .args(["-c", &read_script(home.path(), &secrets)])
                .output()
                .unwrap(),
        );
        assert_eq!(outside.stdout.matches("SECRET").count(), secrets.len(), "{}", outside.stdout);

        let run = home.exec(user, work.path(), &[], &read_script(home.path(), &secrets));
        let leaked: Vec<&str> = run.stdout.lines().filter(|l| l.contains("SECRET")).collect();
        assert!(leaked.is_empty(), "{user:?}: read {leaked:#?}\n{}", run.stderr);

        // The controls, in the same kind of run.
        let controls = read_script(
            home.path(),
            &[
                "notes.txt",
                ".docker/contexts/meta/abc/meta.json",
                ".cargo/env",
                ".config/git/ignore",
            ],
        );
        let script = format!(
            "{controls}git init -q . && git config user.name && git config user.email; \
             mytool; poetry; '{uv}'; bash -lc 'echo login-shell-ran'",
            uv = home.path().join(".local/share/uv/python/bin/tool").display()
        );
        let run = home.exec(user, work.path(), &[], &script);
        for expected in [
            "CONTROL notes",
            "CONTROL docker-meta",
            "CONTROL cargo-env",
            "CONTROL git-ignore",
            "Planted User",
            "work@example.org",
            "CONTROL mytool",
            "CONTROL poetry",
            "CONTROL uv-tool",
            "profile-ran",
            "login-shell-ran",
        ] {
            assert!(
                run.stdout.contains(expected),
                "{user:?}: no {expected}: {}{}",
                run.stdout,
                run.stderr
            );
        }
        let run_other = home.exec(user, work.path(), &[], "sometool");
        assert!(!run_other.stdout.contains("SECRET"), "{user:?}: {}", run_other.stdout);
        assert_ne!(run_other.code, Some(0), "{user:?}: {}", run_other.stderr);
        // The sourced file reads as empty: no denial in the login shell's output.
        assert!(!run.stderr.contains("Permission denied"), "{user:?}: {}", run.stderr);
        assert_eq!(run.code, Some(0), "{user:?}: {}", run.stderr);
        // The hidden entry that holds the PATH directory stays hidden but for it.
        // So do the entries holding a sourced file.
        let rels = [".mytool/secret", ".sometool/secret", ".sometool/env"];
        let run = home.exec(user, work.path(), &[], &read_script(home.path(), &rels));
        assert!(!run.stdout.contains("SECRET"), "{user:?}: {}", run.stdout);

        // A workspace inside a dot entry that is not on the list: the workspace is the
        // command's, what lies beside it in the entry is not.
        let ws = home.path().join(".myproject/ws");
        let run = home.exec(
            user,
            &ws,
            &[],
            &read_script(home.path(), &[".myproject/ws/README", ".myproject/other", ".tsh/keys/u"]),
        );
        assert!(
            run.stdout.contains("CONTROL workspace-in-dot-entry"),
            "{user:?}: {}{}",
            run.stdout,
            run.stderr
        );
        assert!(!run.stdout.contains("CONTROL beside-the-workspace"), "{user:?}: {}", run.stdout);
        assert!(!run.stdout.contains("SECRET"), "{user:?}: {}", run.stdout);
    }
}

#[test]
fn unhide_and_the_config_switch_open_the_list_but_never_the_catalogue() {
    require_sandbox!(1);
    let home = Home::plant();
    let work = scratch();
    let rels = [".tsh/keys/u", ".unknowntool/credentials", ".docker/config.json"];
    let script = read_script(home.path(), &rels);
    let tsh = home.path().join(".tsh");
    let run = home.exec(User::Root, work.path(), &["--unhide", tsh.to_str().unwrap()], &script);
    assert!(run.stdout.contains("SECRET .tsh/keys/u"), "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("SECRET .unknowntool"), "{}", run.stdout);
    assert!(!run.stdout.contains("SECRET .docker"), "{}", run.stdout);

    let run = home.exec(User::Root, work.path(), &["-c", "home_allow_list=false"], &script);
    assert!(run.stdout.contains("SECRET .tsh/keys/u"), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("SECRET .unknowntool/credentials"), "{}", run.stdout);
    assert!(!run.stdout.contains("SECRET .docker"), "{}", run.stdout);
}

#[test]
fn a_read_the_list_refuses_is_named_with_its_entry_and_the_knob() {
    require_sandbox!(1);
    let home = Home::plant();
    let work = scratch();
    let key = home.path().join(".tsh/keys/u");
    let run = home.exec(User::Root, work.path(), &[], &format!("cat '{}'", key.display()));
    assert_ne!(run.code, Some(0));
    let entry = home.path().join(".tsh");
    assert!(run.stderr.contains("not on the list of home entries"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("--unhide {}", entry.display())), "{}", run.stderr);

    // `--dry-run` lists what the list hides here.
    let mut args = vec!["exec", "--dry-run", "-C", work.path().to_str().unwrap(), "--", "true"];
    let dry: Run =
        cordon_command(User::Root, &args).env("HOME", home.path()).output().unwrap().into();
    assert!(dry.stdout.contains("home list:"), "{}", dry.stdout);
    assert!(dry.stdout.contains(entry.to_str().unwrap()), "{}", dry.stdout);
    args.insert(2, "--json");
    let dry: Run =
        cordon_command(User::Root, &args).env("HOME", home.path()).output().unwrap().into();
    let json: serde_json::Value = serde_json::from_str(&dry.stdout).unwrap();
    let hidden = json["sandbox"]["home_hidden"].as_array().cloned().unwrap_or_default();
    assert!(hidden.iter().any(|p| p.as_str() == entry.to_str()), "{}", dry.stdout);
}

/// Agents where they live by default — two ssh agents under `/tmp/ssh-*`, git's credential
/// cache, an agent no catalogue lists in a dot directory — answer no sandboxed command with the
/// network on, whether cordon was given `SSH_AUTH_SOCK` (naming the first) or not.
#[test]
fn agents_where_they_live_by_default_get_no_connection_with_the_network_on() {
    use std::os::unix::net::UnixListener;
    require_sandbox!(1);
    for user in USERS {
        let home = Home::plant();
        let work = scratch();
        let mut places: Vec<PathBuf> = Vec::new();
        let mut agent_dirs = Vec::new();
        for n in 0..2 {
            let dir = tempfile::Builder::new().prefix("ssh-").tempdir_in("/tmp").unwrap();
            places.push(dir.path().join(format!("agent.{}", 1000 + n)));
            agent_dirs.push(dir);
        }
        places.push(home.path().join(".cache/git/credential/socket"));
        places.push(home.path().join(".someagent/agent.sock"));
        let listeners: Vec<UnixListener> = places
            .iter()
            .map(|path| {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let listener = UnixListener::bind(path).unwrap();
                listener.set_nonblocking(true).unwrap();
                listener
            })
            .collect();
        for dir in &agent_dirs {
            chown_nobody(dir.path());
        }
        chown_nobody(home.path());
        for path in &places {
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o777);
            std::fs::set_permissions(path, mode).unwrap();
        }
        let paths: Vec<&str> = places.iter().map(|p| p.to_str().unwrap()).collect();
        let accepted = || listeners.iter().filter(|l| l.accept().is_ok()).count();
        // The probe reaches every one from outside.
        let mut argv = vec![python(), "-c", CONNECT_ALL];
        argv.extend_from_slice(&paths);
        let outside = Run::from(command_as(user, argv[0]).args(&argv[1..]).output().unwrap());
        assert_eq!(outside.stdout.matches(" connected").count(), paths.len(), "{}", outside.stdout);
        assert_eq!(accepted(), paths.len());

        let script = connect_all_line(&places.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        for agent in [None, Some(paths[0])] {
            let mut args = vec!["exec", "-a", "never", "-C", work.path().to_str().unwrap()];
            args.extend_from_slice(&["--network", "--", "/bin/sh", "-c", &script]);
            let mut command = cordon_command(user, &args);
            command.env("HOME", home.path()).env_remove("SSH_AUTH_SOCK");
            if let Some(agent) = agent {
                command.env("SSH_AUTH_SOCK", agent);
            }
            let run: Run = command.output().unwrap().into();
            assert_eq!(
                run.stdout.matches(" refused").count(),
                paths.len(),
                "{user:?}: {}{}",
                run.stdout,
                run.stderr
            );
            assert_eq!(accepted(), 0, "{user:?} with SSH_AUTH_SOCK {agent:?}");
        }
        // The same probe connects from inside once the list is off: the refusals are the hiding.
        let agent = paths[3];
        let mut args = vec!["exec", "-a", "never", "-C", work.path().to_str().unwrap()];
        args.extend_from_slice(&[
            "--network",
            "-c",
            "home_allow_list=false",
            "--",
            python(),
            "-c",
            CONNECT_ALL,
            agent,
        ]);
        let run: Run =
            cordon_command(user, &args).env("HOME", home.path()).output().unwrap().into();
        assert!(run.stdout.contains(" connected"), "{user:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(accepted(), 1, "{user:?}");
    }
}

/// Without the mount view, Landlock alone hides what the list leaves out.
#[test]
fn without_the_mount_view_read_rights_alone_hide_the_unlisted_entries() {
    require_sandbox!(1);
    for user in USERS {
        let home = Home::plant();
        let work = scratch();
        let script = read_script(home.path(), UNLISTED)
            + &read_script(home.path(), &["notes.txt", ".cargo/env"]);
        let mut flags = features().no_mount_view().to_vec();
        flags.extend_from_slice(&["--writes", "direct"]);
        let run = home.exec(user, work.path(), &flags, &script);
        assert!(run.stdout.contains("CONTROL notes"), "{user:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("CONTROL cargo-env"), "{user:?}: {}", run.stdout);
        let leaked: Vec<&str> = run.stdout.lines().filter(|l| l.contains("SECRET")).collect();
        assert!(leaked.is_empty(), "{user:?}: read {leaked:#?}");
        assert_eq!(
            run.stdout.matches("unreadable").count(),
            UNLISTED.len(),
            "{user:?}: {}",
            run.stdout
        );
    }
}

/// `$HOME` as the workspace (`--allow-home-root`, sealed) or as the working directory of a
/// read-only run: the command works there, and the dot entries the list leaves out stay
/// hidden all the same.
#[test]
fn the_home_directory_as_the_workspace_keeps_the_list() {
    require_sandbox!(1);
    let home = Home::plant();
    let script = format!(
        "{}git config --global user.name",
        read_script(home.path(), &[".tsh/keys/u", ".unknowntool/credentials", "notes.txt"])
    );
    for flags in [&["--allow-home-root"][..], &["-s", "read-only"][..]] {
        let run = home.exec(User::Root, home.path(), flags, &script);
        assert!(run.stdout.contains("CONTROL notes"), "{flags:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("Planted User"), "{flags:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stdout.contains("SECRET"), "{flags:?}: {}", run.stdout);
    }
}

/// A container past the size at which read rights grant a directory whole stays filtered
/// entry by entry; with the network on (and Landlock before ABI 9) the container is covered
/// whole with its readable entries put back, so an agent in a hidden entry gets no connection
/// and the command still finds what it needs.
#[test]
fn a_crowded_container_keeps_its_secrets_with_the_network_off_and_on() {
    use std::os::unix::net::UnixListener;
    require_sandbox!(1);
    let home = Home::plant();
    let work = scratch();
    let cache = home.path().join(".cache");
    home.write(".cache/pip/CONTROL", "CONTROL pip-cache\n");
    for i in 0..10_001 {
        std::fs::write(cache.join(format!("f{i}")), "").unwrap();
    }
    std::fs::create_dir_all(cache.join("agentdir")).unwrap();
    let socket = cache.join("agentdir/agent.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o777);
    std::fs::set_permissions(&socket, mode).unwrap();
    let script = format!(
        "{}{}",
        read_script(home.path(), &[".cache/unknowntool/token", ".cache/pip/CONTROL"]),
        connect_all_line(&[&socket])
    );
    for flags in [&[][..], &["--network"][..]] {
        let run = home.exec(User::Root, work.path(), flags, &script);
        assert!(
            run.stdout.contains("CONTROL pip-cache"),
            "{flags:?}: {}{}",
            run.stdout,
            run.stderr
        );
        assert!(!run.stdout.contains("SECRET"), "{flags:?}: {}", run.stdout);
        assert!(run.stdout.contains(" refused"), "{flags:?}: {}{}", run.stdout, run.stderr);
        assert!(listener.accept().is_err(), "{flags:?}: the agent was reached");
    }
}

/// `--add-dir` of a directory inside an entry the list hides: that directory is the command's,
/// the rest of the entry is not.
#[test]
fn a_root_inside_a_hidden_entry_opens_that_root_only() {
    require_sandbox!(1);
    let home = Home::plant();
    let work = scratch();
    home.write(".tsh/cache/CONTROL", "CONTROL tsh-cache\n");
    let cache = home.path().join(".tsh/cache");
    let script = read_script(home.path(), &[".tsh/cache/CONTROL", ".tsh/keys/u"]);
    let run = home.exec(User::Root, work.path(), &["--add-dir", cache.to_str().unwrap()], &script);
    assert!(run.stdout.contains("CONTROL tsh-cache"), "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("SECRET"), "{}", run.stdout);
}

/// Without Landlock (simulated: `landlock_create_ruleset` fails with ENOSYS, as on a kernel
/// without it) the mount view alone hides what the list leaves out, with stand-ins, and what
/// the tools need still reads.
#[test]
fn without_landlock_the_mount_view_alone_hides_the_unlisted_entries() {
    // Runs on a kernel without Landlock too, where the filter changes nothing.
    require_sandbox!(0);
    skip_unless!(features().path_rules(), "hiding paths without Landlock needs the mount view");
    let home = Home::plant();
    let work = scratch();
    let script = format!(
        "{}git config --global user.name; bash -lc 'echo login-shell-ran'",
        read_script(home.path(), UNLISTED)
            + &read_script(home.path(), &["notes.txt", ".cargo/env"])
    );
    let args =
        ["cordon", "exec", "-a", "never", "--best-effort", "-C", work.path().to_str().unwrap()];
    let mut argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| os(a)).collect();
    argv.extend(["--", "/bin/bash", "-c", &script].iter().map(|a| os(a)));
    let no_landlock = [(libc::SYS_landlock_create_ruleset, libc::ENOSYS)];
    let run: Run = under_filter(&no_landlock, Path::new(CORDON), &argv)
        .env("HOME", home.path())
        .output()
        .unwrap()
        .into();
    assert!(
        run.stderr.contains("Landlock"),
        "the run must say Landlock is missing: {}",
        run.stderr
    );
    for expected in ["CONTROL notes", "CONTROL cargo-env", "Planted User", "login-shell-ran"] {
        assert!(run.stdout.contains(expected), "no {expected}: {}{}", run.stdout, run.stderr);
    }
    let leaked: Vec<&str> = run.stdout.lines().filter(|l| l.contains("SECRET")).collect();
    assert!(leaked.is_empty(), "read {leaked:#?}");
}

/// With the network on below Landlock ABI 9, a home directory with more hidden dot entries than
/// readable ones is covered whole and its readable entries put back: the workspace in it (or
/// the home itself as the workspace) still takes the command's writes, which reach the host,
/// and an agent in a hidden entry gets no connection.
#[test]
fn a_covered_home_directory_keeps_the_workspace_writable_and_its_agents_unreachable() {
    use std::os::unix::net::UnixListener;
    require_sandbox!(1);
    let home = Home::plant();
    for i in 0..60 {
        home.write(&format!(".tool{i}/token"), &format!("SECRET tool{i}\n"));
    }
    let socket = home.path().join(".tool7/agent.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o777);
    std::fs::set_permissions(&socket, mode).unwrap();
    let ws = home.path().join("projects/app");
    std::fs::create_dir_all(&ws).unwrap();
    let probe = connect_all_line(&[&socket]);
    let cases: [(&Path, &[&str], &str); 2] = [
        (&ws, &["--network"], "written-in-workspace"),
        (home.path(), &["--network", "--allow-home-root"], "projects/written-from-home"),
    ];
    for (cwd, flags, file) in cases {
        let script = format!(
            "echo ok > {file}; {}git config --global user.name; {probe}",
            read_script(home.path(), &[".tool3/token", ".tsh/keys/u", "notes.txt"])
        );
        let run = home.exec(User::Root, cwd, flags, &script);
        assert!(run.stdout.contains("CONTROL notes"), "{flags:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("Planted User"), "{flags:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stdout.contains("SECRET"), "{flags:?}: {}", run.stdout);
        assert!(run.stdout.contains(" refused"), "{flags:?}: {}{}", run.stdout, run.stderr);
        assert!(listener.accept().is_err(), "{flags:?}: the agent was reached");
        assert!(
            cwd.join(file).is_file(),
            "{flags:?}: the write did not reach the host: {}",
            run.stderr
        );
    }
}

/// A preset's cache lives in `$CORDON_HOME` under the home directory (the default
/// `~/.cordon`): it is the command's to write, the rest of `$CORDON_HOME` is hidden.
#[test]
fn a_preset_cache_under_the_home_directory_stays_writable_and_the_rest_of_cordon_home_hidden() {
    require_sandbox!(1);
    let home = Home::plant();
    let work = scratch();
    home.write(".cordon/rules.toml", "# SECRET rules\n");
    let script = format!(
        "touch \"$npm_config_cache/probe\" && echo cache-ok; {}",
        read_script(home.path(), &[".cordon/rules.toml"])
    );
    let run = home.exec(User::Root, work.path(), &["--preset", "npm"], &script);
    assert!(run.stdout.contains("cache-ok"), "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("SECRET"), "{}", run.stdout);
}

/// The toolchains of the account running the suite, with its real home directory: cargo,
/// rustc, node, npm, python and pip still run under the list.
#[test]
fn everyday_toolchains_run_under_the_list_with_the_real_home() {
    require_sandbox!(1);
    let have = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    // The kernel matrix's VMs have no Rust toolchain in root's home: there the Rust half is
    // left out, saying so; everywhere else (CI, a developer's machine) it runs.
    let tools = ["node", "npm", "python3"];
    let missing: Vec<&str> = tools.iter().copied().filter(|tool| !have(tool)).collect();
    skip_unless!(missing.is_empty(), "needs {missing:?} on PATH (.ci/run installs them)");
    let mut script = String::from(
        "node -e 'console.log(\"node-ok\")' && npm --version && python3 -c 'print(\"python-ok\")'",
    );
    let pip = Command::new("python3").args(["-m", "pip", "--version"]).output();
    for (present, line, tools) in [
        (pip.is_ok_and(|o| o.status.success()), " && python3 -m pip --version", "pip"),
        (have("cargo") && have("rustc"), " && cargo --version && rustc --version", "cargo, rustc"),
    ] {
        if present {
            script.push_str(line);
        } else {
            eprintln!("{tools}: not here, left out");
        }
    }
    script.push_str(" && echo all-ok");
    let work = scratch();
    let args =
        ["exec", "-a", "never", "-C", work.path().to_str().unwrap(), "--", "sh", "-c", &script];
    let run: Run = cordon_command(User::Root, &args).output().unwrap().into();
    assert!(run.stdout.contains("all-ok"), "{}{}", run.stdout, run.stderr);
}

/// What grants a place beside the list is never a link the command can re-point: a `PATH`
/// directory in the workspace (a virtualenv's `bin`) holding a link into a hidden entry, and an
/// allowed `~/.vimrc` leading into a workspace where the command replaced its target with a
/// link to a secret, grant nothing on the next run.
#[test]
fn a_link_the_command_planted_or_re_pointed_grants_nothing_on_the_next_run() {
    require_sandbox!(1);
    let home = Home::plant();
    let ws = home.path().join("projects/ws");
    let dots = scratch();
    std::fs::create_dir_all(ws.join(".venv/bin")).unwrap();
    std::fs::write(dots.path().join("vimrc"), "set nu\n").unwrap();
    symlink(dots.path().join("vimrc"), home.path().join(".vimrc")).unwrap();
    let venv_bin = ws.join(".venv/bin");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", venv_bin.display());
    let run = |cwd: &Path, script: &str| -> Run {
        let args = ["exec", "-a", "never", "-C", cwd.to_str().unwrap(), "--", "sh", "-c", script];
        cordon_command(User::Root, &args)
            .env("HOME", home.path())
            .env("PATH", &path)
            .output()
            .unwrap()
            .into()
    };
    let tsh = home.path().join(".tsh");
    let key = tsh.join("keys/u");
    let plant = format!(
        "ln -s '{}' .venv/bin/k && ln -s '{}' .venv/bin/tsh && echo planted",
        key.display(),
        tsh.display()
    );
    assert!(run(&ws, &plant).stdout.contains("planted"));
    let repoint = format!("rm vimrc && ln -s '{}' vimrc && echo repointed", key.display());
    assert!(run(dots.path(), &repoint).stdout.contains("repointed"));
    // From outside the links lead to the secret: the refusals below are the rule's.
    assert!(std::fs::read_to_string(ws.join(".venv/bin/k")).unwrap().contains("SECRET"));
    let read =
        format!("cat '{}' '{}'; echo done", key.display(), home.path().join(".vimrc").display());
    let next = run(&ws, &read);
    assert!(next.stdout.contains("done"), "{}", next.stderr);
    assert!(!next.stdout.contains("SECRET"), "{}", next.stdout);
}

/// With the network on below Landlock ABI 9, a command started in an entry the list hides (an
/// agent's `workdir`, the bare helper's `--command-cwd`) is refused rather than run next to
/// that entry's sockets; a hidden link out of the home covers nothing where it leads; and an
/// allowed socket in a hidden entry is reached.
#[test]
fn with_the_network_on_hidden_entries_are_covered_without_touching_what_links_lead_to() {
    use std::os::unix::net::UnixListener;
    require_sandbox!(1);
    skip_unless!(
        features().landlock_abi < 9,
        "from Landlock ABI 9 read rights refuse connect() themselves: nothing is covered"
    );
    let home = Home::plant();
    let work = scratch();
    symlink("/usr/share", home.path().join(".sharelink")).unwrap();
    let agent = home.path().join(".config/someagent/agent.sock");
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    let listener = UnixListener::bind(&agent).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o777);
    std::fs::set_permissions(&agent, mode).unwrap();
    let script = format!("ls /usr/share | wc -l; {}", connect_all_line(&[&agent]));
    let allow = ["--network", "--allow-unix-socket", agent.to_str().unwrap()];
    let run = home.exec(User::Root, work.path(), &allow, &script);
    let listed: usize = run.stdout.lines().next().unwrap_or("0").trim().parse().unwrap_or(0);
    assert!(listed > 0, "/usr/share was covered: {}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(" connected"), "{}{}", run.stdout, run.stderr);
    assert!(listener.accept().is_ok(), "the allowed agent was not reached");

    let policy = r#"{"type":"workspace-write","network_access":true}"#;
    let cwd = home.path().join(".tsh");
    let view = serde_json::json!({"home": home.path()}).to_string();
    let extra = ["--user-view", view.as_str(), "--command-cwd", cwd.to_str().unwrap()];
    let refused: Run =
        helper_cmd(policy, work.path(), &extra, &["/bin/true"]).output().unwrap().into();
    assert_eq!(refused.code, Some(125), "{}", refused.stderr);
    assert!(refused.stderr.contains("allow-list hides"), "{}", refused.stderr);
}

/// What the global git configuration includes is readable when the including file is the
/// user's own at the top of the home (`~/.gitconfig` as a plain file); what a file in a
/// dotfiles checkout — which a run may once have written — includes outside its own entry is
/// not (it could name any secret).
#[test]
fn git_includes_are_granted_only_from_a_file_no_run_can_have_written() {
    require_sandbox!(1);
    let home = Home::plant();
    let work = scratch();
    std::fs::remove_file(home.path().join(".gitconfig")).unwrap();
    home.write(".gitconfig", "[include]\n\tpath = ~/.gitconfig-work\n");
    home.write(".gitconfig-work", "[user]\n\temail = work@example.org\n");
    let script = format!(
        "git config --global user.email; {}",
        read_script(home.path(), &[".gitconfig-work"])
    );
    let run = home.exec(User::Root, work.path(), &[], &script);
    assert!(run.stdout.contains("work@example.org"), "{}{}", run.stdout, run.stderr);
    // A checkout the user once worked in names a secret.
    std::fs::remove_file(home.path().join(".gitconfig")).unwrap();
    home.write("dotfiles/gitconfig", "[include]\n\tpath = ~/.tsh/keys/u\n");
    symlink(home.path().join("dotfiles/gitconfig"), home.path().join(".gitconfig")).unwrap();
    let run = home.exec(User::Root, work.path(), &[], &read_script(home.path(), &[".tsh/keys/u"]));
    assert!(!run.stdout.contains("SECRET"), "{}", run.stdout);
}

/// Writing directly, a file the user's global git configuration includes stays read-only in a
/// workspace that holds it (a dotfiles checkout): a `core.fsmonitor` appended there would run
/// at the user's next `git status`. Its neighbours stay writable.
#[test]
fn an_included_git_config_in_the_workspace_is_read_only_when_writing_directly() {
    require_sandbox!(1);
    skip_unless!(features().path_rules(), "protected paths need the mount view");
    let home = Home::plant();
    std::fs::remove_file(home.path().join(".gitconfig")).unwrap();
    home.write(".gitconfig", "[include]\n\tpath = ~/dotfiles/git/user.inc\n");
    let inc = home.write("dotfiles/git/user.inc", "[user]\n\temail = a@b\n");
    let ws = home.path().join("dotfiles");
    let script = "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> git/user.inc; \
                  echo ok > git/other && echo neighbour-written";
    let run = home.exec(User::Root, &ws, &["--writes", "direct"], script);
    assert!(run.stdout.contains("neighbour-written"), "{}{}", run.stdout, run.stderr);
    assert_eq!(std::fs::read_to_string(&inc).unwrap(), "[user]\n\temail = a@b\n", "{}", run.stderr);
}
