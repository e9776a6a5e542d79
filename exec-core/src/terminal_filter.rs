//! What a command's output may do to the terminal cordon streams it to.
//!
//! `cordon exec` relays the command's stdout and stderr; when they go to a terminal, the bytes
//! pass through [`EscapeFilter`], which keeps text, colours and cursor movement and drops the
//! escape sequences that reach past the screen: every string sequence (OSC — window title,
//! hyperlinks, the OSC 52 clipboard a user would paste from —, DCS, APC, PM, SOS), control
//! sequences that make the terminal answer (device status, attributes, window reports: the
//! answer is typed into the terminal's input, which the user's shell reads after cordon
//! exits), `ESC Z`, and C1 controls spelled in UTF-8 (`U+0080`–`U+009F`, which some terminals
//! obey as `CSI`/`OSC`). A sequence split across reads is handled as one. What cordon captures
//! for `--json` and the denial classifier stays unfiltered.

/// The final bytes of the control sequences kept: SGR (`m`), cursor movement and position
/// (`A`–`H`, `d`, `f`), erasing and editing (`J`, `K`, `L`, `M`, `P`, `X`, `@`), scrolling
/// (`S`, `T`, `r`), saving and restoring the cursor (`s`, `u`) and modes (`h`, `l`: cursor
/// visibility, the alternate screen). Anything else — `n` (status reports), `c` (device
/// attributes), `t` (window operations and reports), `q`, `p`, `x`, `y`, `|`, `~` — is dropped.
const KEPT_CSI_FINALS: &[u8] = b"mABCDEFGHdfJKLMPX@STrsuhl";
/// A control sequence longer than this is not one a program needs: dropped.
const MAX_CSI: usize = 64;
/// A string sequence is dropped up to its terminator, or this many bytes at most: a program
/// that opens one and never ends it loses this much output, not the rest.
const MAX_STRING: usize = 4096;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// After `ESC`.
    Escape,
    /// Inside `ESC [`; the bytes so far are held.
    Control,
    /// Inside a control sequence being dropped (too long), up to its final byte.
    ControlDropped,
    /// Inside a string sequence (dropped); `after_escape` when its last byte was `ESC`.
    Text {
        dropped: usize,
        after_escape: bool,
    },
    /// After `0xC2`, the first byte of a two-byte UTF-8 sequence (a C1 control if the next
    /// byte is 0x80–0x9F).
    Lead,
}

/// The filter's state between reads of one stream.
#[derive(Debug)]
pub struct EscapeFilter {
    state: State,
    held: Vec<u8>,
}

impl Default for EscapeFilter {
    fn default() -> Self {
        EscapeFilter { state: State::Ground, held: Vec::new() }
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
    /// A filter for output written to `stream`, when it is a terminal; none otherwise (a pipe
    /// or a file gets the bytes as they are).
    pub fn for_stream(stream: &impl std::io::IsTerminal) -> Option<EscapeFilter> {
        stream.is_terminal().then(EscapeFilter::default)
    }

    /// Appends to `out` what of `input` may reach the terminal.
    pub fn filter(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &byte in input {
            self.step(byte, out);
        }
    }

    fn step(&mut self, byte: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Ground => self.ground(byte, out),
            State::Escape => match byte {
                b'[' => {
                    self.held.clear();
                    self.held.extend_from_slice(&[ESC, b'[']);
                    self.state = State::Control;
                }
                b']' | b'P' | b'_' | b'^' | b'X' => {
                    self.state = State::Text { dropped: 0, after_escape: false };
                }
                // DECID: the terminal answers with its identity, typed into its input.
                b'Z' => self.state = State::Ground,
                0x20..=0x7e => {
                    out.extend_from_slice(&[ESC, byte]);
                    self.state = State::Ground;
                }
                // A lone ESC before a control character or another ESC: dropped.
                _ => {
                    self.state = State::Ground;
                    self.ground(byte, out);
                }
            },
            State::Control => match byte {
                0x20..=0x3f if self.held.len() < MAX_CSI => self.held.push(byte),
                0x20..=0x3f => {
                    // Too long: drop it, and what follows up to its final byte.
                    self.held.clear();
                    self.state = State::ControlDropped;
                }
                0x40..=0x7e => {
                    // `CSI s` / `CSI u` save and restore the cursor only bare: with parameters
                    // `u` is the kitty keyboard protocol (`CSI ? u` is answered, `CSI > 1 u`
                    // changes what every key sends to the user's shell).
                    let bare = self.held.len() == 2;
                    let kept = KEPT_CSI_FINALS.contains(&byte) && (bare || !b"su".contains(&byte));
                    if kept {
                        out.extend_from_slice(&self.held);
                        out.push(byte);
                    }
                    self.held.clear();
                    self.state = State::Ground;
                }
                // A control character or a non-ASCII byte ends it unfinished: dropped.
                _ => {
                    self.held.clear();
                    self.state = State::Ground;
                    self.ground(byte, out);
                }
            },
            State::ControlDropped => match byte {
                0x20..=0x3f => {}
                0x40..=0x7e => self.state = State::Ground,
                _ => {
                    self.state = State::Ground;
                    self.ground(byte, out);
                }
            },
            State::Text { dropped, after_escape } => {
                let ended = byte == BEL || (after_escape && byte == b'\\');
                self.state = if ended || dropped >= MAX_STRING {
                    State::Ground
                } else {
                    State::Text { dropped: dropped + 1, after_escape: byte == ESC }
                };
            }
            State::Lead => {
                self.state = State::Ground;
                if !(0x80..=0x9f).contains(&byte) {
                    out.push(0xc2);
                    self.ground(byte, out);
                }
            }
        }
    }

