use super::*;
use pretty_assertions::assert_eq;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// Checks every case at once so a failure shows the whole table.
fn assert_safety(cases: &[(&[&str], bool)]) {
    let expected: Vec<(Vec<String>, bool)> =
        cases.iter().map(|(words, safe)| (argv(words), *safe)).collect();
    let actual: Vec<(Vec<String>, bool)> =
        expected.iter().map(|(command, _)| (command.clone(), is_known_safe(command))).collect();
    assert_eq!(actual, expected);
}

#[test]
fn design_list_commands_are_safe_with_any_arguments() {
    let mut cases: Vec<(&[&str], bool)> = [
        "ls", "cat", "head", "tail", "wc", "grep", "pwd", "echo", "true", "false", "id", "uname",
        "whoami", "which", "stat", "cut", "tr", "seq", "nl", "rev",
    ]
    .iter()
    .map(|name| (std::slice::from_ref(name), true))
    .collect();
    cases.extend([
        (&["ls", "-la", "/etc"][..], true),
        (&["grep", "-rn", "TODO", "src"][..], true),
        (&["head", "-n", "5", "Cargo.toml"][..], true),
        (&["/usr/bin/cat", "x"][..], true),
        (&["/bin/ls"][..], true),
        (&["uniq", "-c", "in.txt"][..], true),
        (&["date", "+%F"][..], true),
        (&["sort", "-rn", "x"][..], true),
        (&["file", "x"][..], true),
        (&["env"][..], true),
        (&["printf", "%s\\n", "x"][..], true),
    ]);
    assert_safety(&cases);
}

#[test]
fn commands_that_write_or_run_programs_are_not_safe() {
    assert_safety(&[
        (&["rm", "-rf", "x"], false),
        (&["rm", "x"], false),
        (&["sudo", "ls"], false),
        (&["touch", "f"], false),
        (&["xargs", "ls"], false),
        (&["env", "ls"], false),
        (&["env", "FOO=1"], false),
        (&["bash"], false),
        (&["python3", "-c", "print(1)"], false),
        (&["./ls"], false),
        (&["/tmp/ls"], false),
        (&["/usr/local/bin/ls"], false),
        (&[], false),
        (&[""], false),
        (&["uniq", "in.txt", "out.txt"], false),
        (&["uniq", "-", "out.txt"], false),
        (&["uniq", "--", "-in", "-out"], false),
        (&["sort", "-o", "out", "x"], false),
        (&["sort", "-ro", "out", "x"], false),
        (&["sort", "--output=out", "x"], false),
        (&["sort", "--out=out", "x"], false),
        (&["sort", "--compress-program=sh", "x"], false),
        (&["date", "-s", "2020-01-01"], false),
        (&["date", "--set=2020-01-01"], false),
        (&["date", "--se", "2020-01-01"], false),
        (&["file", "-C", "-m", "magic"], false),
        (&["file", "--compile"], false),
        (&["file", "-z", "x.gz"], false),
        (&["file", "--uncompress", "x.gz"], false),
    ]);
}

#[test]
fn find_is_safe_without_exec_delete_or_fprint() {
    assert_safety(&[
        (&["find", ".", "-name", "*.rs", "-type", "f"], true),
        (&["find", ".", "-delete"], false),
        (&["find", ".", "-exec", "rm", "{}", ";"], false),
        (&["find", ".", "-execdir", "rm", "{}", "+"], false),
        (&["find", ".", "-ok", "rm", "{}", ";"], false),
        (&["find", ".", "-okdir", "rm", "{}", ";"], false),
        (&["find", ".", "-fprint", "out"], false),
        (&["find", ".", "-fprint0", "out"], false),
        (&["find", ".", "-fprintf", "out", "%p"], false),
        (&["find", ".", "-fls", "out"], false),
    ]);
}

#[test]
fn sed_is_safe_only_for_print_ranges_with_n() {
    assert_safety(&[
        (&["sed", "-n", "1,5p", "f"], true),
        (&["sed", "-n", "10p"], true),
        (&["sed", "-n", "3,$p", "a", "b"], true),
        (&["sed", "-n", "$p", "f"], true),
        (&["sed", "1,5p", "f"], false),
        (&["sed", "-n", "p", "f"], false),
        (&["sed", "-n", "1,5w out", "f"], false),
        (&["sed", "-n", "1e id", "f"], false),
        (&["sed", "-n", "1,5p", "f", "-i"], false),
        (&["sed", "-i", "s/a/b/", "f"], false),
        (&["sed", "-n"], false),
        (&["sed"], false),
    ]);
}

#[test]
fn rg_is_safe_without_preprocessors_or_decompression() {
    assert_safety(&[
        (&["rg", "-n", "TODO", "src"], true),
        (&["rg", "--pre", "sh", "x"], false),
        (&["rg", "--pre=sh", "x"], false),
        (&["rg", "--pre-glob", "*.pdf", "--pre", "x", "y"], false),
        (&["rg", "-z", "x"], false),
        (&["rg", "-iz", "x"], false),
        (&["rg", "--search-zip", "x"], false),
        (&["rg", "--hostname-bin=sh", "x"], false),
    ]);
}

