//! The terminal is the user's: a command's output — relayed through the escape filter, or
//! written to the terminal directly by a command that has it on its stdin — can neither hide
//! cordon's question nor leave a mode, a character set or a scroll region set behind it. Each
//! test runs cordon on a new pseudo-terminal (`tests/helpers/terminal_screen.py`) and rebuilds
//! the screen with the `pyte` VT emulator, so an assertion sees what a person would see, and
//! also reads the bytes, since an emulator does not model every effect.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::util::*;

/// What the terminal showed.
struct Screen {
    report: Value,
    transcript: Vec<u8>,
}

impl Screen {
    fn code(&self) -> i64 {
        self.report["code"].as_i64().unwrap()
    }

    fn rows(&self) -> Vec<(String, Vec<Value>)> {
        let rows = self.report["rows"].as_array().unwrap();
        rows.iter()
            .map(|row| (row[0].as_str().unwrap().to_owned(), row[1].as_array().unwrap().clone()))
            .collect()
    }

    fn text(&self) -> String {
        self.rows().into_iter().map(|(text, _)| text).collect::<Vec<_>>().join("\n")
    }

    /// The transcript as text, escapes and all, for failure messages.
    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.transcript).into_owned()
    }
}

/// Runs the helper with `config` (see its docs) and reads its report.
fn on_terminal(config: &Value) -> Screen {
    let out = Command::new(python())
        .arg(helper_program("terminal_screen.py"))
        .arg(config.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the terminal driver failed: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each byte as one latin-1 character: the exact bytes cordon wrote.
    let transcript =
        report["transcript"].as_str().unwrap().chars().map(|c| u8::try_from(c).unwrap()).collect();
    Screen { report, transcript }
}

/// How the command reaches the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Its stdin is /dev/null: it has no terminal, and its output is relayed through the filter.
    Relayed,
    /// It has the terminal on stdin and writes to it directly (`>&0`).
    Direct,
}

impl Reach {
    /// The shell redirection that writes to the terminal this way.
    fn redirect(self) -> &'static str {
        match self {
            Reach::Relayed => "",
            Reach::Direct => ">&0",
        }
    }
}

/// `cordon ARGS` as `user` on a terminal in `cwd`, answering `answers`.
fn cordon_on_terminal(
    user: User,
    reach: Reach,
    cwd: &Path,
    args: &[&str],
    answers: &[&str],
) -> Screen {
    let home = scratch();
    let mut argv: Vec<String> = match user {
        User::Root => vec![CORDON.to_owned()],
        User::Nobody => ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(["--".to_owned(), nobody_binary().display().to_string()])
            .collect(),
    };
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    on_terminal(&json!({
        "argv": argv,
        "cwd": cwd,
        "env": {"CORDON_HOME": home.path(), "LANG": "C.UTF-8", "TERM": "xterm-256color"},
        "stdin_null": reach == Reach::Relayed,
        "tty_owner": if user == User::Nobody { Some(65534) } else { None },
        "answers": answers,
        "cols": 200,
        "rows": 60,
    }))
}

/// Random and structured streams through the relay, written in small pieces: after each the
/// emulator's title, modes, character set, scroll region and answers are as they were, the
/// words of a structured stream show exactly, and the bytes hold no string, private mode or C1.
#[test]
fn relayed_output_in_any_pieces_leaves_the_terminal_as_it_was() {
    require_pyte!();
    let work = scratch();
    let home = scratch();
    let file = work.path().join("streams.bin");
    let writer = helper_program("terminal_screen.py");
    for seed in [39, 2039] {
        let screen = on_terminal(&json!({
            "argv": [CORDON, "exec", "--yolo", "--", python(), writer, "--write", file],
            "cwd": work.path(),
            "env": {"CORDON_HOME": home.path(), "LANG": "C.UTF-8"},
            "stdin_null": true,
            "cols": 400,
            "rows": 50,
            "fuzz": {"seed": seed, "random": 300, "structured": 150, "file": file},
        }));
        assert_eq!(screen.code(), 0, "seed {seed}");
        assert_eq!(screen.report["streams"], 450, "seed {seed}");
        let failures = screen.report["failures"].as_array().unwrap();
        assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
    }
}

