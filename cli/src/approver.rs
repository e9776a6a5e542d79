//! The terminal approver: asks on the controlling terminal (`/dev/tty`), never on stdin or
//! stdout, so it works when they are redirected and a command's output cannot answer for the
//! user. Without a terminal every question is answered "no" with a line saying how to proceed.
//!
//! What it shows comes from one renderer ([`cordon_policies::render_argv`]): the argv quoted
//! word by word, every character a terminal would hide or obey (carriage returns, escape
//! sequences, bidi overrides, zero-width code points) as a visible escape, and a long command as
//! its head and tail with `[v]` to see all of it. Input typed before the question is discarded,
//! so a `y` typed ahead (or pushed into the terminal earlier) never answers it.
//!
//! The terminal is reset before the question (`terminal.rs`): nothing a command printed or set
//! on it — concealed text, colours, a scroll region, the alternate screen — can hide the
//! question or make it read otherwise, and it is asked with echo and line editing on, in the
//! foreground. A command that runs on another machine is asked about with that machine's name.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};

use cordon_exec_core::{ApprovalAnswer, ApprovalRequest, ApprovalStage, Approver, AskCause};
use cordon_policies::{
    DISPLAY_LIMIT, Rendered, SandboxMode, abbreviate, render_argv, render_bytes, render_text,
};
use nix::sys::termios::{FlushArg, tcflush};

use crate::terminal::Question;

pub struct TerminalApprover;

impl TerminalApprover {
    /// Whether there is a controlling terminal to ask on.
    pub fn can_ask() -> bool {
        std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").is_ok()
    }
}

impl Approver for TerminalApprover {
    fn ask(&self, request: &ApprovalRequest) -> impl std::future::Future<Output = ApprovalAnswer> {
        std::future::ready(ask_on_tty(request))
    }
}

fn ask_on_tty(request: &ApprovalRequest) -> ApprovalAnswer {
    let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty");
    let Ok(tty) = tty else {
        crate::terminal::say(&[format!(
            "approval needed ({}) but there is no terminal to ask on; answering no. {}",
            request.reason,
            without_a_terminal(request.cause)
        )]);
        return ApprovalAnswer::Denied;
    };
    let _question = Question::begin(&tty);
    let prompt = Prompt::new(request);
    let mut text = prompt.text();
    loop {
        match ask_once(&tty, &text, &prompt) {
            Choice::Answer(answer) => return answer,
            Choice::View => {
                text =
                    format!("\nThe whole command:\n{}\n{}", prompt.command.text, prompt.question());
            }
        }
    }
}

/// What can work when nobody can answer a question caused by `cause`.
fn without_a_terminal(cause: AskCause) -> &'static str {
    match cause {
        AskCause::Rule => {
            "A prompt rule asks under every approval policy and refuses under -a never: run it \
             from a terminal to answer, or change the rule (cordon policy check -- CMD names it)"
        }
        AskCause::Escalation => {
            "A run outside the sandbox needs an answer: run it from a terminal, or run it in the \
             sandbox (no escalation)"
        }
        AskCause::Untrusted => {
            "To run it in the sandbox without a question: -a on-request or -a never, or an allow \
             rule for it in $CORDON_HOME/rules.toml"
        }
        AskCause::Retry => {
            "Running it again without the sandbox needs an answer: run it from a terminal, or \
             give the sandbox what it needs (the lines above say what was blocked)"
        }
    }
}

/// Discards what was typed before the question, writes `text`, reads one line. Any failure
/// is a no.
fn ask_once(mut tty: &File, text: &str, prompt: &Prompt) -> Choice {
    // Keys pressed before the question was on screen were not an answer to it. Flushed just
    // before writing it, not after: an answer typed the moment the question appears (a fast
    // typist, a loaded machine) must not be thrown away.
    if tcflush(tty, FlushArg::TCIFLUSH).is_err() {
        return Choice::Answer(ApprovalAnswer::Denied);
    }
    if tty.write_all(text.as_bytes()).and_then(|()| tty.flush()).is_err() {
        return Choice::Answer(ApprovalAnswer::Denied);
    }
    let mut line = String::new();
    match BufReader::new(tty).read_line(&mut line) {
        Ok(n) if n > 0 => prompt.parse(&line),
        _ => Choice::Answer(ApprovalAnswer::Denied),
    }
}

/// An answer, or a request to see the whole command first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Answer(ApprovalAnswer),
    View,
}

/// Everything the prompt shows, rendered once.
struct Prompt<'a> {
    request: &'a ApprovalRequest,
    command: Rendered,
    /// The command as the prompt shows it: whole, or head and tail.
    shown: String,
    elided_bytes: usize,
    /// The rendered prefix `[a]` would allow, when it is offered.
    always: Option<String>,
}