#[test]
fn git_is_safe_only_for_read_only_subcommands_without_executing_options() {
    assert_safety(&[
        (&["git", "status"], true),
        (&["git", "status", "--porcelain"], true),
        (&["git", "log", "--oneline", "-n", "5"], true),
        (&["git", "log", "-p", "--", "src"], true),
        (&["git", "diff", "HEAD~1"], true),
        (&["git", "show", "HEAD:README.md"], true),
        (&["/usr/bin/git", "status"], true),
        (&["git", "--no-pager", "diff", "--stat"], true),
        (&["git", "-P", "log"], true),
        (&["git", "--no-pager"], false),
        (&["git", "--no-pager", "-c", "x=y", "log"], false),
        (&["git", "--no-pager", "push"], false),
        (&["git"], false),
        (&["git", "push"], false),
        (&["git", "commit", "-m", "x"], false),
        (&["git", "checkout", "."], false),
        (&["git", "-c", "core.pager=sh", "log"], false),
        (&["git", "-C", "dir", "status"], false),
        (&["git", "--git-dir=x", "status"], false),
        (&["git", "-p", "log"], false),
        (&["git", "--paginate", "log"], false),
        (&["git", "log", "--output=x"], false),
        (&["git", "log", "--out=x"], false),
        (&["git", "diff", "--ext-diff"], false),
        (&["git", "diff", "--ext"], false),
        (&["git", "show", "--textconv", "HEAD:x"], false),
        (&["git", "log", "--exec=x"], false),
        (&["git", "log", "--upload-pack=x"], false),
        (&["git", "log", "-c", "x"], false),
        (&["git", "log", "-o", "x"], false),
        (&["git", "log", "--config-env=x=y"], false),
    ]);
}

#[test]
fn shell_scripts_are_safe_only_when_plain_and_every_command_is_safe() {
    assert_safety(&[
        (&["bash", "-lc", "ls && pwd"], true),
        (&["bash", "-c", "git status; git log -n 1 | cat"], true),
        // `cd` and `printf -v` change what later words of the script name.
        (&["/bin/bash", "-lc", "cd src && grep -rn 'fn main' ."], false),
        (&["bash", "-c", "printf -v PATH tools && ls"], false),
        (&["bash", "-c", "printf -vPATH tools && ls"], false),
        (&["sh", "-c", "ls || echo \"no files\""], true),
        (&["zsh", "-lc", "bash -c 'ls | wc -l'"], true),
        (&["bash", "-lc", "ls > f"], false),
        (&["bash", "-lc", "echo $(id)"], false),
        (&["bash", "-lc", "echo $HOME"], false),
        (&["bash", "-lc", "ls *.rs"], false),
        (&["bash", "-lc", "ls && rm -rf x"], false),
        (&["bash", "-lc", "ls & touch f"], false),
        (&["bash", "-lc", "sudo ls"], false),
        (&["bash", "-lc", ""], false),
        (&["bash", "-lc", "ls", "extra"], false),
        (&["bash", "ls"], false),
        (&["./bash", "-lc", "ls"], false),
    ]);
}

#[test]
fn nested_shell_calls_are_followed_up_to_the_nesting_cap() {
    // Plain quoting allows at most four shells deep: '…' around "…" around a bare word.
    let four_deep = argv(&["bash", "-c", "sh -c 'zsh -c \"bash -c ls\"'"]);
    assert!(is_known_safe(&four_deep));
    assert!(!is_known_safe(&argv(&["bash", "-c", "sh -c 'zsh -c \"bash -c touch\"'"])));
    assert!(is_safe_at_depth(&argv(&["ls"]), MAX_SHELL_NESTING));
    assert!(!is_safe_at_depth(&argv(&["bash", "-c", "ls"]), MAX_SHELL_NESTING));
}

#[test]
fn line_continuations_cannot_smuggle_unsafe_words_into_a_safe_script() {
    // bash deletes a backslash-newline and joins the words around it, so a checker that read it
    // as a blank would see harmless words where bash runs `-exec`, `truncate`, `--output`.
    assert_safety(&[
        (&["bash", "-c", "find . -maxdepth 0 -\\\nexec sh -c 'id > PWNED' ';'"], false),
        (&["bash", "-lc", "tr\\\nuncate -s0 a"], false),
        (&["bash", "-lc", "find . -\\\ndelete"], false),
        (&["bash", "-lc", "git log --\\\noutput=f"], false),
        (&["bash", "-lc", "ls\\\n"], false),
        (&["bash", "-lc", "ls \"\t\" && git 'log' -n 1"], true),
    ]);
}
