//! Approval prompts show exactly what will run: `cordon exec -a untrusted` on a
//! pseudo-terminal, the screen rebuilt by a VT emulator (Python's `pyte`), so an assertion sees
//! what a person would see, not the bytes that were written.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::util::*;

/// Runs `argv` on a fresh pseudo-terminal, writes `typeahead` at once (before any prompt),
/// answers each `> ` prompt with the next of `answers`, and feeds the whole transcript to a
/// `pyte` screen. Also feeds `raw` (the hostile text as it would look unescaped) to a second
/// screen, so a test can show that the emulator would indeed have hidden it.
const DRIVER: &str = r#"
import json, os, pty, sys, time, signal
import pyte
cfg = json.loads(sys.argv[1])
answers = list(cfg["answers"])
pid, fd = pty.fork()
if pid == 0:
    os.chdir(cfg["cwd"])
    os.environ["CORDON_HOME"] = cfg["home"]
    os.execv(cfg["argv"][0], cfg["argv"])
if cfg["typeahead"]:
    os.write(fd, cfg["typeahead"].encode())
out = b""
deadline = time.time() + 60
while time.time() < deadline:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
    if out.rstrip().endswith(b">"):
        if not answers:
            break
        # cordon discards input typed before its question: give it time to finish asking.
        time.sleep(0.3)
        os.write(fd, answers.pop(0).encode() + b"\n")
done, status = os.waitpid(pid, os.WNOHANG)
if done == 0:
    # Still asking after the last answer, or past the deadline.
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
def screen(data):
    s = pyte.Screen(cfg["cols"], cfg["rows"])
    pyte.ByteStream(s).feed(data)
    return [line.rstrip() for line in s.display]
print(json.dumps({
    "code": os.waitstatus_to_exitcode(status),
    "screen": screen(out),
    "raw_screen": screen(cfg["raw"].encode()),
}))
"#;

struct Shown {
    code: i64,
    screen: String,
    raw_screen: String,
}

/// `cordon exec -a untrusted -- sh -c script` in `cwd`, as a person at a terminal sees it.
fn prompt_for(cwd: &Path, script: &str, typeahead: &str, answers: &[&str]) -> Shown {
    let home = scratch();
    let config = json!({
        "argv": [CORDON, "exec", "-a", "untrusted", "--", "sh", "-c", script],
        "cwd": cwd,
        "home": home.path(),
        "typeahead": typeahead,
        "answers": answers,
        // Wide enough that a 2000-character command stays on one row.
        "cols": 2400,
        "rows": 60,
        "raw": script,
    });
    let out = Command::new(python())
        .arg("-c")
        .arg(DRIVER)
        .arg(config.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the terminal driver failed: {stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = |key: &str| {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    };
    Shown {
        code: v["code"].as_i64().unwrap(),
        screen: lines("screen"),
        raw_screen: lines("raw_screen"),
    }
}

/// One hostile command per class: the script, the escaped form the screen must show, and
/// whether a terminal shown the raw bytes would hide `touch PWNED` or the hidden payload.
struct Case {
    name: &'static str,
    script: &'static str,
    escaped: &'static str,
    raw_hides: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        name: "carriage return",
        script: "touch PWNED\recho harmless",
        escaped: r"sh -c $'touch PWNED\recho harmless'",
        raw_hides: Some("touch PWNED"),
    },
    Case {
        name: "erase line",
        script: "touch PWNED\x1b[2K\recho harmless",
        escaped: r"sh -c $'touch PWNED\x1b[2K\recho harmless'",
        raw_hides: Some("touch PWNED"),
    },
    Case {
        name: "cursor up",
        script: "touch PWNED #\n\x1b[1A\x1b[2Kecho harmless",
        escaped: r"sh -c $'touch PWNED #\n\x1b[1A\x1b[2Kecho harmless'",
        raw_hides: Some("touch PWNED"),
    },
    Case {
        name: "backspace",
        script: "touch PWNED\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08echo  harmless",
        escaped: r"sh -c $'touch PWNED\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08echo  harmless'",
        raw_hides: Some("touch PWNED"),
    },
    Case {
        name: "OSC 8 hyperlink",
        script: "touch PWNED \x1b]8;;http://evil.example/\x1b\\harmless\x1b]8;;\x1b\\",
        escaped: r"sh -c $'touch PWNED \x1b]8;;http://evil.example/\x1b\\harmless\x1b]8;;\x1b\\'",
        raw_hides: Some("evil.example"),
    },
    Case {
        name: "right-to-left override",
        script: "touch PWNED # \u{202e}txt.sgol",
        escaped: r"sh -c $'touch PWNED # \u202etxt.sgol'",
        raw_hides: None,
    },
    Case {
        name: "zero-width space",
        script: "touch PWNED\u{200b}",
        escaped: r"sh -c $'touch PWNED\u200b'",
        raw_hides: None,
    },
];

#[test]
fn hostile_characters_are_shown_escaped_on_the_screen_and_no_leaves_no_file() {
    require_pyte!();
    for case in CASES {
        let dir = scratch();
        let shown = prompt_for(dir.path(), case.script, "", &["n"]);
        let name = case.name;
        assert!(
            shown.screen.contains(&format!("Command:  {}", case.escaped)),
            "{name}: the screen does not show the escaped command:\n{}",
            shown.screen
        );
        assert!(
            shown.screen.contains("WARNING:  the command contains characters"),
            "{name}: no warning:\n{}",
            shown.screen
        );
        if let Some(hidden) = case.raw_hides {
            // The emulator is a fair judge: printed raw, the same text hides its payload.
            assert!(!shown.raw_screen.contains(hidden), "{name}: raw:\n{}", shown.raw_screen);
        }
        assert_eq!(shown.code, 125, "{name}:\n{}", shown.screen);
        assert!(!dir.path().join("PWNED").exists(), "{name}: ran after a no");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "{name}: a no left a file behind"
        );
    }
}

