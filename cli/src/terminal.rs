//! The terminal is the user's. Before every question and every message cordon writes to a
//! terminal, and when it returns, it puts the terminal back into the state a shell leaves a
//! running program with, so that cordon's words are seen as cordon wrote them and nothing a
//! command set survives it.
//!
//! What can have changed the terminal: a command's output relayed through the escape filter
//! (which keeps colours and cursor movement: `ESC[8m` conceals the text after it), ssh's and a
//! far end's words (escaped, so they change nothing), and a command handed the terminal on its
//! stdin, which writes to it directly — any mode, any string. [`expose`] records which of
//! these happened; [`say`] (cordon's messages), [`Question`] (its questions) and [`on_return`]
//! write the reset:
//!
//! - what decides whether the rest is read and drawn at all: out of VT52 mode, synchronized
//!   output off, the printer controller off, output to the main display (not a status line);
//! - every input-changing mode off: mouse reporting in all its encodings, focus reports,
//!   colour-scheme and size reports, application cursor keys and keypad, modifyOtherKeys back
//!   to the terminal's default, the kitty keyboard protocol's stack popped on both screens,
//!   the keyboard lock (KAM), insert mode, local echo and new-line mode; bracketed paste off,
//!   as a shell has it while it runs a program (it turns it on again for its own prompt);
//! - out of the alternate screen (the cursor where it was), the whole screen as the scroll
//!   region, no left and right margins, a soft reset (DECSTR: origin mode, insert mode,
//!   character sets, …), autowrap on, the cursor visible and as the user set it, reverse video
//!   off;
//! - G0 and G1 ASCII with G0 in use and, in a UTF-8 locale, UTF-8 (undoing `ESC % @`);
//! - before cordon's words, when a command had the terminal directly, the colour palette and
//!   the default colours (a command could make the text colour the background's); not when
//!   cordon just returns, which leaves the user's colour theme alone;
//! - SGR reset, last;
//! - then, before cordon's words, CR LF, a single-width line, and the rest of the screen
//!   below erased: they start on a line of their own, and nothing the command left below the
//!   cursor follows them.
//!
//! Around a question the terminal's settings (termios) are saved and restored. The question
//! gets the settings the shell handed cordon, with input flushed, echo and line editing on,
//! `^C` as interrupt, CR read as a line end and output neither discarded nor stopped — a
//! command that had the terminal may have left any of them changed (`tcflow(TCOOFF)` would
//! hold the question back unseen). When cordon was the terminal's foreground job at start, it
//! takes the foreground for the question (anything the command left there would read the
//! answer) and gives it back after.
//!
//! `TERM=dumb` declares a terminal that obeys no sequence: nothing is written for it.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};

use cordon_exec_core::TerminalCharset;
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::termios::{
    FlowArg, InputFlags, LocalFlags, OutputFlags, SetArg, SpecialCharacterIndices, Termios, tcflow,
    tcgetattr, tcsetattr,
};
use nix::unistd::{Pid, getpgrp, tcgetpgrp, tcsetpgrp};

/// What may have written to the terminal since cordon started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exposure {
    Untouched = 0,
    /// A command's output, relayed through the escape filter.
    Relayed = 1,
    /// A command that had the terminal on its stdin, and could write anything to it.
    Direct = 2,
}

static EXPOSURE: AtomicU8 = AtomicU8::new(Exposure::Untouched as u8);

/// Records that something may write to the terminal from now on.
pub fn expose(exposure: Exposure) {
    EXPOSURE.fetch_max(exposure as u8, Ordering::SeqCst);
}

fn exposure() -> Exposure {
    match EXPOSURE.load(Ordering::SeqCst) {
        0 => Exposure::Untouched,
        1 => Exposure::Relayed,
        _ => Exposure::Direct,
    }
}

/// Input-changing modes off (see the module docs). First what decides whether the rest is
/// read and drawn at all: out of VT52 mode (where no `CSI` is understood), synchronized output
/// off, the printer controller and auto-print off, output to the main display rather than a
/// status line.
const INPUT_MODES: &str = concat!(
    "\x1b<\x1b[?2026l\x1b[4i\x1b[?4i\x1b[0$}\x1b[0$~",
    "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l",
    "\x1b[?1016l\x1b[?1004l\x1b[?2031l\x1b[?2048l",
    "\x1b[?2004l",
    "\x1b[?1l\x1b[?66l\x1b>",
    "\x1b[>4m\x1b[<99u\x1b[=0;1u",
    "\x1b[2l\x1b[4l\x1b[12h\x1b[20l",
);

