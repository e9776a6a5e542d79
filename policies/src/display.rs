//! What a person sees before approving a command.
//!
//! An approval covers exactly what was shown, so what is shown must identify the argv
//! exactly. A terminal does not show some characters, it obeys them: a carriage return or
//! `ESC[2K` erases `touch PWNED` and leaves `echo harmless` on screen, a bidi override reverses
//! text, a zero-width space splits a word invisibly. Every such character is printed as an
//! escape here, and [`Rendered::hidden_characters`] tells the caller to say so.
//!
//! The scheme, one word at a time, words joined by one space:
//! - bare, when the word is non-empty and only `A-Z a-z 0-9 - _ . / = : , + @ %`;
//! - `'…'`, when it has no `'` and nothing that needs an escape (so `''` is the empty word);
//! - `$'…'` (bash's ANSI-C quoting, which a user can paste back into bash) otherwise, with `\\`,
//!   `\'`, `\n`, `\t`, `\r`, `\xHH` for the other ASCII controls and DEL, `\uHHHH` and
//!   `\UHHHHHHHH` for every other escaped code point. The digit counts are fixed so that a
//!   following literal hex digit is never read as part of the escape.
//!
//! Escaped: C0 and C1 controls and DEL; bidi controls; zero-width, invisible and other format
//! code points (soft hyphen, U+180E, U+200B–U+200F, U+2060–U+206F, U+FEFF, tags, …); variation
//! selectors and fillers; combining marks of the generic combining blocks (which can draw over
//! the quote or the letter before them); whitespace other than the ASCII space; private-use and
//! non-character code points. Other printable Unicode (`café`, `日本`) is shown as itself.
//!
//! [`render_text`] applies the same escapes to one free-text string (a cwd, a reason, an output
//! line) without quoting; [`abbreviate`] keeps the head and the tail of a long rendering and
//! says how much it left out.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;

/// Rendered text and whether anything in it had to be escaped because a terminal would hide it
/// or act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Printable text: no control characters, escapes or invisible code points.
    pub text: String,
    /// True when the input held a character a terminal would hide or act on (any escaped
    /// character except newline and tab, which are escaped only to keep one word on one line
    /// and are common in ordinary shell scripts).
    pub hidden_characters: bool,
}

/// A rendering cut to a length limit: the head and the tail, with the number of bytes between
/// them that were left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abbreviated {
    /// The text, or its head and tail around a marker naming the elided byte count.
    pub text: String,
    /// How many bytes of the rendering are not in `text` (0 when nothing was cut).
    pub elided_bytes: usize,
}

/// How many characters of a rendered command an approval prompt shows before it abbreviates.
pub const DISPLAY_LIMIT: usize = 2000;

/// The argv, shell-quoted so that every argv has its own rendering (see the module docs).
/// A word that is not UTF-8 is shown in `$'…'` with each invalid byte as `\xHH`, which is what
/// a shell makes of it again.
pub fn render_argv<S: AsRef<OsStr>>(argv: &[S]) -> Rendered {
    let mut text = String::new();
    let mut hidden_characters = false;
    for (i, word) in argv.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        hidden_characters |= match word.as_ref().to_str() {
            Some(word) => push_word(&mut text, word),
            None => push_bytes_word(&mut text, word.as_ref().as_bytes()),
        };
    }
    Rendered { text, hidden_characters }
}

