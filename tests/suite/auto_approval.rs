//! What runs without a question is confined: known-safe commands run read-only with no
//! network whatever the sandbox mode, only when their programs are system files and their
//! scripts leave later words alone; rules that forbid or ask hold for every spelling of a
//! command, and a command cordon cannot read is asked about or refused.

use std::path::Path;
use std::process::Command;

use super::exec::{env, exec};
use super::util::*;

/// An executable `path` that writes `marker` when it runs.
fn marker_program(path: &Path, marker: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\necho ran > {}\n", marker.display())).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

const UNTRUSTED_FULL_ACCESS: [&str; 4] = ["-a", "untrusted", "-s", "danger-full-access"];

fn untrusted_full_access(home: &Path, cwd: &Path, command: &[&str]) -> Run {
    let mut args = UNTRUSTED_FULL_ACCESS.to_vec();
    args.push("--");
    args.extend_from_slice(command);
    exec(home, cwd, &args)
}

#[test]
fn known_safe_scripts_that_change_what_later_words_run_are_asked_about() {
    require_sandbox!(1);
    let e = env();
    let marker = e.outside.path().join("ran");
    marker_program(&e.work.path().join("tools/ls"), &marker);
    // A git directory shipped as plain files, whose fsmonitor would run on `git status`.
    let vendored = e.work.path().join("vendor/lib");
    marker_program(&e.work.path().join("hook.sh"), &marker);
    for dir in ["objects", "refs"] {
        std::fs::create_dir_all(vendored.join(dir)).unwrap();
    }
    std::fs::write(vendored.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        vendored.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tworktree = .\n\tfsmonitor = {}\n",
            e.work.path().join("hook.sh").display()
        ),
    )
    .unwrap();
    for script in ["printf -v PATH tools && ls", "cd vendor/lib && git status", "PATH=tools ls"] {
        let run = untrusted_full_access(e.home.path(), e.work.path(), &["bash", "-c", script]);
        assert_eq!(run.code, Some(125), "{script}: {}", run.stderr);
        assert!(run.stderr.contains("approval needed"), "{script}: {}", run.stderr);
        assert!(!marker.exists(), "{script} ran workspace code");
    }
}

#[test]
fn a_known_safe_name_found_through_a_path_the_workspace_controls_is_asked_about() {
    require_sandbox!(1);
    let e = env();
    let marker = e.outside.path().join("ran");
    marker_program(&e.work.path().join("tools/ls"), &marker);
    let path = format!("{}:/usr/bin:/bin", e.work.path().join("tools").display());
    let run: Run = without_terminal(CORDON)
        .args(["exec"])
        .args(UNTRUSTED_FULL_ACCESS)
        .args(["--", "ls"])
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.home.path())
        .env("PATH", &path)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(!marker.exists(), "the workspace's ls ran");
}