/// The screen: out of the alternate screen (`ESC 7` first: leaving it restores the cursor
/// saved on entering it, or this one when there was none), the main screen's kitty keyboard
/// stack, the scroll region (`CSI r` homes the cursor: it is put back), the margins, DECSTR
/// (which also ends origin mode: setting or resetting it directly would home the cursor, and
/// with the whole screen as the region it changes nothing), autowrap, the cursor, reverse
/// video, character sets.
const SCREEN: &str = concat!(
    "\x1b7\x1b[?1049l\x1b[<99u",
    "\x1b7\x1b[r\x1b8\x1b[?69l",
    "\x1b[!p",
    "\x1b[?7h\x1b[?25h\x1b[0 q\x1b[?5l",
    "\x1b(B\x1b)B\x0f",
);

/// The palette and the default foreground, background and cursor colours.
const COLOURS: &str = "\x1b]104\x1b\\\x1b]110\x1b\\\x1b]111\x1b\\\x1b]112\x1b\\";

/// Before cordon's words: a fresh line of single width, the screen below it empty.
const FRESH_LINE: &str = "\r\n\x1b#5\x1b[J";

/// What follows a reset: cordon's words (a question or a message), which must be seen, so the
/// colours a command could have set directly are reset too; or nothing (cordon returns), when
/// the user's own colour theme is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    Words,
    Return,
}

/// The reset sequence for this terminal; empty for one that declares it obeys none.
fn reset(before: Before) -> String {
    if std::env::var_os("TERM").is_some_and(|term| term == "dumb") {
        return String::new();
    }
    reset_sequence(before, exposure(), TerminalCharset::from_locale())
}

fn reset_sequence(before: Before, exposure: Exposure, charset: TerminalCharset) -> String {
    let mut out = String::from(INPUT_MODES);
    out.push_str(SCREEN);
    if charset == TerminalCharset::Utf8 {
        out.push_str("\x1b%G");
    }
    if before == Before::Words && exposure == Exposure::Direct {
        out.push_str(COLOURS);
    }
    out.push_str("\x1b[m");
    out
}

/// Writes cordon's message `lines` to stderr, each as `cordon: LINE` with every character a
/// terminal would hide or obey escaped; on a terminal something else wrote to, after the reset.
pub fn say<S: AsRef<str>>(lines: &[S]) {
    let exposed = exposure() != Exposure::Untouched;
    let mut held = exposed.then(hold_output);
    let mut stderr = std::io::stderr().lock();
    // CR LF: a command may have left the terminal not translating LF (raw mode).
    let end = if exposed && stderr.is_terminal() { "\r\n" } else { "\n" };
    let mut text = String::new();
    for line in lines {
        text.push_str("cordon: ");
        text.push_str(&cordon_policies::render_text(line.as_ref()).text);
        text.push_str(end);
    }
    if exposed && stderr.is_terminal() {
        let reset = reset(Before::Words);
        if !reset.is_empty() {
            text.insert_str(0, &format!("{reset}{FRESH_LINE}"));
        }
    }
    let _ = stderr.write_all(text.as_bytes());
    held.take();
}

/// cordon's stdout and stderr, held while cordon's words are written: a write of the
/// command's output still under way (the relay's, into a terminal whose output the command
/// stopped) ends first, and none starts until the words are out. Output stopped on either
/// terminal is restarted first, or the relay's write could never end.
struct HeldOutput {
    _stdout: std::io::StdoutLock<'static>,
    _stderr: std::io::StderrLock<'static>,
}

fn hold_output() -> HeldOutput {
    for terminal in [std::io::stdout().as_fd(), std::io::stderr().as_fd()] {
        if terminal.is_terminal() {
            restart_output(terminal);
        }
    }
    HeldOutput { _stdout: std::io::stdout().lock(), _stderr: std::io::stderr().lock() }
}

/// `tcflow(TCOON)` on `terminal`, with SIGTTOU blocked: from a background job it would stop
/// cordon.
fn restart_output(terminal: impl AsFd) {
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mask = ttou.thread_swap_mask(SigmaskHow::SIG_BLOCK);
    let _ = tcflow(terminal, FlowArg::TCOON);
    if let Ok(mask) = mask {
        let _ = mask.thread_set_mask();
    }
}