/// The command's fake question, then the attribute that hides what follows.
fn hiding_script(reach: Reach, outside: &Path, hide: &str) -> String {
    let to = reach.redirect();
    format!(
        "printf 'cordon: approval needed: approval policy is untrusted\\n  Stage:    run in the \
         sandbox (workspace-write)\\n  Command:  make test\\nRun it in the sandbox?  [y] yes  \
         [n] no\\n' {to}; printf '{hide}' {to}; echo x > {}/written",
        outside.display()
    )
}

/// The issue's attack: the command prints a harmless-looking question, then conceals (or
/// paints black on black) whatever comes next, and fails as if the sandbox blocked it. cordon's
/// real question — retry WITHOUT the sandbox — must be on screen as written: the reset comes
/// after the command's last sequence, and every character of the question has default
/// attributes. Through the relay and with the command writing to the terminal itself; as root
/// and as uid 65534 (whose terminal it then owns).
#[test]
fn a_question_after_output_that_hides_text_is_seen_as_written() {
    require_pyte!();
    require_sandbox!(1);
    for user in USERS {
        for reach in [Reach::Relayed, Reach::Direct] {
            // Written to the terminal directly, the default colours can be made the same.
            let colours = r"\033[7m\033]10;#000000\007\033]11;#000000\007";
            let hides = match reach {
                Reach::Relayed => vec![r"\033[30;40m", r"\033[8m\033[?25l\033[7m"],
                Reach::Direct => vec![r"\033[30;40m", r"\033[8m\033[?25l\033[7m", colours],
            };
            for hide in hides {
                let (work, outside) = (scratch(), scratch());
                let script = hiding_script(reach, outside.path(), hide);
                let args = ["exec", "-a", "on-failure", "--", "sh", "-c", &script];
                let screen = cordon_on_terminal(user, reach, work.path(), &args, &["n"]);
                let case = format!("{user:?} {reach:?} {hide}");
                assert_eq!(screen.report["asked"], 1, "{case}: {}", screen.shown());
                assert_ne!(screen.code(), 0, "{case}");
                assert!(!outside.path().join("written").exists(), "{case}: retried after a no");
                assert_question_seen_as_written(&screen, &case);
            }
        }
    }
}

fn assert_question_seen_as_written(screen: &Screen, case: &str) {
    let bytes = &screen.transcript;
    let question = rfind(bytes, b"cordon: approval needed")
        .unwrap_or_else(|| panic!("{case}: no question: {}", screen.shown()));
    // The command's last sequence before the question, and what cordon wrote after it.
    let last = rfind(&bytes[..question], b"\x1b[30;40m")
        .or_else(|| rfind(&bytes[..question], b"\x1b[7m"))
        .unwrap_or(0);
    let between = &bytes[last..question];
    // The SGR reset last, then the fresh line (CR LF, which the terminal's settings turn into
    // CR CR LF).
    for reset in [&b"\x1b[!p"[..], b"\x1b[?25h", b"\x1b[?1049l", b"\x1b[m\r\r\n"] {
        assert!(find(between, reset).is_some(), "{case}: no {reset:?} before the question");
    }
    // Colours (which pyte does not model) the command set directly: reset too.
    if let Some(colours) = rfind(&bytes[..question], b"\x1b]11;#000000\x07") {
        let after = &bytes[colours..question];
        for reset in [&b"\x1b]110\x1b\\"[..], b"\x1b]111\x1b\\", b"\x1b]104\x1b\\"] {
            assert!(find(after, reset).is_some(), "{case}: no {reset:?} before the question");
        }
    }
    let rows = screen.rows();
    let first = rows.iter().rposition(|(text, _)| text.starts_with("cordon: approval needed"));
    let first =
        first.unwrap_or_else(|| panic!("{case}: no question on screen:\n{}", screen.text()));
    let question_rows = &rows[first..];
    let end = question_rows.iter().position(|(text, _)| text.starts_with("Run it WITHOUT"));
    let end = end.unwrap_or_else(|| panic!("{case}: no answer line:\n{}", screen.text()));
    let shown: Vec<&str> = question_rows[..=end].iter().map(|(text, _)| text.as_str()).collect();
    assert!(shown.iter().any(|t| t.contains("retry WITHOUT the sandbox")), "{case}: {shown:#?}");
    assert!(shown.iter().any(|t| t.starts_with("  Command:  sh -c ")), "{case}: {shown:#?}");
    let default = json!(["default", "default", false, false, false, false, false, false]);
    for (text, attrs) in &question_rows[..=end] {
        let other = attrs.iter().find(|a| **a != default);
        assert!(other.is_none(), "{case}: {text:?} is drawn with {other:?}");
    }
}