#[test]
fn known_safe_commands_run_read_only_without_network_even_under_full_access() {
    require_sandbox!(1);
    let e = env();
    let marker = e.outside.path().join("ran");
    let git = |args: &[&str]| {
        let status = Command::new("git").args(args).current_dir(e.work.path()).status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(e.work.path().join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"]);
    std::fs::write(e.work.path().join("a.txt"), "two\n").unwrap();
    // Code the repository's own configuration runs on `git status` and `git diff`.
    marker_program(&e.outside.path().join("hook.sh"), &marker);
    let hook = e.outside.path().join("hook.sh");
    git(&["config", "core.fsmonitor", hook.to_str().unwrap()]);
    git(&["config", "diff.external", hook.to_str().unwrap()]);
    for command in [&["git", "status"][..], &["git", "diff"]] {
        // Run without a question, read-only: the hook's write fails (and the retry without
        // the sandbox that a denial offers finds nobody to approve it).
        let run = untrusted_full_access(e.home.path(), e.work.path(), command);
        assert!(!marker.exists(), "{command:?}: the repository's code wrote: {}", run.stderr);
    }
    // A known-safe read still runs, without a question, and sees the workspace.
    let run = untrusted_full_access(e.home.path(), e.work.path(), &["ls"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("a.txt"), "{}", run.stdout);
    // Read-only whatever the mode: a known-safe `cat` of a hidden file sees nothing.
    let hidden = e.home.path().join(".ssh");
    std::fs::create_dir_all(&hidden).unwrap();
    std::fs::write(hidden.join("id_ed25519"), "SECRET\n").unwrap();
    let run: Run = without_terminal(CORDON)
        .arg("exec")
        .args(UNTRUSTED_FULL_ACCESS)
        .args(["--json", "--", "cat"])
        .arg(hidden.join("id_ed25519"))
        .current_dir(e.work.path())
        .env("CORDON_HOME", e.outside.path())
        .env("HOME", e.home.path())
        .output()
        .unwrap()
        .into();
    assert!(!run.stdout.contains("SECRET"), "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["assessment"]["decision"]["sandbox"], "read_only", "{v}");
    assert_eq!(v["attempts"][0]["sandbox"], SANDBOX, "{v}");
}

#[test]
fn forbidden_and_prompt_rules_hold_for_spellings_that_hide_the_program() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n\n\
         [[rule]]\nprefix = [\"touch\"]\ndecision = \"prompt\"\n",
    )
    .unwrap();
    let victim = e.work.path().join("victim");
    let created = e.work.path().join("t");
    for spelling in [
        &["env", "sh", "-c", "rm -f victim"][..],
        &["nice", "bash", "-c", "rm -f victim"],
        &["bash", "-c", "eval 'rm -f victim'"],
        &["bash", "-c", "trap 'rm -f victim' EXIT"],
        &["env", "-S", "rm -f", "victim"],
        &["busybox", "rm", "-f", "victim"],
        &["bash", "-c", "{r,}m -f victim"],
        &["bash", "-c", "/bin/r[m] -f victim"],
        &["bash", "-c", "x=r; ${x}m -f victim"],
        &["bash", "-c", "$(printf r)m -f victim"],
        &["nice", "nice", "nice", "nice", "nice", "nice", "nice", "nice", "nice", "rm", "victim"],
        &["env", "sh", "-c", "touch t"],
        &["python3", "-c", "import os; os.remove('victim')"],
    ] {
        std::fs::write(&victim, "x").unwrap();
        for approval in ["on-request", "on-failure", "never"] {
            let mut args = vec!["-a", approval, "--"];
            args.extend_from_slice(spelling);
            let run = exec(e.home.path(), e.work.path(), &args);
            assert_eq!(run.code, Some(125), "{spelling:?} under {approval}: {}", run.stderr);
            assert!(victim.exists(), "{spelling:?} under {approval} deleted the file");
            assert!(!created.exists(), "{spelling:?} under {approval} created the file");
        }
    }
    // What cordon reads still runs beside the rules.
    let run =
        exec(e.home.path(), e.work.path(), &["-a", "on-request", "--", "bash", "-c", "ls | wc -l"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// bash evaluates a variable's value as arithmetic or as a name in many places, and a value
/// holding a subscript with a command substitution (`b[$(rm …)]`) then runs the command. The
/// script below builds that value from pieces that name no program, so only the place of the
/// evaluation shows that the script may run anything.
#[test]
fn forbidden_rules_hold_where_bash_evaluates_a_value_the_script_built() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n",
    )
    .unwrap();
    let victim = e.work.path().join("victim");
    let build = r#"o=$'\x5b'; c=$'\x5d'; a=r; b=m; y="\$($a$b -f victim)"; v=b$o$y$c; "#;
    for evaluation in [
        "RANDOM=v",
        "read OPTIND <<< v",
        "echo ${v:v}",
        "z=(1); echo ${z[v]}",
        "echo ${!v}",
        "echo $[v]",
        "z=([v]=1)",
        "declare -i n; n=v",
        "declare -n r=\"$v\"; r=1",
        "read \"$v\" <<< 1",
        "[ -v \"$v\" ]",
        "unset \"$v\"",
    ] {
        let script = format!("{build}{evaluation}");
        for approval in ["on-request", "on-failure", "never"] {
            std::fs::write(&victim, "x").unwrap();
            let run =
                exec(e.home.path(), e.work.path(), &["-a", approval, "--", "bash", "-c", &script]);
            assert!(victim.exists(), "{evaluation:?} under {approval} deleted the file");
            assert_eq!(run.code, Some(125), "{evaluation:?} under {approval}: {}", run.stderr);
        }
    }
}

/// Programs that run another program without being a wrapper cordon unwrapped: the dynamic
/// loader, a program named in a variable git reads (set by `env` or by a script's `read`), and
/// options of programs that run commands in the spellings getopt also takes (`-oProxyCommand`,
/// an abbreviated `--to-command`).
#[test]
fn forbidden_rules_hold_for_loaders_program_variables_and_option_spellings() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n",
    )
    .unwrap();
    let victim = e.work.path().join("victim");
    std::fs::write(e.work.path().join("a"), "a").unwrap();
    let tar = Command::new("tar").args(["-cf", "a.tar", "a"]).current_dir(e.work.path()).status();
    assert!(tar.unwrap().success());
    let loader = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
        .into_iter()
        .find(|path| Path::new(path).exists());
    let mut spellings = vec![
        vec!["env", "GIT_SSH_COMMAND=rm -f victim", "git", "ls-remote", "ssh://h/r"],
        vec![
            "bash",
            "-c",
            "a=r; b=m; read GIT_SSH_COMMAND <<< \"$a$b -f victim\"; export GIT_SSH_COMMAND; \
             git ls-remote ssh://h/r",
        ],
        vec!["ssh", "-oProxyCommand=rm -f victim", "h"],
        vec!["tar", "-xf", "a.tar", "--to-comm=rm -f victim"],
    ];
    match loader {
        Some(loader) => spellings.push(vec![loader, "/bin/rm", "-f", "victim"]),
        None => eprintln!("no dynamic loader at a known path: its case is not tried"),
    }
    for spelling in spellings {
        for approval in ["on-request", "on-failure", "never"] {
            std::fs::write(&victim, "x").unwrap();
            let mut args = vec!["-a", approval, "--"];
            args.extend_from_slice(&spelling);
            let run = exec(e.home.path(), e.work.path(), &args);
            assert!(victim.exists(), "{spelling:?} under {approval} deleted the file");
            assert_eq!(run.code, Some(125), "{spelling:?} under {approval}: {}", run.stderr);
        }
    }
}

/// sed and awk run commands in spellings a simple reading misses (`;` inside a regex, a
/// clustered or abbreviated option, an address flag), and a shell or awk runs a script cordon
/// never sees when it comes from standard input under a file's name, a process substitution or
/// a computed word.
#[test]
fn forbidden_rules_hold_for_sed_awk_spellings_and_scripts_from_streams() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n",
    )
    .unwrap();
    std::fs::write(e.work.path().join("in.txt"), "x;y\n").unwrap();
    let victim = e.work.path().join("victim");
    for spelling in [
        &["sed", "-n", "s/x;y/rm -f victim/ep", "in.txt"][..],
        &["sed", "--expr=s/^.*$/rm -f victim/e", "in.txt"],
        &["sed", "/x/Ie rm -f victim", "in.txt"],
        &["bash", "-c", "a=r; b=m; bash /dev/stdin <<< \"$a$b -f victim\""],
        &["bash", "-c", "a=r; b=m; bash <(echo \"$a$b -f victim\")"],
        &["bash", "-c", "a=r; b=m; awk \"BEGIN{system(\\\"$a$b -f victim\\\")}\""],
    ] {
        for approval in ["on-request", "on-failure", "never"] {
            std::fs::write(&victim, "x").unwrap();
            let mut args = vec!["-a", approval, "--"];
            args.extend_from_slice(spelling);
            let run = exec(e.home.path(), e.work.path(), &args);
            assert!(victim.exists(), "{spelling:?} under {approval} deleted the file");
            assert_eq!(run.code, Some(125), "{spelling:?} under {approval}: {}", run.stderr);
        }
    }
    // A sed that only prints is still known-safe.
    let run =
        exec(e.home.path(), e.work.path(), &["-a", "untrusted", "--", "sed", "-n", "1p", "in.txt"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// git runs a command given in an abbreviated option (`git rebase --ex=CMD`: git's option
/// parser takes any unambiguous prefix) and in an `ext::` URL (allowed here by the
/// repository's own configuration, which a sandboxed command can write).
#[test]
fn forbidden_rules_hold_for_git_option_abbreviations_and_ext_urls() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.email=a@b", "-c", "user.name=a"])
            .args(args)
            .current_dir(e.work.path())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&["config", "protocol.ext.allow", "always"]);
    let victim = e.work.path().join("victim");
    for spelling in [
        &[
            "git",
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "rebase",
            "--ex=rm -f victim",
            "HEAD~1",
        ][..],
        &["git", "ls-remote", "ext::rm -f victim"],
    ] {
        for approval in ["on-request", "on-failure", "never"] {
            std::fs::write(&victim, "x").unwrap();
            let mut args = vec!["-a", approval, "--"];
            args.extend_from_slice(spelling);
            let run = exec(e.home.path(), e.work.path(), &args);
            assert!(victim.exists(), "{spelling:?} under {approval} deleted the file");
            assert_eq!(run.code, Some(125), "{spelling:?} under {approval}: {}", run.stderr);
        }
    }
}

/// Programs that run a shell command given on their command line or standard input in their
/// own language: node's `data:` import, sqlite3's `.shell`, vim's `+!cmd`, tclsh reading its
/// script from a pipe. Each is tried where the program is installed.
#[test]
fn forbidden_rules_hold_for_commands_given_to_other_interpreters() {
    require_sandbox!(1);
    let e = env();
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n",
    )
    .unwrap();
    std::fs::write(e.work.path().join("a.js"), "").unwrap();
    let victim = e.work.path().join("victim");
    let import =
        r#"data:text/javascript,import cp from "node:child_process"; cp.execSync("rm -f victim")"#;
    let cases: [&[&str]; 4] = [
        &["node", "--import", import, "a.js"],
        &["sqlite3", ":memory:", ".shell rm -f victim"],
        &["vim", "-N", "-u", "NONE", "-i", "NONE", "+silent !rm -f victim", "+qa!"],
        &["bash", "-c", "echo 'exec rm -f victim' | tclsh"],
    ];
    for spelling in cases {
        let program = if spelling[0] == "bash" { "tclsh" } else { spelling[0] };
        let installed = std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()));
        if !installed {
            eprintln!("{program} is not installed: {spelling:?} is not tried");
            continue;
        }
        for approval in ["on-request", "on-failure", "never"] {
            std::fs::write(&victim, "x").unwrap();
            let mut args = vec!["-a", approval, "--"];
            args.extend_from_slice(spelling);
            let run = exec(e.home.path(), e.work.path(), &args);
            assert!(victim.exists(), "{spelling:?} under {approval} deleted the file");
            assert_eq!(run.code, Some(125), "{spelling:?} under {approval}: {}", run.stderr);
        }
    }
}

