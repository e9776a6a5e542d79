//! The terminal approver: asks on the controlling terminal (`/dev/tty`), so it works even when
//! stdin and stdout are redirected; without a terminal every question is answered "no" with a
//! line saying how to proceed.

use std::io::{BufRead, BufReader, Write};

use cordon_exec_core::{ApprovalAnswer, ApprovalRequest, ApprovalStage, Approver};

pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&self, request: &ApprovalRequest) -> impl std::future::Future<Output = ApprovalAnswer> {
        std::future::ready(ask_on_tty(request))
    }
}

fn ask_on_tty(request: &ApprovalRequest) -> ApprovalAnswer {
    let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty");
    let Ok(mut tty) = tty else {
        eprintln!(
            "cordon: approval needed ({}) but there is no terminal to ask on; answering no. \
             To proceed without asking: -a never (sandboxed, no retry), --yolo (no sandbox), or an \
             allow rule in $CORDON_HOME/rules.toml",
            request.reason
        );
        return ApprovalAnswer::Denied;
    };
    let command = shell_words(&request.command);
    let prefix = shell_words(&request.prefix);
    let action = match request.stage {
        ApprovalStage::BeforeRun => "Run",
        ApprovalStage::RetryWithoutSandbox => "Run WITHOUT the sandbox",
    };
    let prompt = format!(
        "\ncordon: {}\n  {action}: {command}\n  in: {}\n  [y] yes  [s] yes for this session  [a] always allow `{prefix}`  [n] no\n> ",
        request.reason,
        request.cwd.display()
    );
    if tty.write_all(prompt.as_bytes()).and_then(|()| tty.flush()).is_err() {
        return ApprovalAnswer::Denied;
    }
    let mut line = String::new();
    match BufReader::new(&tty).read_line(&mut line) {
        Ok(n) if n > 0 => parse_answer(&line),
        _ => ApprovalAnswer::Denied,
    }
}

/// Anything but a clear yes is a no.
pub fn parse_answer(line: &str) -> ApprovalAnswer {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalAnswer::Approved,
        "s" | "session" => ApprovalAnswer::ApprovedForSession,
        "a" | "always" => ApprovalAnswer::AlwaysAllowPrefix,
        _ => ApprovalAnswer::Denied,
    }
}

/// The argv as a shell would read it (for display only).
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clear_answers_approve() {
        assert_eq!(parse_answer("y\n"), ApprovalAnswer::Approved);
        assert_eq!(parse_answer(" S "), ApprovalAnswer::ApprovedForSession);
        assert_eq!(parse_answer("a"), ApprovalAnswer::AlwaysAllowPrefix);
        for no in ["n", "", "yess", "no", "\u{1b}[A"] {
            assert_eq!(parse_answer(no), ApprovalAnswer::Denied, "{no:?}");
        }
    }

    #[test]
    fn displayed_commands_are_quoted() {
        assert_eq!(
            shell_words(&["echo".into(), "a b".into(), "it's".into()]),
            r"echo 'a b' 'it'\''s'"
        );
    }
}