/// The emulator's modes, but SRM (12, which cordon sets to its usual "no local echo") and
/// origin mode (6 << 5 as pyte numbers a private mode, which cordon ends with DECSTR): pyte
/// models neither.
fn modes(state: &Value) -> Vec<Value> {
    let unmodelled = [json!(12), json!(6 << 5)];
    let modes = state["modes"].as_array().unwrap().iter();
    modes.filter(|m| !unmodelled.contains(m)).cloned().collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// A command that has the terminal leaves its settings raw (no echo, no line editing, Enter
/// not read as a line end) and its output stopped (`tcflow(TCOOFF)`, which would hold any
/// question back unseen) after printing a harmless-looking question: cordon's own question is
/// shown, with default attributes, and answered with Enter as a terminal sends it (CR) — no
/// and yes alike; and cordon returns the terminal with the settings the shell handed it.
#[test]
fn a_question_is_seen_and_answered_whatever_the_command_left_in_the_terminals_settings() {
    require_pyte!();
    require_sandbox!(1);
    let py = python();
    for answer in ["n", "y"] {
        let (work, outside, home) = (scratch(), scratch(), scratch());
        let script = format!(
            "printf 'Run it in the sandbox?  [y] yes  [n] no\n'; {py} -c 'import termios, tty;              tty.setraw(0); termios.tcflow(0, termios.TCOOFF)'; echo x > {}/written",
            outside.path().display()
        );
        let screen = on_terminal(&json!({
            "argv": [CORDON, "exec", "-a", "on-failure", "--", "sh", "-c", script],
            "cwd": work.path(),
            "env": {"CORDON_HOME": home.path(), "LANG": "C.UTF-8", "TERM": "xterm"},
            "answers": [answer],
            "enter": "\r",
            "timeout": 30,
        }));
        assert_eq!(screen.report["asked"], 1, "{answer}: {}", screen.shown());
        assert_question_seen_as_written(&screen, answer);
        // And cordon returned the terminal with the settings it was handed.
        let settings = json!({"echo": true, "icanon": true, "opost": true, "icrnl": true});
        assert_eq!(screen.report["termios"], settings, "{answer}");
        let written = outside.path().join("written").exists();
        assert_eq!(written, answer == "y", "{answer}: {}", screen.shown());
    }
}

/// A command that stops the terminal's output and then prints does not keep cordon (whose
/// relay would wait on the stopped terminal for good) from ending, and what it printed shows.
#[test]
fn a_command_that_stops_the_terminals_output_does_not_hang_cordon() {
    require_pyte!();
    let (work, home) = (scratch(), scratch());
    let script = format!(
        "{} -c 'import termios; termios.tcflow(0, termios.TCOOFF)'; echo printed-after",
        python()
    );
    let screen = on_terminal(&json!({
        "argv": [CORDON, "exec", "--yolo", "--", "sh", "-c", script],
        "cwd": work.path(),
        "env": {"CORDON_HOME": home.path(), "LANG": "C.UTF-8", "TERM": "xterm"},
        "timeout": 20,
    }));
    assert_eq!(screen.code(), 0, "{}", screen.shown());
    assert!(screen.text().lines().any(|l| l == "printed-after"), "{}", screen.text());
}

/// Modes and states a command can set, each with the sequence that sets it and the one that
/// must come after it before cordon returns (the emulator does not model all of them).
const MODES: &[(&str, &str, &str)] = &[
    ("X10 mouse", "\x1b[?9h", "\x1b[?9l"),
    ("mouse clicks", "\x1b[?1000h", "\x1b[?1000l"),
    ("mouse drags", "\x1b[?1002h", "\x1b[?1002l"),
    ("mouse motion", "\x1b[?1003h", "\x1b[?1003l"),
    ("UTF-8 mouse", "\x1b[?1005h", "\x1b[?1005l"),
    ("SGR mouse", "\x1b[?1006h", "\x1b[?1006l"),
    ("urxvt mouse", "\x1b[?1015h", "\x1b[?1015l"),
    ("focus reports", "\x1b[?1004h", "\x1b[?1004l"),
    ("cursor keys", "\x1b[?1h", "\x1b[?1l"),
    ("keypad", "\x1b=", "\x1b>"),
    ("modifyOtherKeys", "\x1b[>4;2m", "\x1b[>4m"),
    ("kitty keyboard", "\x1b[>1u", "\x1b[<99u"),
    ("keyboard lock (KAM)", "\x1b[2h", "\x1b[2l"),
    ("insert", "\x1b[4h", "\x1b[4l"),
    ("new line (LNM)", "\x1b[20h", "\x1b[20l"),
    ("bracketed paste", "\x1b[?2004h", "\x1b[?2004l"),
    ("synchronized output", "\x1b[?2026h", "\x1b[?2026l"),
    ("alternate screen", "\x1b[?1049h", "\x1b[?1049l"),
    ("hidden cursor", "\x1b[?25l", "\x1b[?25h"),
    ("no autowrap", "\x1b[?7l", "\x1b[?7h"),
    ("origin mode", "\x1b[?6h", "\x1b[!p"),
    ("reverse video", "\x1b[?5h", "\x1b[?5l"),
    ("scroll region", "\x1b[5;10r", "\x1b[r"),
    ("G0 line drawing", "\x1b(0", "\x1b(B"),
    ("G1 line drawing", "\x1b)0", "\x1b)B"),
    ("G1 shifted in", "\x0e", "\x0f"),
    ("not UTF-8", "\x1b%@", "\x1b%G"),
    ("concealed", "\x1b[8m", "\x1b[m"),
    ("printer controller", "\x1b[5i", "\x1b[4i"),
    ("status line", "\x1b[1$}", "\x1b[0$}"),
    ("VT52 mode", "\x1b[?2l", "\x1b<"),
];

/// Every mode of [`MODES`] a command sets is off again when cordon returns — set by writing to
/// the terminal it was handed, or attempted through the relay (where nothing of it passes).
#[test]
fn every_mode_a_command_sets_is_off_when_cordon_returns() {
    require_pyte!();
    let all: String = MODES.iter().map(|(_, set, _)| *set).collect();
    let printf: String = all.chars().map(|c| format!("\\{:03o}", u32::from(c))).collect();
    for reach in [Reach::Direct, Reach::Relayed] {
        let work = scratch();
        let script = format!("printf '{printf}' {}", reach.redirect());
        let args = ["exec", "--yolo", "--", "sh", "-c", &script];
        let screen = cordon_on_terminal(User::Root, reach, work.path(), &args, &[]);
        assert_eq!(screen.code(), 0, "{reach:?}: {}", screen.shown());
        let bytes = &screen.transcript;
        for (name, set, reset) in MODES {
            let (set, reset) = (set.as_bytes(), reset.as_bytes());
            // SGR passes the filter by design: the reset handles it.
            let relayed = set.starts_with(b"\x1b[8");
            match (reach, rfind(bytes, set)) {
                (Reach::Relayed, Some(_)) if relayed => {}
                (Reach::Relayed, Some(at)) => {
                    panic!("{name}: relayed at {at}: {:?}", screen.shown())
                }
                (Reach::Relayed, None) => {}
                (Reach::Direct, None) => panic!("{name}: the command did not set it"),
                (Reach::Direct, Some(at)) => assert!(
                    rfind(bytes, reset).is_some_and(|r| r > at),
                    "{name}: still set when cordon returned: {:?}",
                    screen.shown()
                ),
            }
        }
        // The emulator's own view: modes, margins, character sets as on a fresh terminal.
        let (state, initial) = (&screen.report["state"], &screen.report["initial"]);
        assert_eq!(modes(state), modes(initial), "{reach:?}");
        for key in ["margins", "charset", "g0", "utf8", "answers", "title"] {
            assert_eq!(state[key], initial[key], "{reach:?}: {key}");
        }
        // G1 is ASCII after cordon's reset (pyte starts it as line drawing, as the Linux
        // console does); G0 is the one in use either way.
        assert!(state["g1"] == "ascii" || state["g1"] == initial["g1"], "{reach:?}: {state}");
    }
}

/// A stand-in for `ssh` that runs this build's `cordon executor --serve-remote` here, and says
/// on the way what a hostile far end could: escape sequences on ssh's stderr (a clipboard
/// write, a title, an erased line, a mouse mode, a line with no end), a line on the protocol's
/// stream that is not the protocol, and, with `STANDIN_ERROR` set, an error message full of
/// them instead of the command's result.
fn stand_in_ssh(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = format!(
        r#"#!{python}
import os, subprocess, sys, threading
err = sys.stderr.buffer
err.write(b"Warning: Permanently added '127.0.0.1' (ED25519) to the list of known hosts.\r\n")
err.write(b"\x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;SSH-TITLE\x07\r\x1b[2Kssh-erased\x1b[?1000h\r\n")
err.write(b"no end of line")
err.flush()
out = sys.stdout.buffer
out.write(b"\x1b]2;NOISE-TITLE\x07\x1b[8mnot the protocol\r\x1b[2K\n")
out.flush()
far = subprocess.Popen(["{cordon}", "executor", "--serve-remote"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE)
def forward():
    for line in sys.stdin.buffer:
        far.stdin.write(line)
        far.stdin.flush()
    far.stdin.close()
threading.Thread(target=forward, daemon=True).start()
for line in far.stdout:
    if os.environ.get("STANDIN_ERROR") and line.startswith(b'{{"type":"resolved_response"'):
        request = line.split(b'"requestId":', 1)[1].split(b",", 1)[0]
        line = (b'{{"type":"resolved_response","requestId":' + request + b',"outcome":'
                b'{{"status":"error","message":"\\u001b]2;ERR-TITLE\\u0007\\u001b[8mhidden'
                b'\\r\\u001b[2Kforged"}}}}\n')
    out.write(line)
    out.flush()
far.wait()
"#,
        python = python(),
        cordon = CORDON,
    );
    let path = dir.join("ssh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `cordon exec --host 127.0.0.1` through [`stand_in_ssh`] on a terminal, answering `answers`.
fn remote_on_terminal(args: &[&str], env: &[(&str, &str)], answers: &[&str]) -> Screen {
    let (home, work, bin) = (scratch(), scratch(), scratch());
    let ssh = stand_in_ssh(bin.path());
    let mut argv: Vec<String> = [CORDON, "exec", "--host", "127.0.0.1", "--ssh-program"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    argv.extend([ssh.display().to_string(), "-C".to_owned(), work.path().display().to_string()]);
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    let mut vars = json!({"CORDON_HOME": home.path(), "LANG": "C.UTF-8", "TERM": "xterm"});
    for (key, value) in env {
        vars[*key] = json!(value);
    }
    on_terminal(&json!({
        "argv": argv,
        "cwd": work.path(),
        "env": vars,
        "answers": answers,
        "cols": 200,
        "rows": 60,
    }))
}

/// What a far end writes — on ssh's stderr, as a line that is not the protocol, in the
/// command's output — reaches the terminal as text: no title, clipboard write, mode or erased
/// line; the question about the command names the host it runs on, and shows with default
/// attributes.
#[test]
fn far_end_words_reach_the_terminal_as_text_and_the_question_names_the_host() {
    require_pyte!();
    // Not known-safe (it writes a file), so it is asked about.
    let printf = r"printf 'out\033]2;CMD-TITLE\007\033[?1000h\033[8m\n'; touch made-there";
    let args = ["-a", "untrusted", "-s", "danger-full-access", "--", "sh", "-c", printf];
    let screen = remote_on_terminal(&args, &[], &["y"]);
    let text = screen.text();
    assert_eq!(screen.code(), 0, "{}", screen.shown());
    assert_eq!(screen.report["asked"], 1, "{text}");
    assert!(text.contains("  Host:     127.0.0.1 (the command runs there)"), "{text}");
    let rows = screen.rows();
    let first = rows.iter().position(|(t, _)| t.starts_with("cordon: approval needed")).unwrap();
    let last = rows.iter().position(|(t, _)| t.starts_with("Run it WITHOUT")).unwrap();
    let default = json!(["default", "default", false, false, false, false, false, false]);
    for (text, attrs) in &rows[first..=last] {
        let other = attrs.iter().find(|a| **a != default);
        assert!(other.is_none(), "{text:?} is drawn with {other:?}");
    }
    for line in [
        "127.0.0.1: Warning: Permanently added '127.0.0.1' (ED25519) to the list of known hosts.",
        r"127.0.0.1: \x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;SSH-TITLE\x07\r\x1b[2Kssh-erased\x1b[?1000h",
        "127.0.0.1: no end of line",
        r"cordon: 127.0.0.1: not a protocol line: \x1b]2;NOISE-TITLE\x07\x1b[8mnot the protocol\r\x1b[2K",
    ] {
        assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
    }
    assert_far_end_changed_nothing(&screen);
}

/// An error message from the far end is shown as text, and the terminal keeps its state.
#[test]
fn a_far_ends_error_message_reaches_the_terminal_as_text() {
    require_pyte!();
    let screen = remote_on_terminal(&["--yolo", "--", "true"], &[("STANDIN_ERROR", "1")], &[]);
    let text = screen.text();
    assert_eq!(screen.code(), 125, "{}", screen.shown());
    let line = r"cordon: 127.0.0.1: \x1b]2;ERR-TITLE\x07\x1b[8mhidden\r\x1b[2Kforged";
    assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
    assert_far_end_changed_nothing(&screen);
}

fn assert_far_end_changed_nothing(screen: &Screen) {
    let (state, initial) = (&screen.report["state"], &screen.report["initial"]);
    for key in ["title", "icon_name", "margins", "charset", "g0", "utf8", "answers"] {
        assert_eq!(state[key], initial[key], "{key}: {}", screen.shown());
    }
    assert_eq!(modes(state), modes(initial), "{}", screen.shown());
    // No string and no private mode set reached the terminal at all (the reset only turns
    // modes off).
    assert!(find(&screen.transcript, b"\x1b]").is_none(), "{:?}", screen.shown());
    assert!(find(&screen.transcript, b"\x1b[?1000h").is_none(), "{:?}", screen.shown());
    assert!(find(&screen.transcript, b"\x1b[2K").is_none(), "{:?}", screen.shown());
}

/// Log lines (`-v`) show what a workspace's rule says escaped, as cordon's messages do.
#[test]
fn log_lines_are_escaped_like_cordons_messages() {
    let (home, work) = (scratch(), scratch());
    std::fs::create_dir(work.path().join(".cordon")).unwrap();
    std::fs::write(
        work.path().join(".cordon/rules.toml"),
        "[[rule]]\nprefix = [\"touch\"]\ndecision = \"forbidden\"\n\
         justification = \"fine\\r\\u001b]0;PWNED\\u0007\\u001b[2Kall good\"\n",
    )
    .unwrap();
    let run: Run = without_terminal(CORDON)
        .args(["-v", "exec", "--", "touch", "PWNED"])
        .current_dir(work.path())
        .env("CORDON_HOME", home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    let logged = run.stderr.lines().find(|l| l.contains("DEBUG") && l.contains("refused"));
    let logged = logged.unwrap_or_else(|| panic!("no refusal logged: {}", run.stderr));
    assert!(logged.contains(r"fine\r\x1b]0;PWNED\x07\x1b[2Kall good"), "{logged}");
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}', '\r']), "{:?}", run.stderr);
}