#[test]
fn an_allowed_command_beside_a_known_safe_one_does_not_take_it_out_of_its_read_only_run() {
    require_sandbox!(1);
    let e = env();
    let marker = e.outside.path().join("ran");
    marker_program(&e.outside.path().join("hook.sh"), &marker);
    let git = |args: &[&str]| {
        let status = Command::new("git").args(args).current_dir(e.work.path()).status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "core.fsmonitor", e.outside.path().join("hook.sh").to_str().unwrap()]);
    // What "always allow" writes for `git branch`.
    std::fs::write(
        e.home.path().join("rules.toml"),
        "[[rule]]\nprefix = [\"git\", \"branch\"]\ndecision = \"allow\"\n",
    )
    .unwrap();
    let run = untrusted_full_access(
        e.home.path(),
        e.work.path(),
        &["bash", "-lc", "git branch && git status"],
    );
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(!marker.exists(), "the repository's fsmonitor ran unsandboxed: {}", run.stderr);
}

/// An ordinary user's own directories first on PATH (`~/.local/bin`, which Debian's and Ubuntu's
/// `.profile` put first, existing or not; `~/.cargo/bin`) keep the known-safe list for the names
/// they do not hold; a name they do hold is asked about, and the question says why.
#[test]
fn known_safe_holds_with_the_users_own_directories_first_on_path() {
    require_sandbox!(1);
    for user in USERS {
        let e = env();
        let home = e.home.path();
        let cargo_bin = home.join(".cargo/bin");
        std::fs::create_dir_all(&cargo_bin).unwrap();
        let marker = e.outside.path().join("ran");
        marker_program(&cargo_bin.join("cat"), &marker);
        chown_nobody(home);
        chown_nobody(e.work.path());
        chown_nobody(e.outside.path());
        let path =
            format!("{}:{}:/usr/bin:/bin", home.join(".local/bin").display(), cargo_bin.display());
        let run_as = |command: &[&str]| -> Run {
            command_as(user, cordon_for(user))
                .args(["policy", "check", "-a", "untrusted", "--"])
                .args(command)
                .current_dir(e.work.path())
                .env("HOME", home)
                .env("CORDON_HOME", home.join(".cordon"))
                .env("PATH", &path)
                .output()
                .unwrap()
                .into()
        };
        let ls = run_as(&["ls"]);
        assert!(ls.stdout.contains("\"read_only\""), "{user:?} ls: {}", ls.stdout);
        let cat = run_as(&["cat", "x"]);
        assert!(cat.stdout.contains("\"ask\""), "{user:?} cat: {}", cat.stdout);
        assert!(cat.stdout.contains("known-safe list does not apply"), "{user:?}: {}", cat.stdout);
        assert!(!marker.exists());
    }
}