/// When cordon returns after something may have written to the terminal: the reset, on the
/// terminal of its stderr or else its stdout, and — when a command had the terminal and cordon
/// was its foreground job — the settings the shell handed over. Not when its stdout is a
/// pipe: what reads it (a pager) may be showing the terminal now, and the reset would take
/// its screen away.
pub fn on_return() {
    if exposure() == Exposure::Untouched {
        return;
    }
    // A terminal whose output the command stopped would look frozen to the shell.
    let _held = hold_output();
    if is_pipe(&std::io::stdout()) {
        return;
    }
    if exposure() == Exposure::Direct
        && let AtStart { foreground: true, termios: Some(termios) } = at_start()
        && let Ok(tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty")
        && tcgetpgrp(&tty).is_ok_and(|group| group == getpgrp())
    {
        let _ = tcsetattr(&tty, SetArg::TCSADRAIN, &termios);
    }
    let reset = reset(Before::Return);
    // Held above; these locks are the same thread's (reentrant).
    if std::io::stderr().is_terminal() {
        let _ = std::io::stderr().lock().write_all(reset.as_bytes());
    } else if std::io::stdout().is_terminal() {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(reset.as_bytes()).and_then(|()| stdout.flush());
    }
}

fn is_pipe(stream: &impl AsFd) -> bool {
    use nix::sys::stat::{SFlag, fstat};
    fstat(stream.as_fd()).is_ok_and(|stat| {
        let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK
    })
}

/// The controlling terminal as the shell handed it to cordon.
#[derive(Clone)]
struct AtStart {
    /// cordon's group was the terminal's foreground job.
    foreground: bool,
    /// The terminal's settings: the shell's, which a question starts from and cordon returns
    /// with (a command that had the terminal may have left anything in them).
    termios: Option<Termios>,
}

/// Noted once, before anything runs (`Termios` is not `Sync`: behind a mutex).
static START: Mutex<Option<AtStart>> = Mutex::new(None);

/// Notes the terminal as the shell handed it over; call before anything runs.
pub fn note_start() {
    let mut start = START.lock().unwrap_or_else(PoisonError::into_inner);
    if start.is_some() {
        return;
    }
    *start = Some(match std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") {
        Ok(tty) => AtStart {
            foreground: tcgetpgrp(&tty).is_ok_and(|group| group == getpgrp()),
            termios: tcgetattr(&tty).ok(),
        },
        Err(_) => AtStart { foreground: false, termios: None },
    });
}

/// The terminal as noted at start (a terminal cordon did not have in the foreground, when not
/// noted).
fn at_start() -> AtStart {
    let start = START.lock().unwrap_or_else(PoisonError::into_inner);
    start.clone().unwrap_or(AtStart { foreground: false, termios: None })
}

/// The terminal while cordon asks on it: reset, in the foreground, with sane settings; its
/// settings and foreground group restored when dropped.
pub struct Question<'a> {
    tty: &'a File,
    saved: Option<Termios>,
    /// The foreground group cordon took the terminal from.
    foreground: Option<Pid>,
    /// The signal mask before SIGTTOU was blocked.
    mask: Option<SigSet>,
    /// Nothing else of cordon's writes while the question is asked.
    _held: HeldOutput,
}

impl<'a> Question<'a> {
    /// Prepares `tty` for a question and writes the reset; the foreground is taken when cordon
    /// had it at start.
    pub fn begin(tty: &'a File) -> Question<'a> {
        let start = at_start();
        // Output a command stopped (`tcflow(TCOOFF)`) would hold the question back unseen, and
        // keep a write of the relay's from ending.
        restart_output(tty);
        let _held = hold_output();
        let mut question = Question { tty, saved: None, foreground: None, mask: None, _held };
        if start.foreground {
            // A background group's tcsetpgrp and tcsetattr would stop it with SIGTTOU; blocked,
            // they are allowed.
            let mut ttou = SigSet::empty();
            ttou.add(Signal::SIGTTOU);
            question.mask = ttou.thread_swap_mask(SigmaskHow::SIG_BLOCK).ok();
            let own = getpgrp();
            if let Ok(current) = tcgetpgrp(tty)
                && current != own
                && tcsetpgrp(tty, own).is_ok()
            {
                question.foreground = Some(current);
            }
        }
        if let Ok(saved) = tcgetattr(tty) {
            let base = start.termios.unwrap_or_else(|| saved.clone());
            // TCSAFLUSH: what was typed before the question is discarded with the change.
            let _ = tcsetattr(tty, SetArg::TCSAFLUSH, &sane(base));
            question.saved = Some(saved);
        }
        let reset = reset(Before::Words);
        if !reset.is_empty() {
            let mut out: &File = tty;
            let _ = out.write_all(format!("{reset}{FRESH_LINE}").as_bytes());
        }
        question
    }
}

impl Drop for Question<'_> {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = tcsetattr(self.tty, SetArg::TCSADRAIN, saved);
        }
        if let Some(group) = self.foreground {
            // The group may be gone (ESRCH): the terminal then stays cordon's.
            let _ = tcsetpgrp(self.tty, group);
        }
        if let Some(mask) = self.mask {
            let _ = mask.thread_set_mask();
        }
    }
}

