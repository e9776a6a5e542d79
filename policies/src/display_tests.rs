use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// Reads the escapes of the rendering back (`\\`, `\'`, `\n`, `\t`, `\r`, `\xHH`, `\uHHHH`,
/// `\UHHHHHHHH`); `None` for anything the renderer never writes.
fn unescape_one(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<char> {
    let digits = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
        let hex: String = chars.by_ref().take(n).collect();
        if hex.len() != n {
            return None;
        }
        u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
    };
    match chars.next()? {
        '\\' => Some('\\'),
        '\'' => Some('\''),
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        'x' => digits(chars, 2),
        'u' => digits(chars, 4),
        'U' => digits(chars, 8),
        _ => None,
    }
}

/// A parser of the rendered form: bare words, `'…'` and `$'…'`, separated by one space.
fn parse_argv(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    if text.is_empty() {
        return Some(words);
    }
    let mut chars = text.chars().peekable();
    loop {
        let mut word = String::new();
        match chars.peek()? {
            '\'' => {
                chars.next();
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '$' => {
                chars.next();
                if chars.next()? != '\'' {
                    return None;
                }
                loop {
                    match chars.next()? {
                        '\'' => break,
                        '\\' => word.push(unescape_one(&mut chars)?),
                        c => word.push(c),
                    }
                }
            }
            _ => {
                while let Some(&c) = chars.peek() {
                    if c == ' ' {
                        break;
                    }
                    if !is_bare(c) {
                        return None;
                    }
                    word.push(c);
                    chars.next();
                }
                if word.is_empty() {
                    return None;
                }
            }
        }
        words.push(word);
        match chars.next() {
            None => return Some(words),
            Some(' ') => {}
            Some(_) => return None,
        }
    }
}

fn unescape_text(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let c = unescape_one(&mut chars)?;
            if c == '\'' {
                return None; // render_text never escapes a quote
            }
            out.push(c);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// One character of every hostile class, plus quoting-relevant ASCII.
const HOSTILE: &[char] = &[
    '\r',
    '\n',
    '\t',
    '\u{1b}',
    '\u{8}',
    '\u{7}',
    '\u{0}',
    '\u{7f}',
    '\u{85}',
    '\u{9b}',
    '\u{202a}',
    '\u{202e}',
    '\u{2066}',
    '\u{2069}',
    '\u{200b}',
    '\u{200d}',
    '\u{200f}',
    '\u{2060}',
    '\u{2064}',
    '\u{feff}',
    '\u{ad}',
    '\u{180e}',
    '\u{e0041}',
    '\u{e007f}',
    '\u{fe0f}',
    '\u{e0100}',
    '\u{a0}',
    '\u{2028}',
    '\u{3000}',
    '\u{338}',
    '\u{e000}',
    '\u{ffff}',
    '\u{3164}',
    '\'',
    '"',
    '\\',
    '$',
    ' ',
    '`',
    '!',
    'a',
    'é',
    '日',
];

fn hostile_word() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(HOSTILE), 0..8)
        .prop_map(|cs| cs.into_iter().collect())
}

fn any_argv() -> impl Strategy<Value = Vec<String>> {
    let word = prop_oneof![any::<String>(), hostile_word(), "[a-z0-9 '=./-]{0,6}"];
    prop::collection::vec(word, 0..6)
}

/// Nothing a terminal would act on or hide survives rendering.
fn is_printable(text: &str) -> bool {
    !text.chars().any(|c| c != ' ' && needs_escape(c))
}