#[test]
fn a_long_command_shows_head_tail_and_the_elided_count_and_v_shows_all() {
    require_pyte!();
    let dir = scratch();
    let pad = "x".repeat(10_000);
    let script = format!("touch PWNED; : {pad} middle-marker {pad}; echo tail-marker");
    // The rendering is `sh -c '<script>'`; the prompt keeps 1000 characters at each end.
    let elided = "sh -c ''".len() + script.len() - 2000;

    let shown = prompt_for(dir.path(), &script, "", &["n"]);
    assert!(shown.screen.contains("Command:  sh -c 'touch PWNED; : xxx"), "{}", shown.screen);
    assert!(shown.screen.contains("xxx; echo tail-marker'"), "{}", shown.screen);
    assert!(shown.screen.contains(&format!("xxx … [{elided} bytes not shown] … xxx")));
    assert!(shown.screen.contains(&format!("{elided} bytes of the command are not shown")));
    assert!(shown.screen.contains("[v] view the whole command"), "{}", shown.screen);
    assert!(!shown.screen.contains("middle-marker"), "{}", shown.screen);
    assert_eq!(shown.code, 125);

    let viewed = prompt_for(dir.path(), &script, "", &["v", "n"]);
    assert!(viewed.screen.contains("middle-marker"), "[v] did not show the middle");
    assert_eq!(viewed.code, 125, "{}", viewed.screen);
    assert!(!dir.path().join("PWNED").exists());
}

#[test]
fn typed_ahead_yes_does_not_approve() {
    require_pyte!();
    require_sandbox!(1);
    let dir = scratch();
    let shown = prompt_for(dir.path(), "touch PWNED", "y\n", &["n"]);
    assert_eq!(shown.code, 125, "{}", shown.screen);
    assert!(!dir.path().join("PWNED").exists(), "a y typed before the prompt approved it");

    // The same run answered yes after the prompt creates the file: the check above can fail.
    let shown = prompt_for(dir.path(), "touch PWNED", "", &["y"]);
    assert_eq!(shown.code, 0, "{}", shown.screen);
    assert!(dir.path().join("PWNED").exists());
}

/// `cordon exec ARGS` in `cwd` with no terminal and `CORDON_HOME` at `home`.
fn exec_without_terminal(home: &Path, cwd: &Path, args: &[&str]) -> Run {
    without_terminal(CORDON)
        .arg("exec")
        .args(args)
        .current_dir(cwd)
        .env("CORDON_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

#[test]
fn the_refused_line_escapes_what_a_rule_quotes() {
    let (home, work) = (scratch(), scratch());
    std::fs::create_dir(work.path().join(".cordon")).unwrap();
    std::fs::write(
        work.path().join(".cordon/rules.toml"),
        "[[rule]]\nprefix = [\"touch\"]\ndecision = \"forbidden\"\n\
         justification = \"fine\\r\\u001b[2Kall good\"\n",
    )
    .unwrap();
    let run = exec_without_terminal(home.path(), work.path(), &["--", "touch", "PWNED"]);
    assert_eq!(run.code, Some(125), "{}", run.stderr);
    assert!(run.stderr.contains(r"forbids this command: fine\r\x1b[2Kall good"), "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
}

#[test]
fn exec_json_keeps_the_raw_argv_and_adds_its_display() {
    let (home, work) = (scratch(), scratch());
    let run = exec_without_terminal(
        home.path(),
        work.path(),
        &["--yolo", "--json", "--", "true", "a\rb", ""],
    );
    run.assert_ok();
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["command"], json!(["true", "a\rb", ""]));
    assert_eq!(v["command_display"], r"true $'a\rb' ''");
}

/// A question to run a command WITHOUT the sandbox (untrusted under danger-full-access) offers
/// no "always allow": the rule would run it unsandboxed from then on without a question.
#[test]
fn no_always_allow_on_a_question_to_run_without_the_sandbox() {
    let home = scratch();
    let work = scratch();
    let args = ["-a", "untrusted", "-s", "danger-full-access", "--", "git", "commit", "--dry-run"];
    let (transcript, _) = super::exec::exec_on_terminal(home.path(), work.path(), &args, &["a"]);
    assert!(transcript.contains("WITHOUT the sandbox"), "{transcript}");
    assert!(!transcript.contains("always allow"), "{transcript}");
    assert!(!home.path().join("rules.toml").exists(), "an allow rule was written: {transcript}");
    // The same command in the sandbox may be allowed always.
    let args = ["-a", "untrusted", "--", "git", "commit", "--dry-run"];
    let (transcript, _) = super::exec::exec_on_terminal(home.path(), work.path(), &args, &["n"]);
    assert!(transcript.contains("always allow `git commit`"), "{transcript}");
}