/// A word that is not UTF-8, in `$'…'` (always hidden characters: the invalid bytes).
fn push_bytes_word(out: &mut String, word: &[u8]) -> bool {
    out.push_str("$'");
    for chunk in word.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\'' {
                out.push_str("\\'");
            } else {
                push_char(out, c);
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out.push('\'');
    true
}

/// One free-text string with every character a terminal would hide or act on escaped, and `\`
/// doubled so that an escape in the output never stands for itself.
pub fn render_text(input: &str) -> Rendered {
    let mut text = String::with_capacity(input.len());
    let mut hidden_characters = false;
    for c in input.chars() {
        hidden_characters |= push_char(&mut text, c);
    }
    Rendered { text, hidden_characters }
}

/// Like [`render_text`] for bytes that may not be UTF-8 (a path): invalid bytes are shown as
/// `\xHH` and count as hidden characters.
pub fn render_bytes(input: &[u8]) -> Rendered {
    let mut text = String::with_capacity(input.len());
    let mut hidden_characters = false;
    for chunk in input.utf8_chunks() {
        for c in chunk.valid().chars() {
            hidden_characters |= push_char(&mut text, c);
        }
        for byte in chunk.invalid() {
            hidden_characters = true;
            let _ = write!(text, "\\x{byte:02x}");
        }
    }
    Rendered { text, hidden_characters }
}

/// `text` if it has at most `limit` characters; else its first and last `limit / 2` characters
/// around ` … [N bytes not shown] … `. The end of a command is never cut silently.
pub fn abbreviate(text: &str, limit: usize) -> Abbreviated {
    let chars = text.chars().count();
    if chars <= limit {
        return Abbreviated { text: text.to_owned(), elided_bytes: 0 };
    }
    let keep = limit / 2;
    let head_end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(chars - keep).map_or(text.len(), |(i, _)| i);
    let elided_bytes = tail_start - head_end;
    Abbreviated {
        text: format!(
            "{} … [{elided_bytes} bytes not shown] … {}",
            &text[..head_end],
            &text[tail_start..]
        ),
        elided_bytes,
    }
}

/// Appends one quoted word; returns whether it held hidden characters.
fn push_word(out: &mut String, word: &str) -> bool {
    let bare = !word.is_empty() && word.chars().all(is_bare);
    if bare {
        out.push_str(word);
        return false;
    }
    if !word.chars().any(|c| c == '\'' || needs_escape(c)) {
        out.push('\'');
        out.push_str(word);
        out.push('\'');
        return false;
    }
    out.push_str("$'");
    let mut hidden = false;
    for c in word.chars() {
        if c == '\'' {
            out.push_str("\\'");
        } else {
            hidden |= push_char(out, c);
        }
    }
    out.push('\'');
    hidden
}

/// Appends `c`, escaped if needed (`\` always doubled); returns whether it was hidden.
fn push_char(out: &mut String, c: char) -> bool {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => {
            out.push_str("\\r");
            return true;
        }
        c if !needs_escape(c) => out.push(c),
        c if c.is_ascii() => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
            return true;
        }
        c if u32::from(c) <= 0xFFFF => {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
            return true;
        }
        c => {
            let _ = write!(out, "\\U{:08x}", u32::from(c));
            return true;
        }
    }
    false
}

fn is_bare(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)
}

/// Characters a terminal hides, acts on, or draws so that another text looks the same.
fn needs_escape(c: char) -> bool {
    if c == ' ' {
        return false;
    }
    // Cc (C0, DEL, C1) and every whitespace but the ASCII space (NBSP, U+2000–U+200A, U+2028,
    // U+3000, …): a word with a no-break space must not look like two words.
    if c.is_control() || c.is_whitespace() {
        return true;
    }
    matches!(
        u32::from(c),
        0x00AD                     // soft hyphen
        | 0x0300..=0x036F          // combining marks (U+0338 strikes a '/'; U+034F joins)
        | 0x061C                   // arabic letter mark (bidi)
        | 0x0600..=0x0605 | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2 // prepended format marks
        | 0x115F | 0x1160 | 0x3164 | 0xFFA0 // hangul fillers: letters that draw nothing
        | 0x17B4 | 0x17B5          // khmer inherent vowels (invisible)
        | 0x180B..=0x180F          // mongolian variation selectors and vowel separator
        | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F // combining
        | 0x200B..=0x200F          // zero-width space/joiners, LRM, RLM
        | 0x202A..=0x202E          // bidi embeddings and overrides
        | 0x2060..=0x206F          // word joiner, invisible operators, bidi isolates, …
        | 0x2800                   // braille blank
        | 0xFE00..=0xFE0F          // variation selectors
        | 0xFEFF                   // zero-width no-break space (BOM)
        | 0xFFF0..=0xFFFB          // interlinear annotations
        | 0xFDD0..=0xFDEF          // non-characters
        | 0xE000..=0xF8FF          // private use
        | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        | 0xE0000..=0xE0FFF        // tags and variation selectors supplement
        | 0xF0000..=0x10FFFF       // private use planes
    ) || (u32::from(c) & 0xFFFE) == 0xFFFE // U+xFFFE / U+xFFFF non-characters
}

#[cfg(test)]
#[path = "display_tests.rs"]
mod tests;