impl<'a> Prompt<'a> {
    fn new(request: &'a ApprovalRequest) -> Self {
        let command = render_argv(&request.command);
        let cut = abbreviate(&command.text, DISPLAY_LIMIT);
        let always = request.prefix.as_ref().map(|prefix| render_argv(prefix).text);
        Prompt { request, command, shown: cut.text, elided_bytes: cut.elided_bytes, always }
    }

    fn unsandboxed(&self) -> bool {
        self.request.stage == ApprovalStage::RetryWithoutSandbox
            || self.request.sandbox_mode == SandboxMode::DangerFullAccess
    }

    fn text(&self) -> String {
        let request = self.request;
        let reason = render_text(&request.reason);
        let cwd = render_bytes(std::os::unix::ffi::OsStrExt::as_bytes(request.cwd.as_os_str()));
        let evidence: Vec<Rendered> = request.evidence.iter().map(|l| render_text(l)).collect();
        let mode = request.sandbox_mode.as_str();
        let mut out = format!("\ncordon: approval needed: {}\n", reason.text);
        match (request.stage, self.unsandboxed()) {
            (ApprovalStage::BeforeRun, false) => {
                out += &format!("  Stage:    run in the sandbox ({mode})\n");
            }
            (ApprovalStage::BeforeRun, true) => {
                out += &format!(
                    "  Stage:    run WITHOUT the sandbox ({mode}): full access to your files and \
                     the network\n"
                );
            }
            (ApprovalStage::RetryWithoutSandbox, _) => {
                out += &format!(
                    "  Stage:    retry WITHOUT the sandbox ({mode}): full access to your files \
                     and the network\n  Note:     the first attempt already ran in the sandbox \
                     and had its effects; this runs the command a second time\n"
                );
                if !evidence.is_empty() {
                    out += "  Evidence: what made cordon think the sandbox blocked it:\n";
                    for line in &evidence {
                        out += &format!("            | {}\n", line.text);
                    }
                }
            }
            (ApprovalStage::RetryWithDirectWrites, _) => {
                out += &format!(
                    "  Stage:    run again in the sandbox ({mode}), writing the workspace \
                     directly instead of through the write gate\n  Note:     the first attempt \
                     already ran and its changes were applied; this runs the command a second \
                     time\n"
                );
                for line in &evidence {
                    out += &format!("            | {}\n", line.text);
                }
            }
        }
        if let Some(host) = &request.host {
            out += &format!("  Host:     {} (the command runs there)\n", render_text(host).text);
        }
        out += &format!("  In:       {}\n  Command:  {}\n", cwd.text, self.shown);
        let mut hidden = Vec::new();
        if self.command.hidden_characters {
            hidden.push("the command");
        }
        if cwd.hidden_characters {
            hidden.push("the directory");
        }
        if reason.hidden_characters || evidence.iter().any(|l| l.hidden_characters) {
            hidden.push("the reason or evidence");
        }
        if !hidden.is_empty() {
            out += &format!(
                "  WARNING:  {} contains characters a terminal would hide or obey (carriage \
                 returns, escape sequences, bidi or invisible code points); they are shown as \
                 escapes (\\r, \\x1b, \\u202e, …). Read it carefully.\n",
                hidden.join(", ")
            );
        }
        if self.elided_bytes > 0 {
            out += &format!(
                "  Long:     {} bytes of the command are not shown above; [v] shows all of it\n",
                self.elided_bytes
            );
        }
        out + &self.question()
    }

    /// The last lines: the question and the answers offered.
    fn question(&self) -> String {
        let run = if self.unsandboxed() {
            "Run it WITHOUT the sandbox?"
        } else {
            "Run it in the sandbox?"
        };
        let always = match &self.always {
            Some(prefix) => format!("[a] always allow `{prefix}`  "),
            None => String::new(),
        };
        let view = if self.elided_bytes > 0 { "[v] view the whole command  " } else { "" };
        format!("{run}  [y] yes  [s] yes for this session  {always}{view}[n] no\n> ")
    }