    fn ground(&mut self, byte: u8, out: &mut Vec<u8>) {
        match byte {
            ESC => self.state = State::Escape,
            0xc2 => self.state = State::Lead,
            _ => out.push(byte),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn filtered(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        EscapeFilter::default().filter(input, &mut out);
        out
    }

    #[test]
    fn text_colours_and_cursor_movement_pass_unchanged() {
        let kept: &[u8] = b"plain \x1b[1;31mred\x1b[0m \x1b[2K\r\x1b[3A\x1b[?25l\x1b[?1049h done\n\
                            caf\xc3\xa9 \xc2\xa0 \x1b(B \x1b7\x1b8";
        assert_eq!(filtered(kept), kept);
    }

    #[test]
    fn strings_reports_and_c1_controls_are_dropped() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"a\x1b]0;title\x07b", b"ab"),
            (b"a\x1b]52;c;cm0gLXJmIH4K\x1b\\b", b"ab"),
            (b"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", b"alinkb"),
            (b"a\x1bP$q\"p\x1b\\b", b"ab"),
            (b"a\x1b_apc\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d", b"abcd"),
            (b"a\x1b[6n\x1b[c\x1b[>c\x1b[21t\x1b[14t\x1b[?1$pb", b"ab"),
            (b"a\x1bZb", b"ab"),
            (b"a\x1b[?u\x1b[>1u\x1b[<u\x1b[sb\x1b[u", b"a\x1b[sb\x1b[u"),
            (b"a\xc2\x9d0;title\x07b\xc2\x9b6n", b"a0;title\x07b6n"),
        ];
        for (input, expected) in cases {
            assert_eq!(filtered(input), *expected, "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn a_sequence_split_across_reads_is_judged_whole() {
        let input: &[u8] = b"x\x1b]0;ti\x1b]tle\x07y\x1b[3\x31mz\x1b[2\x31t.";
        for split in 0..input.len() {
            let mut filter = EscapeFilter::default();
            let mut out = Vec::new();
            filter.filter(&input[..split], &mut out);
            filter.filter(&input[split..], &mut out);
            assert_eq!(out, b"xy\x1b[31mz.", "split at {split}");
        }
    }

    #[test]
    fn an_endless_string_or_control_sequence_swallows_a_bounded_amount() {
        let mut input = b"\x1b]0;".to_vec();
        input.extend(std::iter::repeat_n(b'a', MAX_STRING + 10));
        input.extend_from_slice(b"\nvisible");
        let out = filtered(&input);
        assert!(out.ends_with(b"\nvisible"), "{}", String::from_utf8_lossy(&out));
        assert!(out.len() < 20, "{} bytes kept", out.len());
        let mut long = b"\x1b[".to_vec();
        long.extend(std::iter::repeat_n(b'1', MAX_CSI + 5));
        long.extend_from_slice(b"tafter");
        assert_eq!(filtered(&long), b"after");
    }
}
