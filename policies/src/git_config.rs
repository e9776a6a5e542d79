//! Whether a git config file could make git run something or read something else: judged
//! against the allow-list of keys known to be plain data (the same one `git -c` is read with), and
//! refused as soon as a line is not in the plain form git itself writes (a value continued on the
//! next line, a key on a section's line, an `include`): git's own parser is more lenient than
//! this one, so whatever this one cannot read for certain counts as running code. Every judgement
//! is also made on the entries git itself would read ([`git_config_entries`]), and either
//! reading finding code is enough.

use crate::git_keys::{GitKey, git_key_with_value};
use crate::git_parse::{Entry as GitConfigEntry, git_config_entries};

/// Whether `text`, a git dir's `config`, holds anything but the allowed keys in their plain
/// form: read line by line against the plain forms git writes, and read as git reads it
/// ([`git_config_entries`]); either finding code is enough.
pub fn git_config_may_run_code(text: &str) -> bool {
    plain_lines_may_run_code(text) || gained_by_git(&[], text, not_inert)
}

/// The line-by-line reading of [`git_config_may_run_code`]: any line not in a plain form
/// counts as code.
fn plain_lines_may_run_code(text: &str) -> bool {
    let mut section: Option<(String, Option<String>)> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            match parse_header(header) {
                Some(parsed) => section = Some(parsed),
                None => return true,
            }
            continue;
        }
        let Some((name, subsection)) = &section else { return true };
        let key: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        let rest = line[key.len()..].trim_start();
        let plain = !key.is_empty()
            && key.starts_with(|c: char| c.is_ascii_alphabetic())
            && (rest.is_empty() || rest.starts_with('='))
            && !line.ends_with('\\');
        if !plain {
            return true;
        }
        let full = match subsection {
            Some(subsection) => format!("{name}.{subsection}.{key}"),
            None => format!("{name}.{key}"),
        };
        let value = rest.strip_prefix('=').map(str::trim);
        if git_key_with_value(&full, value) != GitKey::Inert {
            return true;
        }
    }
    false
}

/// Whether `after`, a config that replaced `before` (the same git dir's, read before a run),
/// gained a line that may run code: each line of `after` not in `before` under the same
/// section header is judged with [`git_config_may_run_code`], its header with it. Lines git
/// itself adds while the user works (`git push -u`, `git remote add`, `git config user.email`)
/// pass; a hook program, a pager, an include or any line this cannot read for certain does not.
pub fn git_config_gained_code(before: &str, after: &str) -> bool {
    let before_entries = git_config_entries(before, false).unwrap_or_default();
    gained_lines_may_run_code(before, after) || gained_by_git(&before_entries, after, not_inert)
}

fn not_inert(key: &str, value: Option<&str>) -> bool {
    git_key_with_value(key, value) != GitKey::Inert
}

fn known_code(key: &str, value: Option<&str>) -> bool {
    matches!(git_key_with_value(key, value), GitKey::Code(_))
}

/// Whether `after`, read as git reads it, holds an entry that `judged` flags and that
/// `before` (entries, each matched once) did not hold. A text git refuses holds nothing.
fn gained_by_git(
    before: &[GitConfigEntry],
    after: &str,
    judged: impl Fn(&str, Option<&str>) -> bool,
) -> bool {
    let Some(after) = git_config_entries(after, false) else { return false };
    let mut before: Vec<&GitConfigEntry> = before.iter().collect();
    after.iter().any(|entry| match before.iter().position(|known| *known == entry) {
        Some(index) => {
            before.swap_remove(index);
            false
        }
        None => judged(&entry.0, entry.1.as_deref()),
    })
}

/// The line-by-line reading of [`git_config_gained_code`].
fn gained_lines_may_run_code(before: &str, after: &str) -> bool {
    let known = sectioned_lines(before);
    let mut added = String::new();
    for (header, line) in sectioned_lines(after) {
        if known.contains(&(header, line)) {
            continue;
        }
        // A header is judged as a line of its own too: git takes a key on a header's line
        // (`[core] fsmonitor = …`), which the header's parser refuses.
        if let Some(header) = header.filter(|header| *header != line) {
            added.push_str(header);
            added.push('\n');
        }
        added.push_str(line);
        added.push('\n');
    }
    plain_lines_may_run_code(&added)
}