    /// Anything but a clear answer that was offered is a no.
    fn parse(&self, line: &str) -> Choice {
        let answer = match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => ApprovalAnswer::Approved,
            "s" | "session" => ApprovalAnswer::ApprovedForSession,
            "a" | "always" if self.always.is_some() => ApprovalAnswer::AlwaysAllowPrefix,
            "v" | "view" if self.elided_bytes > 0 => return Choice::View,
            _ => ApprovalAnswer::Denied,
        };
        Choice::Answer(answer)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn request(command: &[&str], stage: ApprovalStage, prefix: Option<&[&str]>) -> ApprovalRequest {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        ApprovalRequest {
            command: command.iter().map(std::ffi::OsString::from).collect(),
            cwd: PathBuf::from("/work"),
            interaction: cordon_exec_core::Interaction::Batch,
            reason: "because".into(),
            stage,
            sandbox_mode: match stage {
                ApprovalStage::BeforeRun | ApprovalStage::RetryWithDirectWrites => {
                    SandboxMode::WorkspaceWrite
                }
                ApprovalStage::RetryWithoutSandbox => SandboxMode::DangerFullAccess,
            },
            evidence: match stage {
                ApprovalStage::BeforeRun => Vec::new(),
                ApprovalStage::RetryWithoutSandbox => vec!["x: Permission denied\u{1b}[2K".into()],
                ApprovalStage::RetryWithDirectWrites => vec!["Invalid cross-device link".into()],
            },
            prefix: prefix.map(words),
            host: None,
            cause: match stage {
                ApprovalStage::BeforeRun => AskCause::Untrusted,
                ApprovalStage::RetryWithoutSandbox | ApprovalStage::RetryWithDirectWrites => {
                    AskCause::Retry
                }
            },
        }
    }

    #[test]
    fn only_clear_offered_answers_approve() {
        let with_prefix = request(&["touch", "f"], ApprovalStage::BeforeRun, Some(&["touch"]));
        let prompt = Prompt::new(&with_prefix);
        assert_eq!(prompt.parse("y\n"), Choice::Answer(ApprovalAnswer::Approved));
        assert_eq!(prompt.parse(" S "), Choice::Answer(ApprovalAnswer::ApprovedForSession));
        assert_eq!(prompt.parse("a"), Choice::Answer(ApprovalAnswer::AlwaysAllowPrefix));
        for no in ["n", "", "yess", "no", "\u{1b}[A", "v"] {
            assert_eq!(prompt.parse(no), Choice::Answer(ApprovalAnswer::Denied), "{no:?}");
        }
        let without = request(&["sh", "-c", "x"], ApprovalStage::BeforeRun, None);
        assert_eq!(Prompt::new(&without).parse("a"), Choice::Answer(ApprovalAnswer::Denied));
    }

    #[test]
    fn the_prompt_escapes_the_command_and_warns() {
        let r = request(&["sh", "-c", "touch P\r\u{1b}[2Kecho ok"], ApprovalStage::BeforeRun, None);
        let text = Prompt::new(&r).text();
        assert!(text.contains(r"Command:  sh -c $'touch P\r\x1b[2Kecho ok'"), "{text}");
        assert!(text.contains("WARNING:  the command contains"), "{text}");
        assert!(text.contains("Stage:    run in the sandbox (workspace-write)"), "{text}");
        assert!(!text.contains("[a]") && !text.contains("[v]"), "{text}");
        assert!(
            text.ends_with("Run it in the sandbox?  [y] yes  [s] yes for this session  [n] no\n> ")
        );
    }

    #[test]
    fn a_retry_says_without_the_sandbox_and_shows_the_evidence_escaped() {
        let r = request(&["touch", "f"], ApprovalStage::RetryWithoutSandbox, None);
        let text = Prompt::new(&r).text();
        assert!(text.contains("retry WITHOUT the sandbox (danger-full-access)"), "{text}");
        assert!(text.contains("already ran in the sandbox and had its effects"), "{text}");
        assert!(text.contains(r"| x: Permission denied\x1b[2K"), "{text}");
        assert!(text.contains("the reason or evidence contains characters"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn a_question_about_another_machine_names_it() {
        let mut r = request(&["touch", "f"], ApprovalStage::BeforeRun, None);
        let text = Prompt::new(&r).text();
        assert!(!text.contains("Host:"), "{text}");
        r.host = Some("me@build:2222".into());
        let text = Prompt::new(&r).text();
        assert!(
            text.contains("  Host:     me@build:2222 (the command runs there)\n  In:"),
            "{text}"
        );
    }

    #[test]
    fn a_long_command_offers_view() {
        let script = format!("echo start; {}; echo end", "x".repeat(20_000));
        let r = request(&["sh", "-c", &script], ApprovalStage::BeforeRun, None);
        let prompt = Prompt::new(&r);
        let text = prompt.text();
        assert!(text.contains("[v] view the whole command"), "{text}");
        assert!(text.contains("echo end'"), "{text}");
        assert!(text.len() < 3000);
        assert_eq!(prompt.parse("v"), Choice::View);
    }
}
