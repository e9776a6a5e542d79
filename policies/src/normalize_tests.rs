use super::*;
use crate::reading::read_command;
use pretty_assertions::assert_eq;

fn argv(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn wrappers_paths_and_git_global_options_normalize_away() {
    for (spelling, normalized) in [
        ("git push", "git push"),
        ("/usr/bin/git push", "git push"),
        ("./git push", "git push"),
        ("/opt/x/bin/git push origin", "git push origin"),
        ("git -C . push", "git push"),
        ("git -c user.name=x push", "git push"),
        ("git --git-dir=.git push", "git push"),
        ("git --git-dir .git --work-tree . push", "git push"),
        ("git --no-pager -P push", "git push"),
        ("env git push", "git push"),
        ("env -i FOO=1 BAR=2 git push", "git push"),
        ("env -u HOME git push", "git push"),
        ("/usr/bin/env -- git push", "git push"),
        ("command git push", "git push"),
        ("command -p git push", "git push"),
        ("builtin git push", "git push"),
        ("exec -a x git push", "git push"),
        ("nice git push", "git push"),
        ("nice -n 5 git push", "git push"),
        ("nice -n5 git push", "git push"),
        ("nohup git push", "git push"),
        ("timeout 5 git push", "git push"),
        ("timeout -s KILL -k 1 5s git push", "git push"),
        ("timeout --signal=KILL 5 git push", "git push"),
        ("stdbuf -oL git push", "git push"),
        ("stdbuf -o L git push", "git push"),
        ("time git push", "git push"),
        ("time -p git push", "git push"),
        ("sudo -u root git push", "git push"),
        ("sudo VAR=1 git push", "git push"),
        ("setsid -f git push", "git push"),
        ("xargs -n 1 git push", "git push \u{0}"),
        ("env nice timeout 5 command git -C x push", "git push"),
        ("rm -rf x", "rm -rf x"),
        ("env", "env"),
        ("timeout 5", "timeout 5"),
        ("git", "git"),
        ("git -C", "git"),
    ] {
        assert_eq!(read_command(&argv(spelling)), Ok(argv(normalized)), "{spelling}");
    }
}

#[test]
fn shells_wrappers_and_interpreters_run_arbitrary_code() {
    for program in [
        "sh",
        "/bin/bash",
        "zsh",
        "env",
        "xargs",
        "python3",
        "python3.12",
        "node",
        "perl",
        "sudo",
        "awk",
    ] {
        assert!(runs_arbitrary_code(program), "{program}");
    }
    for program in ["git", "cargo", "ls", "/usr/bin/rm", "make-thing"] {
        assert!(!runs_arbitrary_code(program), "{program}");
    }
}