/// Whether `text` reads as a git configuration: section headers, keys under them, comments and
/// blank lines, and nothing else. Any file of that shape is a configuration git would obey if
/// one it reads included it (by a path, `~user/`, a condition, from any repository): such a file
/// is judged as one wherever it lies, without first finding who includes it.
pub fn git_config_shaped(text: &str) -> bool {
    git_config_entries(text, false).is_some_and(|entries| !entries.is_empty())
}

/// Whether `after`, a file shaped like a git configuration ([`git_config_shaped`]) that
/// replaced `before`, gained a key git knows to run code, include configuration or name a file
/// it writes (the code list of the key allow-list; a key git does not know does nothing, so
/// a TOML or INI file of another tool passes).
pub fn git_config_gained_known_code(before: &str, after: &str) -> bool {
    let before = git_config_entries(before, false).unwrap_or_default();
    gained_by_git(&before, after, known_code)
}

/// The values of every `path` key in an `include` or `includeIf` section of `text`, taken
/// generously: on a line of its own or on the header's line, quoted or not, whatever the
/// section's condition. A file named here is read by git as configuration (when the condition
/// holds), so it is judged as one.
pub fn git_include_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut in_include = false;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name: String = header
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
                .to_ascii_lowercase();
            in_include = name == "include" || name == "includeif";
            // A key may follow the header on its line.
            line = match header.split_once(']') {
                Some((_, rest)) => rest.trim(),
                None => "",
            };
        }
        if !in_include {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if !key.trim().eq_ignore_ascii_case("path") {
            continue;
        }
        let value = value.split([';', '#']).next().unwrap_or_default().trim();
        let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        if !value.is_empty() {
            paths.push(value.replace("\\\\", "\\"));
        }
    }
    paths
}

/// Each line of `text` that is not blank or a comment, trimmed, with the trimmed header of its
/// section (`None` before the first); a header is listed under itself.
fn sectioned_lines(text: &str) -> Vec<(Option<&str>, &str)> {
    let mut header = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            header = Some(line);
        }
        lines.push((header, line));
    }
    lines
}

