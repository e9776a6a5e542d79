//! What a command's output may do to the terminal cordon streams it to.
//!
//! `cordon exec` relays the command's stdout and stderr (and a far end's output); when they go
//! to a terminal, the bytes pass through [`EscapeFilter`]. The filter parses the stream with a
//! complete ECMA-48/DEC state machine (`vte`, the parser of Alacritty, which follows the DEC
//! parser's states: escape, control, device-control, operating-system and the SOS/PM/APC
//! strings) and writes out again only what it keeps, in one canonical spelling:
//!
//! - printable characters (U+0080–U+009F, the C1 controls spelled in UTF-8, are not: some
//!   terminals obey them as `CSI`/`OSC`); invalid UTF-8 becomes U+FFFD;
//! - the C0 controls that move the cursor: tab, line feed, vertical tab, form feed, carriage
//!   return, backspace;
//! - SGR (colours and attributes), cursor movement, erasing within the screen, inserting and
//!   deleting characters and lines, scrolling by lines, `ESC 7`/`ESC 8`, `CSI s`/`CSI u`
//!   bare, `ESC D`/`ESC E`/`ESC M`.
//!
//! Everything else is dropped: every string (OSC — titles, the OSC 52 clipboard, hyperlinks,
//! colours —, DCS, APC, PM, SOS), every request the terminal would answer by typing into the
//! user's input (status and cursor reports, device attributes, window reports), every mode
//! (`h`/`l`: mouse and focus reporting, cursor keys, insert, bracketed paste, …), the keypad
//! and keyboard protocols, character-set designations and shifts, the scroll region, BEL,
//! ENQ, and whatever a terminal would do beyond the screen. Since the output is written from
//! what was parsed, no read boundary and no byte the parser ignores (a C1 byte, a UTF-8 lead
//! byte before `ESC`) can make a sequence appear that the input did not have whole, and the
//! output always leaves the terminal's parser in its ground state.
//!
//! On a terminal whose locale is not UTF-8 (an explicit codeset such as ISO-8859-1), bytes
//! 0x80–0x9F are C1 controls; every non-ASCII character is then shown as `?`.
//!
//! What cordon captures for `--json` and the denial classifier stays unfiltered. The terminal
//! is still reset before cordon's own words (the CLI does that): the filter keeps SGR and the
//! cursor, and a command handed the terminal writes to it directly.

use vte::{Params, Parser, Perform};

const ESC: u8 = 0x1b;

/// What the terminal takes as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Utf8,
    /// A single-byte character set: bytes 0x80–0x9F are C1 controls there.
    EightBit,
}

impl Charset {
    /// The terminal's character set as cordon's locale names it (`LC_ALL`, `LC_CTYPE`, `LANG`:
    /// the first set). A locale without a codeset (`C`, `POSIX`, unset) is taken as UTF-8, as
    /// terminals are today.
    pub fn from_locale() -> Charset {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()));
        Charset::of_locale(locale.as_deref())
    }

    fn of_locale(locale: Option<&str>) -> Charset {
        let codeset = locale
            .and_then(|locale| locale.split_once('.'))
            .map(|(_, rest)| rest.split('@').next().unwrap_or(rest).to_ascii_lowercase());
        match codeset.as_deref() {
            None | Some("utf-8" | "utf8") => Charset::Utf8,
            Some(_) => Charset::EightBit,
        }
    }
}

/// The filter's state between reads of one stream.
pub struct EscapeFilter {
    parser: Parser,
    charset: Charset,
    /// The start of a UTF-8 character the last read ended in, held for the next one: the
    /// parser would decode a character split across its calls, then skip the bytes after it
    /// up to its 4-byte buffer's end, losing text.
    unfinished: Vec<u8>,
}

impl Default for EscapeFilter {
    fn default() -> Self {
        EscapeFilter::new(Charset::Utf8)
    }
}

impl std::fmt::Debug for EscapeFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EscapeFilter").field("charset", &self.charset).finish_non_exhaustive()
    }
}

/// What of `input` to show: all of it without a filter, else what `filter` keeps (held in
/// `kept`, which is reused between calls).
pub fn shown<'a>(
    filter: Option<&mut EscapeFilter>,
    input: &'a [u8],
    kept: &'a mut Vec<u8>,
) -> &'a [u8] {
    match filter {
        Some(filter) => {
            kept.clear();
            filter.filter(input, kept);
            kept
        }
        None => input,
    }
}

impl EscapeFilter {
    pub fn new(charset: Charset) -> Self {
        EscapeFilter { parser: Parser::new(), charset, unfinished: Vec::new() }
    }

    /// A filter for output written to `stream`, when it is a terminal; none otherwise (a pipe
    /// or a file gets the bytes as they are).
    pub fn for_stream(stream: &impl std::io::IsTerminal) -> Option<EscapeFilter> {
        stream.is_terminal().then(|| EscapeFilter::new(Charset::from_locale()))
    }

