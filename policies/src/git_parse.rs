//! git's own reading of a configuration file, step by step as git's config parser reads it:
//! an optional UTF-8 byte order mark; `\r\n` read as `\n`; whitespace and `#`/`;` comments
//! between entries; `[section]`, `[section "subsection"]` (any whitespace before the quote,
//! `\` escaping the next character inside it) and the old `[section.subsection]`; a key starting
//! with a letter, of letters, digits and `-`, anywhere after a header (on its line too) or
//! before the first one; a value after `=` with quotes, escapes (`\n` `\t` `\b` `\"` `\\`), `\`
//! at the end of a line continuing it, and a comment ending it outside quotes. What git would
//! refuse is an error: git then reads nothing of the file.

/// One entry as git sees it: `section[.subsection].key` (section and key lowercased, the
/// subsection as written) and its value (`None` for a bare key, which git reads as true).
pub type Entry = (String, Option<String>);

/// The entries of `text` as git reads them, or `None` when git refuses the file. With
/// `partial`, `text` is a prefix of the file: ending in the middle of anything is not a refusal.
pub fn git_config_entries(text: &str, partial: bool) -> Option<Vec<Entry>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let normalized;
    let text = if text.contains('\r') {
        normalized = text.replace("\r\n", "\n");
        normalized.as_str()
    } else {
        text
    };
    let mut reader = Reader { chars: text.chars().peekable(), partial, entries: Vec::new() };
    match reader.read() {
        Step::Done => Some(reader.entries),
        Step::Refused => None,
    }
}

enum Step {
    Done,
    Refused,
}

struct Reader<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    partial: bool,
    entries: Vec<Entry>,
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

impl Reader<'_> {
    /// The end of the text: fine between entries; inside one, fine only for a prefix.
    fn ended_inside(&self) -> Step {
        if self.partial { Step::Done } else { Step::Refused }
    }

    fn read(&mut self) -> Step {
        let mut section: Option<String> = None;
        loop {
            let Some(c) = self.chars.next() else { return Step::Done };
            match c {
                c if is_space(c) => {}
                '#' | ';' => {
                    for c in self.chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                '[' => match self.header() {
                    Ok(name) => section = Some(name),
                    Err(step) => return step,
                },
                c if c.is_ascii_alphabetic() => {
                    let mut key = String::from(c.to_ascii_lowercase());
                    while let Some(&next) = self.chars.peek().filter(|c| is_key_char(**c)) {
                        key.push(next.to_ascii_lowercase());
                        self.chars.next();
                    }
                    let value = match self.value() {
                        Ok(value) => value,
                        Err(step) => return step,
                    };
                    let full = match &section {
                        Some(section) => format!("{section}.{key}"),
                        None => key,
                    };
                    self.entries.push((full, value));
                }
                _ => return Step::Refused,
            }
        }
    }

    /// After `[`: the section's name, with its subsection.
    fn header(&mut self) -> Result<String, Step> {
        let mut name = String::new();
        loop {
            let Some(c) = self.chars.next() else { return Err(self.ended_inside()) };
            match c {
                ']' if name.is_empty() => return Err(Step::Refused),
                ']' => return Ok(name.to_ascii_lowercase()),
                c if c == '.' || is_key_char(c) => name.push(c),
                c if is_space(c) && c != '\n' => return self.subsection(name),
                _ => return Err(Step::Refused),
            }
        }
    }

    /// After `[section` and whitespace: `"subsection"]`.
    fn subsection(&mut self, name: String) -> Result<String, Step> {
        loop {
            match self.chars.next() {
                None => return Err(self.ended_inside()),
                Some('"') => break,
                Some(c) if is_space(c) && c != '\n' => {}
                Some(_) => return Err(Step::Refused),
            }
        }
        let mut subsection = String::new();
        loop {
            match self.chars.next() {
                None => return Err(self.ended_inside()),
                Some('\n') => return Err(Step::Refused),
                Some('"') => break,
                Some('\\') => match self.chars.next() {
                    None => return Err(self.ended_inside()),
                    Some('\n') => return Err(Step::Refused),
                    Some(c) => subsection.push(c),
                },
                Some(c) => subsection.push(c),
            }
        }
        match self.chars.next() {
            Some(']') => Ok(format!("{}.{subsection}", name.to_ascii_lowercase())),
            None => Err(self.ended_inside()),
            Some(_) => Err(Step::Refused),
        }
    }

    /// After a key: nothing (a bare key, true), or `= value`. Only blanks may stand
    /// between the key and `=` or the end of the line (a comment there is refused, as git does).
    fn value(&mut self) -> Result<Option<String>, Step> {
        loop {
            match self.chars.next() {
                None | Some('\n') => return Ok(None),
                Some(' ' | '\t') => {}
                Some('=') => break,
                Some(_) => return Err(Step::Refused),
            }
        }
        let mut value = String::new();
        let mut quoted = false;
        // Blanks outside quotes after something: kept, one space each, if more follows.
        let mut spaces = 0;
        loop {
            // The end of the text reads as the end of a line.
            let c = self.chars.next();
            let Some(c) = c.filter(|c| *c != '\n') else {
                return match (quoted, c) {
                    (true, None) => Err(self.ended_inside()),
                    (true, Some(_)) => Err(Step::Refused),
                    (false, _) => Ok(Some(value)),
                };
            };
            match c {
                c if !quoted && is_space(c) => {
                    if !value.is_empty() {
                        spaces += 1;
                    }
                    continue;
                }
                '#' | ';' if !quoted => {
                    for c in self.chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                    return Ok(Some(value));
                }
                _ => {}
            }
            value.extend(std::iter::repeat_n(' ', spaces));
            spaces = 0;
            match c {
                '\\' => match self.chars.next() {
                    // `\` at the end of a line (or of the text) continues the value.
                    None | Some('\n') => {}
                    Some('t') => value.push('\t'),
                    Some('b') => value.push('\u{8}'),
                    Some('n') => value.push('\n'),
                    Some(c @ ('\\' | '"')) => value.push(c),
                    Some(_) => return Err(Step::Refused),
                },
                '"' => quoted = !quoted,
                c => value.push(c),
            }
        }
    }
}