proptest! {
    #[test]
    fn the_rendering_identifies_the_argv(words in any_argv()) {
        let rendered = render_argv(&words);
        prop_assert!(is_printable(&rendered.text), "{:?}", rendered.text);
        prop_assert_eq!(parse_argv(&rendered.text), Some(words));
    }

    #[test]
    fn rendered_text_reads_back_to_the_input(input in prop_oneof![any::<String>(), hostile_word()]) {
        let rendered = render_text(&input);
        prop_assert!(is_printable(&rendered.text), "{:?}", rendered.text);
        prop_assert_eq!(unescape_text(&rendered.text), Some(input));
    }

    #[test]
    fn abbreviation_keeps_both_ends_and_counts_the_rest(text in ".{0,300}", limit in 2usize..100) {
        let cut = abbreviate(&text, limit);
        if text.chars().count() <= limit {
            prop_assert_eq!(cut.text, text);
            prop_assert_eq!(cut.elided_bytes, 0);
        } else {
            let (head, rest) = cut.text.split_once(" … [").unwrap();
            let tail = rest.split_once("] … ").unwrap().1;
            prop_assert!(text.starts_with(head) && text.ends_with(tail));
            prop_assert_eq!(head.len() + cut.elided_bytes + tail.len(), text.len());
        }
    }
}

#[test]
fn words_are_quoted_so_that_boundaries_and_empty_words_show() {
    assert_eq!(render_argv(&argv(&["echo", "a b"])).text, "echo 'a b'");
    assert_eq!(render_argv(&argv(&["echo", "a", "b"])).text, "echo a b");
    assert_eq!(render_argv(&argv(&["echo", "", "x"])).text, "echo '' x");
    assert_eq!(render_argv(&argv(&["echo", "it's"])).text, r"echo $'it\'s'");
    assert_eq!(render_argv(&argv(&["echo", "a\\b"])).text, r"echo 'a\b'");
    assert_eq!(render_argv(&argv(&["ls", "café", "$HOME"])).text, "ls 'café' '$HOME'");
    assert!(!render_argv(&argv(&["sh", "-c", "ls 'x'"])).hidden_characters);
}

#[test]
fn a_carriage_return_and_erase_line_are_shown_not_obeyed() {
    let rendered = render_argv(&argv(&["sh", "-c", "touch PWNED\r\u{1b}[2Kecho harmless"]));
    assert_eq!(rendered.text, r"sh -c $'touch PWNED\r\x1b[2Kecho harmless'");
    assert!(rendered.hidden_characters);
}

#[test]
fn every_hostile_class_is_escaped_and_flagged() {
    let cases = [
        ("cursor up", "a\u{1b}[1Ab", r"$'a\x1b[1Ab'"),
        ("backspace", "rm\u{8}\u{8}ls", r"$'rm\x08\x08ls'"),
        ("bell", "a\u{7}", r"$'a\x07'"),
        ("delete", "a\u{7f}", r"$'a\x7f'"),
        ("C1 CSI", "a\u{9b}2K", r"$'a\u009b2K'"),
        (
            "OSC 8 hyperlink",
            "\u{1b}]8;;http://x\u{1b}\\ok\u{1b}]8;;\u{1b}\\",
            r"$'\x1b]8;;http://x\x1b\\ok\x1b]8;;\x1b\\'",
        ),
        ("OSC title", "\u{1b}]0;title\u{7}", r"$'\x1b]0;title\x07'"),
        ("right-to-left override", "a\u{202e}b", r"$'a\u202eb'"),
        ("left-to-right embedding", "a\u{202a}b", r"$'a\u202ab'"),
        ("first strong isolate", "a\u{2068}b", r"$'a\u2068b'"),
        ("pop directional isolate", "a\u{2069}b", r"$'a\u2069b'"),
        ("zero-width space", "r\u{200b}m", r"$'r\u200bm'"),
        ("zero-width joiner", "a\u{200d}b", r"$'a\u200db'"),
        ("word joiner", "a\u{2060}b", r"$'a\u2060b'"),
        ("invisible plus", "a\u{2064}b", r"$'a\u2064b'"),
        ("byte order mark", "\u{feff}ls", r"$'\ufeffls'"),
        ("soft hyphen", "r\u{ad}m", r"$'r\u00adm'"),
        ("mongolian vowel separator", "a\u{180e}b", r"$'a\u180eb'"),
        ("tag character", "a\u{e0041}", r"$'a\U000e0041'"),
        ("variation selector", "a\u{fe0f}", r"$'a\ufe0f'"),
        ("variation selector supplement", "a\u{e0100}", r"$'a\U000e0100'"),
        ("no-break space", "a\u{a0}b", r"$'a\u00a0b'"),
        ("line separator", "a\u{2028}b", r"$'a\u2028b'"),
        ("combining overlay", "/\u{338}", r"$'/\u0338'"),
        ("hangul filler", "\u{3164}", r"$'\u3164'"),
        ("private use", "\u{e000}", r"$'\ue000'"),
        ("NUL", "a\u{0}", r"$'a\x00'"),
    ];
    for (class, word, expected) in cases {
        let rendered = render_argv(&argv(&[word]));
        assert_eq!(rendered.text, expected, "{class}");
        assert!(rendered.hidden_characters, "{class}");
        assert_eq!(parse_argv(&rendered.text), Some(argv(&[word])), "{class}");
    }
}