    /// Appends to `out` what of `input` may reach the terminal.
    pub fn filter(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let joined;
        let input = if self.unfinished.is_empty() {
            input
        } else {
            joined = [std::mem::take(&mut self.unfinished).as_slice(), input].concat();
            &joined
        };
        let whole = input.len() - unfinished_character(input);
        let mut kept = Kept { out, charset: self.charset };
        self.parser.advance(&mut kept, &input[..whole]);
        self.unfinished.extend_from_slice(&input[whole..]);
    }
}

/// How many bytes at the end of `input` begin a UTF-8 character that is not complete yet.
fn unfinished_character(input: &[u8]) -> usize {
    let start = input.len().saturating_sub(3);
    (start..input.len())
        .find(|&i| {
            matches!(std::str::from_utf8(&input[i..]),
                     Err(e) if e.valid_up_to() == 0 && e.error_len().is_none())
        })
        .map_or(0, |i| input.len() - i)
}

/// The parser's actions, turned into what is written out.
struct Kept<'a> {
    out: &'a mut Vec<u8>,
    charset: Charset,
}

impl Perform for Kept<'_> {
    fn print(&mut self, c: char) {
        match c {
            // DEL and the C1 controls (the parser hands these to `execute`; not here either).
            '\u{7f}'..='\u{9f}' => {}
            c if !c.is_ascii() && self.charset == Charset::EightBit => self.out.push(b'?'),
            c => {
                let mut utf8 = [0; 4];
                self.out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }

    fn execute(&mut self, byte: u8) {
        // Backspace, tab, line feed, vertical tab, form feed, carriage return: the cursor
        // moves. Not BEL, ENQ (the answer-back message), SO/SI (character sets) or any C1.
        if matches!(byte, 0x08..=0x0d) {
            self.out.push(byte);
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        // A private marker (`?`, `>`, `<`, `=`) or an intermediate byte makes it another
        // function altogether (modes, keyboard protocols, reports, cursor style): never kept.
        if ignore || !intermediates.is_empty() || !kept_control(params, action) {
            return;
        }
        self.out.extend_from_slice(&[ESC, b'[']);
        // An absent parameter is read as 0, which is what it means to every function kept;
        // save and restore the cursor are written bare (with a parameter, `CSI u` is another
        // function in some terminals).
        let bare = matches!(action, 's' | 'u');
        for (i, param) in params.iter().enumerate().filter(|_| !bare) {
            if i > 0 {
                self.out.push(b';');
            }
            for (j, sub) in param.iter().enumerate() {
                if j > 0 {
                    self.out.push(b':');
                }
                self.out.extend_from_slice(sub.to_string().as_bytes());
            }
        }
        let mut utf8 = [0; 4];
        self.out.extend_from_slice(action.encode_utf8(&mut utf8).as_bytes());
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        // Save and restore the cursor, index, next line, reverse index. Not RIS (`ESC c`),
        // DECID (`ESC Z`, answered), the keypad (`ESC =`, `ESC >`), character sets (`ESC (`,
        // `ESC %`, single and locking shifts), line sizes (`ESC #`) or a lone ST.
        if !ignore && intermediates.is_empty() && b"78DEM".contains(&byte) {
            self.out.extend_from_slice(&[ESC, byte]);
        }
    }

    // DCS (`hook`, `put`, `unhook`) and OSC (`osc_dispatch`): the defaults do nothing.
}

/// Whether the control sequence `CSI params action` (no private marker, no intermediate) is
/// one that stays within the screen.
fn kept_control(params: &Params, action: char) -> bool {
    let plain: Option<Vec<u16>> =
        params.iter().map(|param| (param.len() == 1).then(|| param[0])).collect();
    let Some(plain) = plain else {
        // Sub-parameters (`38:2::R:G:B`) belong to SGR alone.
        return action == 'm';
    };
    match (action, plain.as_slice()) {
        // SGR: colours and attributes.
        ('m', _) => true,
        // Cursor position: row and column.
        ('H' | 'f', [_] | [_, _]) => true,
        // One count or position: cursor up/down/forward/back, next/previous line, column,
        // row, relative column/row, tab forward/back, insert/delete lines and characters,
        // erase characters, scroll up/down. (`CSI Ps;…;Ps T` with five parameters is xterm's
        // mouse highlighting: not kept.)
        (
            'A' | 'B' | 'C' | 'D' | 'E' | 'F' | 'G' | '`' | 'a' | 'd' | 'e' | 'I' | 'Z' | 'L' | 'M'
            | 'P' | 'X' | '@' | 'S' | 'T',
            [_],
        ) => true,
        // Erase in the display or the line, not the scrollback (`CSI 3 J`).
        ('J' | 'K', [0..=2]) => true,
        // Save and restore the cursor, bare only: `CSI u` with parameters is the kitty
        // keyboard protocol, `CSI s` with parameters sets left and right margins.
        ('s' | 'u', [0]) => true,
        _ => false,
    }
}

#[cfg(test)]
#[path = "terminal_filter_tests.rs"]
mod tests;