/// C's `isspace` (git reads bytes in the C locale).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entries(text: &str) -> Option<Vec<(String, Option<String>)>> {
        git_config_entries(text, false)
    }

    fn e(key: &str, value: Option<&str>) -> Entry {
        (key.to_owned(), value.map(str::to_owned))
    }

    #[test]
    fn spellings_git_accepts_are_read_as_git_reads_them() {
        assert_eq!(
            entries("\u{feff}x = 1\n[Core] hooksPath = h # c\n[remote \"a]b\"]\n\turl = \"u\"\n"),
            Some(vec![
                e("x", Some("1")),
                e("core.hookspath", Some("h")),
                e("remote.a]b.url", Some("u"))
            ])
        );
        assert_eq!(
            entries("[includeIf\t\"gitdir:/\"] path=p\n[core]\n\tpager = a \\\n[foo]\n"),
            Some(vec![e("includeif.gitdir:/.path", Some("p")), e("core.pager", Some("a [foo]"))])
        );
        assert_eq!(entries("[core]\r\n\tbare\r\n"), Some(vec![e("core.bare", None)]));
        assert_eq!(
            entries("[Section.Sub]\nk=\"a\\\"b\"\n"),
            Some(vec![e("section.sub.k", Some("a\"b"))])
        );
        assert_eq!(
            entries("[a]\nk = x  y  # c\nj = v\\"),
            Some(vec![e("a.k", Some("x  y")), e("a.j", Some("v"))])
        );
    }

    #[test]
    fn what_git_refuses_is_refused_and_a_prefix_may_end_anywhere() {
        for text in [
            "[core\n",
            "1key = x\n",
            "[core]\nk = \"open\n",
            "[a \"b\" ]\n",
            "k = \\q\n",
            "[]\n",
            "[a]\nk # c\n",
        ] {
            assert_eq!(entries(text), None, "{text:?}");
        }
        assert!(git_config_entries("[core]\nk = \"open", true).is_some());
        assert!(git_config_entries("[core \"sub", true).is_some());
        assert!(git_config_entries("fn main() {}\n", true).is_none());
    }
}