#[test]
fn newlines_and_tabs_are_escaped_but_not_called_hidden() {
    let rendered = render_argv(&argv(&["sh", "-c", "ls\n\techo"]));
    assert_eq!(rendered.text, r"sh -c $'ls\n\techo'");
    assert!(!rendered.hidden_characters);
}

#[test]
fn escapes_have_fixed_width_so_a_following_hex_digit_stays_literal() {
    assert_eq!(render_argv(&argv(&["\u{202e}abc"])).text, r"$'\u202eabc'");
    assert_eq!(render_argv(&argv(&["\u{1b}f"])).text, r"$'\x1bf'");
}

#[test]
fn free_text_is_escaped_and_backslashes_doubled() {
    let rendered = render_text("denied: /x\u{1b}[2K\\y\n");
    assert_eq!(rendered.text, r"denied: /x\x1b[2K\\y\n");
    assert!(rendered.hidden_characters);
    assert_eq!(render_text("plain 'text' é").text, "plain 'text' é");
    assert!(!render_text("plain").hidden_characters);
}

#[test]
fn invalid_utf8_bytes_are_shown_as_hex() {
    let rendered = render_bytes(b"/tmp/a\xffb\xe2\x80\xae");
    assert_eq!(rendered.text, r"/tmp/a\xffb\u202e");
    assert!(rendered.hidden_characters);
}

#[test]
fn a_long_command_shows_its_head_its_tail_and_what_was_left_out() {
    let script = format!("echo start; {}; rm -rf ~/important", "x".repeat(20_000));
    let rendered = render_argv(&argv(&["sh", "-c", &script]));
    let cut = abbreviate(&rendered.text, DISPLAY_LIMIT);
    assert!(cut.text.starts_with("sh -c 'echo start; xxx"), "{}", &cut.text[..40]);
    assert!(cut.text.ends_with("xxx; rm -rf ~/important'"));
    assert_eq!(cut.elided_bytes, rendered.text.len() - DISPLAY_LIMIT);
    assert!(cut.text.contains(&format!(" … [{} bytes not shown] … ", cut.elided_bytes)));
    assert_eq!(
        abbreviate("short", DISPLAY_LIMIT),
        Abbreviated { text: "short".into(), elided_bytes: 0 }
    );
}

#[test]
fn a_word_that_is_not_utf8_is_shown_as_the_bytes_a_shell_would_pass() {
    use std::os::unix::ffi::OsStringExt;
    let argv = [
        std::ffi::OsString::from("printf"),
        std::ffi::OsString::from_vec(b"it's caf\xe9".to_vec()),
    ];
    let rendered = render_argv(&argv);
    assert_eq!(rendered.text, r"printf $'it\'s caf\xe9'");
    assert!(rendered.hidden_characters);
    // The same bytes as text would render the same (`\x` is a hidden character there too).
    assert!(render_argv(&["caf\u{e9}".to_owned()]).text.contains('é'));
}
