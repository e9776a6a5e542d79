//! The write gate's reading of git configuration, checked against git itself: for configs
//! built from the spellings git accepts (keys on the section's line, any case, the old
//! `[section.sub]` form, continued and quoted values, comments after values, bare keys), every
//! key git reports that is not plain data must make the gate hold the file. Seeded, so a
//! failure names a config that can be rerun by hand.

use std::process::{Command, Stdio};

use super::util::*;
use cordon_policies::{
    GitKey, git_config_gained_code, git_config_gained_known_code, git_config_may_run_code,
    git_config_shaped, git_key_with_value,
};

/// A small deterministic generator (xorshift64*): the cases are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let index = usize::try_from(self.next() % items.len() as u64).unwrap();
        items[index]
    }
}

const HEADERS: &[&str] = &[
    "[core]",
    "[Core]",
    " [CORE] ",
    "[core \"x\"]",
    "[core.sub]",
    "[user]",
    "[alias]",
    "[include]",
    "[includeIf \"gitdir:/\"]",
    "[remote \"origin\"]",
    "[url \"ext::sh -c x\"]",
    "[diff \"tool\"]",
    "[core] # a comment",
    "[core]\t",
    "[remote \"a]b\"]",
    "[includeIf\t\"gitdir:/\"]",
    "[Section.Sub]",
    "[hook \"pre\"]",
    "[core]fsmonitor=x",
];

const KEYS: &[&str] = &[
    "hooksPath",
    "hookspath",
    "HOOKSPATH",
    "fsmonitor",
    "editor",
    "pager",
    "name",
    "email",
    "url",
    "path",
    "autocrlf",
    "sshCommand",
    "pushurl",
    "insteadOf",
    "textconv",
    "bare",
    "command",
    "event",
];

const VALUES: &[&str] = &[
    " = x",
    "=x",
    " = \"x y\"",
    " = x \\\n  y",
    " = \\\nsh -c x",
    " = x # comment",
    " = x ; comment",
    "",
    " = \"a\\\"b\"",
    " = ext::sh -c x",
    "\t=\ttrue",
    " = \"x\" # \"",
    " = \"unclosed",
    " = a \\\n[foo]",
    " # a comment after a bare key",
];

/// One config: a few lines, each a header (sometimes with a key on its line), a key, a
/// comment or a blank line.
fn config(rng: &mut Rng) -> String {
    let mut text = String::new();
    // A byte order mark, which git skips at the start only.
    if rng.next() % 8 == 0 {
        text.push('\u{feff}');
    }
    // A key before any section, which git reads too.
    if rng.next() % 4 == 0 {
        text.push_str("x = 1\n");
    }
    let lines = 1 + rng.next() % 6;
    for _ in 0..lines {
        match rng.next() % 6 {
            0 | 1 => {
                text.push_str(rng.pick(HEADERS));
                if rng.next() % 3 == 0 {
                    text.push(' ');
                    text.push_str(rng.pick(KEYS));
                    text.push_str(rng.pick(VALUES));
                }
            }
            2..=4 => {
                text.push_str(if rng.next() % 2 == 0 { "\t" } else { "" });
                text.push_str(rng.pick(KEYS));
                text.push_str(rng.pick(VALUES));
            }
            _ => text.push_str(rng.pick(&["# c", "; c", "", "  "])),
        }
        text.push('\n');
    }
    // Lines ended the Windows way, which git reads as plain ones.
    if rng.next() % 8 == 0 {
        text = text.replace('\n', "\r\n");
    }
    text
}

/// The entries git reads from `text` (`key`, value), or `None` when git refuses the file
/// (then no git command in that repository runs at all).
fn git_reads(dir: &std::path::Path, text: &str) -> Option<Vec<(String, Option<String>)>> {
    let file = dir.join("config");
    std::fs::write(&file, text).unwrap();
    let out = Command::new("git")
        .args(["config", "--file"])
        .arg(&file)
        .args(["--null", "--list"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    let entries = out
        .stdout
        .split(|&byte| byte == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            match entry.split_once('\n') {
                Some((key, value)) => (key.to_owned(), Some(value.to_owned())),
                None => (entry.into_owned(), None),
            }
        })
        .collect();
    Some(entries)
}

#[test]
fn every_key_git_reads_that_is_not_plain_data_makes_the_gate_hold_the_config() {
    let have_git = Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success());
    skip_unless!(have_git, "git is not installed");
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x00c0_7d0e_5eed_0001);
    let (mut refused_by_git, mut with_code, mut plain) = (0, 0, 0);
    let mut missed = Vec::new();
    for _ in 0..800 {
        let text = config(&mut rng);
        let Some(entries) = git_reads(dir.path(), &text) else {
            refused_by_git += 1;
            continue;
        };
        let code: Vec<&(String, Option<String>)> = entries
            .iter()
            .filter(|(key, value)| git_key_with_value(key, value.as_deref()) != GitKey::Inert)
            .collect();
        if code.is_empty() {
            plain += 1;
            continue;
        }
        with_code += 1;
        let held = git_config_may_run_code(&text) && git_config_gained_code("", &text);
        if !held {
            missed.push(format!("as a repository's config: {text:?} — git reads {code:?}"));
        }
        // Any other file of this text, which git reads when something includes it: judged
        // when it gained a key git knows to run code.
        let known = code.iter().any(|(key, value)| {
            matches!(git_key_with_value(key, value.as_deref()), GitKey::Code(_))
        });
        if known && !(git_config_shaped(&text) && git_config_gained_known_code("", &text)) {
            missed.push(format!("as an included file: {text:?} — git reads {code:?}"));
        }
    }
    eprintln!("{with_code} configs with code, {plain} plain, {refused_by_git} refused by git");
    // Each kind occurs, or the test proves nothing.
    assert!(with_code > 50 && plain > 10 && refused_by_git > 0, "{with_code}/{plain}");
    assert!(
        missed.is_empty(),
        "the gate passes configs git runs code from:\n{}",
        missed.join("\n")
    );
}
