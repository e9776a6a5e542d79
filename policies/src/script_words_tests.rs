use super::*;
use pretty_assertions::assert_eq;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn words_of(command: &[&str]) -> Vec<String> {
    script_words(&argv(command)).unwrap_or_default()
}

#[test]
fn every_spelling_of_rm_yields_rm() {
    let spellings = [
        "rm -f x",
        "\\rm x",
        "r\\\nm x",
        "\"rm\" x",
        "'rm' x",
        "r''m x",
        "r\"\"m x",
        "/bin/rm x",
        "/usr/bin/rm x",
        "./rm",
        "$(rm x)",
        "`rm x`",
        "echo \"$(rm x)\"",
        "x=1 rm",
        "rm 2>&1",
        "rm #",
        "rm;ls",
        "ls|rm",
        "ls&&rm",
        "(rm)",
        "{ rm; }",
        "r$'m' x",
        "$'\\x72\\x6d' x",
        "$'\\162\\155' x",
        "$'\\u0072m' x",
        "$\"rm\" x",
        "r${x}m",
        "r$(true)m",
        "r``m",
        "r$@m",
        "echo {rm,x}",
        "if true; then rm x; fi",
        "f() { rm x; }; f",
        "sh -c 'rm x'",
        "bash -c \"sh -c 'r\\m x'\"",
        "bash -c \"bash -c \\$'\\\\x72m'\"",
        "exec rm",
        "sudo rm",
        "xargs rm <f",
        "ls\n\nrm",
        "ls\t-l;\trm",
    ];
    let missing: Vec<&str> = spellings
        .iter()
        .copied()
        .filter(|s| !words_of(&["bash", "-lc", s]).contains(&"rm".to_owned()))
        .collect();
    assert_eq!(missing, Vec::<&str>::new());
}

#[test]
fn every_spelling_of_a_shell_call_with_a_script_is_read() {
    let calls: [&[&str]; 25] = [
        &["bash", "-c", "rm"],
        &["bash", "-lc", "rm"],
        &["bash", "-ec", "rm"],
        &["bash", "-xec", "rm"],
        &["bash", "-l", "-c", "rm"],
        &["bash", "--login", "-c", "rm"],
        &["bash", "--noprofile", "--norc", "-c", "rm"],
        &["bash", "-c", "--", "rm"],
        &["bash", "-o", "pipefail", "-c", "rm"],
        &["bash", "-c", "rm", "arg0", "arg1"],
        &["/bin/bash", "-c", "rm"],
        &["/usr/local/bin/bash", "-c", "rm"],
        &["./bash", "-c", "rm"],
        &["sh", "-c", "rm"],
        &["dash", "-c", "rm"],
        &["zsh", "-lc", "rm"],
        &["ksh", "-c", "rm"],
        &["ksh93", "-c", "rm"],
        &["mksh", "-c", "rm"],
        &["ash", "-c", "rm"],
        &["busybox", "sh", "-c", "rm"],
        &["/bin/busybox", "ash", "-c", "rm"],
        &["fish", "--command=rm"],
        &["fish", "--comm", "rm"],
        &["fish", "-C", "rm", "-c", "ls"],
    ];
    for call in calls {
        assert!(is_shell_call(&argv(call)), "{call:?}");
        assert!(words_of(call).contains(&"rm".to_owned()), "{call:?}: {:?}", words_of(call));
    }
}

#[test]
fn words_are_split_at_shell_syntax_and_include_file_names() {
    assert_eq!(
        script_words(&argv(&["bash", "-lc", "FOO=1 /usr/bin/git push 2>&1 | tee log"])),
        Some(argv(&["-lc", "/usr/bin/git", "1", "2", "FOO", "git", "log", "push", "tee"]))
    );
}

#[test]
fn shells_without_an_inline_script_and_other_programs_have_no_script_words() {
    for command in [
        argv(&["bash"]),
        argv(&["bash", "script.sh"]),
        argv(&["sh", "-s"]),
        argv(&["bash", "-l", "script.sh"]),
        argv(&["busybox", "sh"]),
        argv(&["ls", "-c", "rm"]),
        argv(&["python3", "-c", "import os"]),
        argv(&["busybox", "rm", "-c"]),
        argv(&[]),
    ] {
        assert_eq!(script_words(&command), None, "{command:?}");
    }
}

#[test]
fn shell_calls_are_recognised_with_or_without_a_script() {
    for shell in [
        "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "rbash",
        "/bin/sh", "-bash", "bash-5.2", "ksh93",
    ] {
        assert!(is_shell_call(&argv(&[shell])), "{shell}");
        assert!(is_shell_call(&argv(&[shell, "script.sh"])), "{shell}");
    }
    assert!(is_shell_call(&argv(&["busybox", "sh"])));
    assert!(is_shell_call(&argv(&["toybox", "sh", "-c", "x"])));
    for not_a_shell in [
        argv(&["ls"]),
        argv(&["bashful"]),
        argv(&["shx"]),
        argv(&["busybox", "rm"]),
        argv(&["busybox"]),
        argv(&["python3", "-c", "x"]),
        argv(&[]),
    ] {
        assert!(!is_shell_call(&not_a_shell), "{not_a_shell:?}");
    }
}

#[test]
fn hostile_input_ends_quickly() {
    let deep = format!("{}rm{}", "$(".repeat(10_000), ")".repeat(10_000));
    let quotes = "'\"\\$'`".repeat(10_000);
    for script in [deep.as_str(), quotes.as_str(), "$'\\", "$'\\x", "\\", "'", "\"\\", "${"] {
        let _ = script_words(&argv(&["bash", "-c", script]));
    }
    assert!(words_of(&["bash", "-c", &deep]).contains(&"rm".to_owned()));
}