/// `section]` or `section "name"]`, nothing after it: the section (lowercase) and its name, if
/// it has one. `None` for any other form (`[section.name]`, a key after the bracket, escapes).
fn parse_header(header: &str) -> Option<(String, Option<String>)> {
    let (inside, after) = header.split_once(']')?;
    if !after.trim().is_empty() {
        return None;
    }
    let (name, subsection) = match inside.split_once(' ') {
        Some((name, rest)) => (name, Some(rest.trim())),
        None => (inside, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    let subsection = match subsection {
        Some(quoted) => {
            let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
            if inner.contains(['"', '\\']) {
                return None;
            }
            Some(inner.to_owned())
        }
        None => None,
    };
    Some((name.to_ascii_lowercase(), subsection))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_config_gains_code_only_with_a_line_that_may_run_it() {
        let before = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ../o\n";
        let upstream =
            format!("{before}[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n");
        assert!(!git_config_gained_code(before, before));
        assert!(!git_config_gained_code(before, &upstream));
        assert!(!git_config_gained_code(before, "[core]\n\tbare = false\n"));
        for gained in [
            "[core]\n\tbare = false\n\tfsmonitor = touch x\n[remote \"origin\"]\n\turl = ../o\n",
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ../o\n[include]\n\tpath = /x\n",
            "fsmonitor = x\n[core]\n\tbare = false\n",
            // The same line under another header is another key.
            "[core]\n\tbare = false\n[alias]\n\turl = ../o\n",
            // A key on a header's line, last or before another header.
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ../o\n[core] fsmonitor = x\n",
            "[core] fsmonitor = x\n[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ../o\n",
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ../o\n[include] path = /x\n",
        ] {
            assert!(git_config_gained_code(before, gained), "{gained}");
        }
    }

    #[test]
    fn a_file_is_shaped_like_a_configuration_only_when_every_line_is_one() {
        for text in [
            "[core]\n\tfsmonitor = x\n",
            "# c\n[include] path = x\n",
            "\u{feff}[a \"b\"]\n\tk\n",
            "[alias]\n\tst = status\n",
            // git reads a key before any section, and a value continued on the next line.
            "k = v\n[a]\n",
            "[core]\n\tfsmonitor = a \\\n&& b\n",
        ] {
            assert!(git_config_shaped(text), "{text:?}");
        }
        for text in [
            "",
            "# only comments\n",
            "[link]: https://example.test\n",
            "# Title\n\nSome prose.\n",
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n[dependencies]\nserde = { version = \"1\" }\n",
        ] {
            let shaped = git_config_shaped(text);
            // TOML with plain keys is shaped; what matters is whether it gained code.
            if text.starts_with("[package]") {
                assert!(shaped && !git_config_gained_known_code("", text), "{text:?}");
            } else {
                assert!(!shaped, "{text:?}");
            }
        }
    }

    #[test]
    fn a_shaped_file_gains_code_only_with_a_key_git_runs() {
        assert!(git_config_gained_known_code("", "[core]\n\tfsmonitor = x\n"));
        assert!(git_config_gained_known_code("", "[core] fsmonitor = x\n"));
        assert!(git_config_gained_known_code("", "[include]\n\tpath = ../x\n"));
        assert!(git_config_gained_known_code("", "[alias]\n\tx = !sh\n"));
        assert!(git_config_gained_known_code("", "[Alias]\n\tx = y\n"));
        assert!(git_config_gained_known_code("", "[pager.log]\n\tx = y\n"));
        assert!(!git_config_gained_known_code("", "[tool]\n\tname = x\n"));
        let before = "[alias]\n\tst = status\n";
        assert!(!git_config_gained_known_code(
            before,
            "[alias]\n\tst = status\n[user]\n\tname = u\n"
        ));
        assert!(git_config_gained_known_code(before, "[alias]\n\tst = status\n\tco = checkout\n"));
    }

    #[test]
    fn include_paths_are_found_in_every_spelling() {
        let text = "[include]\n\tpath = ../tools/gitconfig\n[includeIf \"gitdir:~/p/\"]\n\
                    \tpath = \"~/.gitconfig-work\" ; note\n[core]\n\tpath = no\n\
                    [INCLUDE] path = /abs\n[include]\n\tPath=x\n";
        assert_eq!(
            git_include_paths(text),
            vec!["../tools/gitconfig", "~/.gitconfig-work", "/abs", "x"]
        );
    }

    #[test]
    fn a_url_that_names_a_transport_helper_is_code() {
        assert!(git_config_may_run_code("[remote \"o\"]\n\turl = ext::sh -c rm% x\n"));
        assert!(git_config_may_run_code("[url \"ext::sh -c x\"]\n\tinsteadOf = q:\n"));
        assert!(!git_config_may_run_code("[remote \"o\"]\n\turl = https://h/r.git\n"));
    }

    #[test]
    fn what_init_and_clone_write_is_plain_data() {
        let clone = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                     \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://example.test/r.git\n\
                     \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
                     \tmerge = refs/heads/main\n[submodule \"lib\"]\n\turl = ../lib\n\tactive = true\n";
        assert!(!git_config_may_run_code(clone));
        assert!(!git_config_may_run_code(""));
        assert!(!git_config_may_run_code("# a comment\n; another\n"));
    }

    #[test]
    fn anything_that_runs_or_includes_or_cannot_be_read_for_certain_counts() {
        for config in [
            "[core]\n\tfsmonitor = touch x\n",
            "[core]\n\thooksPath = /tmp/h\n",
            "[core]\n\tpager = sh -c x\n",
            "[alias]\n\tst = !sh -c x\n",
            "[include]\n\tpath = /tmp/c\n",
            "[includeIf \"gitdir:/\"]\n\tpath = /tmp/c\n",
            "[filter \"lfs\"]\n\tsmudge = x\n",
            "[submodule \"a\"]\n\tupdate = !sh\n",
            // A working tree elsewhere: a later checkout, reset or clean there writes outside.
            "[core]\n\tworktree = /home/u\n",
            "[core] fsmonitor = x\n",
            "[core]\n\tbare = false \\\nfsmonitor = x\n",
            "[core.x]\n\tbare = false\n",
            "[remote \"a\\\"b\"]\n\turl = x\n",
            "fsmonitor = x\n",
            "[core]\n\t=x\n",
            "[core]\n\tbare\"x\" = 1\n",
        ] {
            assert!(git_config_may_run_code(config), "{config:?}");
        }
    }
}