/// `termios` as a question needs it: echo and line editing on, `^C` interrupts, a typed CR
/// ends the line, output shown (not discarded) and translated so that lines start at the left.
fn sane(mut termios: Termios) -> Termios {
    termios.local_flags |= LocalFlags::ECHO
        | LocalFlags::ECHOE
        | LocalFlags::ECHOK
        | LocalFlags::ICANON
        | LocalFlags::ISIG
        | LocalFlags::IEXTEN;
    termios.local_flags &= !LocalFlags::FLUSHO;
    termios.input_flags |= InputFlags::ICRNL;
    termios.input_flags &= !(InputFlags::INLCR | InputFlags::IGNCR);
    termios.output_flags |= OutputFlags::OPOST | OutputFlags::ONLCR;
    termios.control_chars[SpecialCharacterIndices::VINTR as usize] = 0x03;
    termios
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reset_turns_every_input_mode_off_and_ends_with_sgr_reset() {
        let reset = reset_sequence(Before::Return, Exposure::Direct, TerminalCharset::Utf8);
        for mode in ["9", "1000", "1001", "1002", "1003", "1004", "1005", "1006", "1015", "1016"] {
            assert!(reset.contains(&format!("\x1b[?{mode}l")), "?{mode}: {reset:?}");
        }
        for off in ["\x1b[?1l", "\x1b>", "\x1b[>4m", "\x1b[<99u", "\x1b[2l", "\x1b[?2004l"] {
            assert!(reset.contains(off), "{off:?}: {reset:?}");
        }
        for on in ["\x1b[!p", "\x1b[?7h", "\x1b[?25h", "\x1b[?1049l", "\x1b[r", "\x1b(B"] {
            assert!(reset.contains(on), "{on:?}: {reset:?}");
        }
        assert!(reset.starts_with("\x1b<\x1b[?2026l"), "{reset:?}");
        assert!(reset.ends_with("\x1b[m"), "{reset:?}");
        assert!(reset.contains("\x1b%G"), "{reset:?}");
        assert!(!reset.contains("\x1b]"), "the user's colours stay on return: {reset:?}");
        let words = reset_sequence(Before::Words, Exposure::Direct, TerminalCharset::Utf8);
        assert!(words.contains(COLOURS) && words.ends_with("\x1b[m"), "{words:?}");
        let relayed = reset_sequence(Before::Words, Exposure::Relayed, TerminalCharset::EightBit);
        assert!(!relayed.contains("\x1b]") && !relayed.contains("\x1b%"), "{relayed:?}");
    }

    #[test]
    fn question_settings_echo_edit_and_interrupt() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut raw = tcgetattr(&pty.slave).unwrap();
        nix::sys::termios::cfmakeraw(&mut raw);
        raw.control_chars[SpecialCharacterIndices::VINTR as usize] = 0;
        raw.local_flags |= LocalFlags::FLUSHO;
        let sane = sane(raw);
        assert!(!sane.local_flags.contains(LocalFlags::FLUSHO));
        assert!(
            sane.local_flags.contains(LocalFlags::ECHO | LocalFlags::ICANON | LocalFlags::ISIG)
        );
        assert!(sane.input_flags.contains(InputFlags::ICRNL));
        assert!(sane.output_flags.contains(OutputFlags::OPOST | OutputFlags::ONLCR));
        assert_eq!(sane.control_chars[SpecialCharacterIndices::VINTR as usize], 0x03);
    }
}
