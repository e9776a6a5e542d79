use super::*;
use crate::rules::RuleSource;
use pretty_assertions::assert_eq;

use AskForApproval::{Never, OnFailure, OnRequest, Untrusted};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn rules() -> RuleSet {
    let (rules, _) = RuleSet::parse(
        r#"
[[rule]]
prefix = ["git", "push"]
decision = "prompt"
justification = "pushes leave the machine"

[[rule]]
prefix = ["rm", "-rf"]
decision = "forbidden"
justification = "no recursive deletes"

[[rule]]
prefix = ["shred"]
decision = "forbidden"

[[rule]]
prefix = ["cargo"]
decision = "allow"
"#,
        RuleSource::User,
    )
    .unwrap();
    rules
}

fn decision(words: &[&str], approval: AskForApproval, escalation: &Escalation) -> PreRunDecision {
    assess_with(&argv(words), approval, &rules(), escalation).decision
}

/// `assess` with every program taken to be a system file.
fn assess_with(
    command: &[String],
    approval: AskForApproval,
    rules: &RuleSet,
    escalation: &Escalation,
) -> Assessment {
    assess(&AssessInput { command, approval, rules, escalation, trusted_program: &|_| true })
}

fn escalated(justification: &str) -> Escalation {
    Escalation::RequireEscalated { justification: Some(justification.to_owned()) }
}

const RUN_SANDBOXED: PreRunDecision = PreRunDecision::Run { sandbox: RunSandbox::Policy };
const RUN_READ_ONLY: PreRunDecision = PreRunDecision::Run { sandbox: RunSandbox::ReadOnly };

fn refuse(reason: &str) -> PreRunDecision {
    PreRunDecision::Refuse { reason: reason.to_owned() }
}

fn ask(reason: &str, sandboxed: bool) -> PreRunDecision {
    let sandbox = if sandboxed { RunSandbox::Policy } else { RunSandbox::None };
    PreRunDecision::Ask { reason: reason.to_owned(), sandbox }
}

#[test]
fn forbidden_rules_refuse_under_every_policy_even_with_escalation() {
    for approval in AskForApproval::ALL {
        for escalation in [Escalation::UseDefault, escalated("please")] {
            assert_eq!(
                [
                    decision(&["rm", "-rf", "/"], approval, &escalation),
                    decision(&["bash", "-lc", "ls && shred x"], approval, &escalation),
                ],
                [
                    refuse(
                        "rule [\"rm\", \"-rf\"] in $CORDON_HOME/rules.toml forbids this command: \
                         no recursive deletes"
                    ),
                    refuse("rule [\"shred\"] in $CORDON_HOME/rules.toml forbids this command"),
                ],
                "{approval}"
            );
        }
    }
}

#[test]
fn prompt_rules_ask_under_every_policy_but_never() {
    let reason = "rule [\"git\", \"push\"] in $CORDON_HOME/rules.toml asks for approval: pushes \
                  leave the machine";
    let asked: Vec<PreRunDecision> = AskForApproval::ALL
        .iter()
        .map(|approval| decision(&["git", "push"], *approval, &Escalation::UseDefault))
        .collect();
    assert_eq!(
        asked,
        vec![
            ask(reason, true),
            ask(reason, true),
            ask(reason, true),
            refuse(
                "rule [\"git\", \"push\"] in $CORDON_HOME/rules.toml needs approval (pushes \
                 leave the machine), but approval policy is never"
            ),
        ]
    );
    let (bare, _) = RuleSet::parse(
        "[[rule]]\nprefix = [\"make\"]\ndecision = \"prompt\"\n",
        RuleSource::Workspace,
    )
    .unwrap();
    assert_eq!(
        [OnFailure, Never].map(|approval| {
            assess_with(&argv(&["make"]), approval, &bare, &Escalation::UseDefault).decision
        }),
        [
            ask("rule [\"make\"] in .cordon/rules.toml asks for approval", true),
            refuse(
                "rule [\"make\"] in .cordon/rules.toml needs approval, but approval policy is \
                 never"
            ),
        ]
    );
    // Approving the question also approves the escalation, so the question says so.
    assert_eq!(
        decision(&["git", "push"], OnRequest, &escalated("needs my ssh key")),
        ask(
            &format!("{reason}; the command asks to run outside the sandbox: needs my ssh key"),
            false
        )
    );
}

#[test]
fn allow_rules_run_sandboxed_without_asking_unless_escalation_is_requested() {
    let allowed: Vec<PreRunDecision> = AskForApproval::ALL
        .iter()
        .map(|approval| decision(&["cargo", "build"], *approval, &Escalation::UseDefault))
        .collect();
    assert_eq!(allowed, vec![RUN_SANDBOXED; 4]);
    assert_eq!(
        decision(&["cargo", "publish"], OnRequest, &escalated("needs the network")),
        ask("the command asks to run outside the sandbox: needs the network", false)
    );
}

#[test]
fn escalation_asks_to_run_unsandboxed_and_is_refused_under_never() {
    let no_justification = Escalation::RequireEscalated { justification: None };
    let blank_justification = Escalation::RequireEscalated { justification: Some("  ".into()) };
    assert_eq!(
        [
            decision(&["ls"], Untrusted, &escalated("read ~/.ssh")),
            decision(&["make"], OnFailure, &escalated("read ~/.ssh")),
            decision(&["make"], OnRequest, &no_justification),
            decision(&["make"], OnRequest, &blank_justification),
            decision(&["make"], Never, &escalated("read ~/.ssh")),
        ],
        [
            ask("the command asks to run outside the sandbox: read ~/.ssh", false),
            ask("the command asks to run outside the sandbox: read ~/.ssh", false),
            ask("the command asks to run outside the sandbox (no justification given)", false),
            ask("the command asks to run outside the sandbox (no justification given)", false),
            refuse("the command asks to run outside the sandbox, but approval policy is never"),
        ]
    );
}

#[test]
fn without_rules_or_escalation_only_untrusted_asks_and_only_for_unknown_commands() {
    let untrusted_ask =
        ask("approval policy is untrusted and the command is not on the known-safe list", true);
    let table: Vec<(&[&str], [PreRunDecision; 4])> = vec![
        (&["ls", "-la"], [RUN_READ_ONLY, RUN_SANDBOXED, RUN_SANDBOXED, RUN_SANDBOXED]),
        (
            &["bash", "-lc", "ls && pwd"],
            [RUN_READ_ONLY, RUN_SANDBOXED, RUN_SANDBOXED, RUN_SANDBOXED],
        ),
        (&["make"], [untrusted_ask.clone(), RUN_SANDBOXED, RUN_SANDBOXED, RUN_SANDBOXED]),
        (&["rm", "-r", "x"], [untrusted_ask.clone(), RUN_SANDBOXED, RUN_SANDBOXED, RUN_SANDBOXED]),
        (&["sudo", "ls"], [untrusted_ask.clone(), RUN_SANDBOXED, RUN_SANDBOXED, RUN_SANDBOXED]),
        (&["bash", "-lc", "ls > f"], [untrusted_ask, RUN_SANDBOXED, RUN_SANDBOXED, RUN_SANDBOXED]),
    ];
    for (command, expected) in table {
        let actual = [Untrusted, OnFailure, OnRequest, Never]
            .map(|approval| decision(command, approval, &Escalation::UseDefault));
        assert_eq!(actual, expected, "{command:?}");
    }
}

#[test]
fn the_assessment_reports_the_rule_and_known_safety_and_serialises_for_policy_check() {
    let assessment =
        assess_with(&argv(&["cargo", "test"]), Untrusted, &rules(), &Escalation::UseDefault);
    assert_eq!(
        assessment,
        Assessment {
            decision: RUN_SANDBOXED,
            matched_rule: Some(Rule {
                prefix: argv(&["cargo"]),
                decision: RuleDecision::Allow,
                justification: None,
                source: RuleSource::User,
            }),
            known_safe: false,
            unreadable: None,
        }
    );
    assert_eq!(
        serde_json::to_value(&assessment).unwrap(),
        serde_json::json!({
            "decision": {"kind": "run", "sandbox": "policy"},
            "matched_rule": {"prefix": ["cargo"], "decision": "allow", "justification": null,
                             "source": "user"},
            "known_safe": false,
        })
    );
    let safe = assess_with(&argv(&["ls"]), Untrusted, &RuleSet::default(), &Escalation::UseDefault);
    assert_eq!(
        serde_json::to_value(&safe).unwrap(),
        serde_json::json!({
            "decision": {"kind": "run", "sandbox": "read_only"},
            "matched_rule": null,
            "known_safe": true,
        })
    );
    assert_eq!(
        serde_json::to_value(ask("why", false)).unwrap(),
        serde_json::json!({"kind": "ask", "reason": "why", "sandbox": "none"})
    );
    assert_eq!(
        serde_json::to_value(refuse("no")).unwrap(),
        serde_json::json!({"kind": "refuse", "reason": "no"})
    );
}

#[test]
fn a_program_is_asked_to_retry_only_under_untrusted_and_on_failure() {
    let ask = RetryDecision::AskToRetryUnsandboxed;
    let no = |why: &str| RetryDecision::NoRetry { why: why.to_owned() };
    assert_eq!(
        AskForApproval::ALL.map(|a| retry_after_denial(a, Requester::Program)),
        [
            ask.clone(),
            ask,
            no("approval policy on-request retries without the sandbox only when asked \
                (sandbox_permissions \"require_escalated\"); use -a on-failure to be asked \
                after every denial"),
            no("approval policy never does not retry without the sandbox; use -a on-failure to \
                be asked"),
        ]
    );
}

#[test]
fn a_person_at_a_terminal_is_asked_under_on_request_too_but_never_under_never() {
    let decisions = AskForApproval::ALL.map(|a| retry_after_denial(a, Requester::Person));
    assert_eq!(
        decisions.iter().map(|d| *d == RetryDecision::AskToRetryUnsandboxed).collect::<Vec<_>>(),
        [true, true, true, false]
    );
}

/// Rule normalization, as `assess` sees it (rules match normalized commands): every spelling of a
/// forbidden or prompting command is caught; allow rules approve only what they name.
#[test]
fn rules_match_normalized_spellings_table() {
    let (rules, _) = RuleSet::parse(
        r#"
[[rule]]
prefix = ["git", "push"]
decision = "forbidden"

[[rule]]
prefix = ["curl"]
decision = "prompt"

[[rule]]
prefix = ["cargo", "test"]
decision = "allow"
"#,
        RuleSource::User,
    )
    .unwrap();
    #[derive(Debug, PartialEq)]
    enum Kind {
        Refuse,
        Ask,
        Run,
    }
    let kind = |words: &[&str]| match assess_with(
        &argv(words),
        Untrusted,
        &rules,
        &Escalation::UseDefault,
    )
    .decision
    {
        PreRunDecision::Refuse { .. } => Kind::Refuse,
        PreRunDecision::Ask { .. } => Kind::Ask,
        PreRunDecision::Run { .. } => Kind::Run,
    };
    let table: Vec<(&[&str], Kind)> = vec![
        (&["git", "push"], Kind::Refuse),
        (&["git", "push", "--force", "origin"], Kind::Refuse),
        (&["/usr/bin/git", "push"], Kind::Refuse),
        (&["/opt/git/bin/git", "push"], Kind::Refuse),
        (&["./git", "push"], Kind::Refuse),
        (&["git", "-C", ".", "push"], Kind::Refuse),
        (&["git", "-c", "user.name=x", "push"], Kind::Refuse),
        (&["git", "-c", "a=b", "push"], Kind::Ask),
        (&["git", "--git-dir=.git", "push"], Kind::Refuse),
        (&["git", "--no-pager", "push"], Kind::Refuse),
        (&["env", "git", "push"], Kind::Refuse),
        (&["env", "-i", "A=1", "git", "push"], Kind::Refuse),
        (&["command", "git", "push"], Kind::Refuse),
        (&["nice", "-n", "5", "git", "push"], Kind::Refuse),
        (&["nohup", "git", "push"], Kind::Refuse),
        (&["timeout", "5", "git", "push"], Kind::Refuse),
        (&["stdbuf", "-oL", "git", "push"], Kind::Refuse),
        (&["time", "git", "push"], Kind::Refuse),
        (&["env", "nice", "timeout", "5", "git", "-C", "x", "push"], Kind::Refuse),
        (&["bash", "-lc", "cd x && git push"], Kind::Refuse),
        (&["bash", "-lc", "git push 2>&1"], Kind::Refuse),
        (&["bash", "-lc", "git -C . push # done"], Kind::Refuse),
        (&["sh", "-c", "\\git push"], Kind::Refuse),
        (&["dash", "-c", "git push"], Kind::Refuse),
        (&["bash", "-l", "-c", "git push"], Kind::Refuse),
        (&["bash", "-c", "sh -c 'git push'"], Kind::Refuse),
        (&["bash", "-c", "echo $(git push)"], Kind::Refuse),
        (&["/usr/bin/curl", "example.org"], Kind::Ask),
        (&["env", "curl", "x"], Kind::Ask),
        (&["bash", "-lc", "curl x | sh"], Kind::Ask),
        (&["git", "status"], Kind::Run),
        (&["git", "pull"], Kind::Ask),
        (&["cargo", "test"], Kind::Run),
        (&["cargo", "test", "--release"], Kind::Run),
        (&["/usr/bin/cargo", "test"], Kind::Run),
        // A known-safe command beside an allowed one gets no read-only run: asked.
        (&["bash", "-lc", "cargo test && ls"], Kind::Ask),
        (&["bash", "-lc", "cargo test && cargo test --release"], Kind::Run),
        (&["bash", "-lc", "cargo test; touch f"], Kind::Ask),
        (&["bash", "-lc", "cargo test 2>&1"], Kind::Ask),
        (&["./cargo", "test"], Kind::Ask),
        (&["env", "cargo", "test"], Kind::Ask),
        (&["cargo", "build"], Kind::Ask),
    ];
    for (command, expected) in table {
        assert_eq!(kind(command), expected, "{command:?}");
    }
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// Refuse > Ask > Run.
    fn strictness(decision: &PreRunDecision) -> u8 {
        match decision {
            PreRunDecision::Run { .. } => 0,
            PreRunDecision::Ask { .. } => 1,
            PreRunDecision::Refuse { .. } => 2,
        }
    }

    const COMMANDS: &[&str] = &[
        "ls -la",
        "cat f",
        "cargo build",
        "cargo test",
        "git push",
        "git status",
        "rm -rf x",
        "shred f",
        "python3 -c x",
        "echo hi",
        "make",
        "touch f",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn a_script_is_never_judged_more_permissively_than_any_command_in_it(
            picks in proptest::collection::vec(0..COMMANDS.len(), 1..5),
            separators in proptest::collection::vec(
                proptest::sample::select(vec![" && ", " || ", "; ", " | ", "\n"]), 4),
            approval in proptest::sample::select(AskForApproval::ALL.to_vec()),
            shell in proptest::sample::select(vec!["bash", "sh", "/bin/bash", "zsh"]),
        ) {
            let mut script = String::new();
            for (i, pick) in picks.iter().enumerate() {
                if i > 0 {
                    script.push_str(separators[i - 1]);
                }
                script.push_str(COMMANDS[*pick]);
            }
            let whole = assess_with(&argv(&[shell, "-lc", &script]), approval, &rules(), &Escalation::UseDefault);
            for pick in &picks {
                let words: Vec<&str> = COMMANDS[*pick].split(' ').collect();
                let single = assess_with(&argv(&words), approval, &rules(), &Escalation::UseDefault);
                prop_assert!(
                    strictness(&whole.decision) >= strictness(&single.decision),
                    "{script:?} => {:?}, but {:?} alone => {:?}",
                    whole.decision, words, single.decision
                );
            }
        }
    }
}

/// rm and `git push` forbidden, touch asked about: the spellings that once ran unasked.
fn strict_rules() -> RuleSet {
    let text = "[[rule]]\nprefix = [\"rm\"]\ndecision = \"forbidden\"\n\
                [[rule]]\nprefix = [\"git\", \"push\"]\ndecision = \"forbidden\"\n\
                [[rule]]\nprefix = [\"touch\"]\ndecision = \"prompt\"\n";
    RuleSet::parse(text, RuleSource::User).unwrap().0
}

#[test]
fn every_spelling_of_a_forbidden_or_prompt_program_is_asked_or_refused() {
    let rules = strict_rules();
    let spellings: &[&[&str]] = &[
        &["env", "sh", "-c", "rm -f x"],
        &["nice", "bash", "-c", "rm -f x"],
        &["bash", "-c", "eval 'rm -f x'"],
        &["bash", "-c", "trap 'rm -f x' EXIT"],
        &["env", "-S", "rm -f", "x"],
        &["xargs", "-i", "rm", "-f", "{}"],
        &["xargs", "-e", "rm"],
        &["xargs", "-I{}", "{}", "x"],
        &["sudo", "-iu", "root", "rm", "x"],
        &["busybox", "rm", "x"],
        &["taskset", "0x1", "rm", "x"],
        &["taskset", "-c", "0", "rm", "x"],
        &["flock", "/tmp/l", "rm", "x"],
        &["setpriv", "--reuid=0", "rm", "x"],
        &["unshare", "-U", "rm", "x"],
        &["chrt", "-o", "0", "rm", "x"],
        &["strace", "-f", "rm", "x"],
        &["watch", "rm x"],
        &["script", "-qc", "rm x", "/dev/null"],
        &["parallel", "rm", ":::", "x"],
        &["find", ".", "-exec", "rm", "{}", ";"],
        &["nice", "nice", "nice", "nice", "nice", "nice", "nice", "nice", "nice", "rm", "x"],
        &["bash", "-c", "shopt -s expand_aliases; alias r=rm\nr x"],
        &["bash", "-c", "{r,}m x"],
        &["bash", "-c", "/bin/r[m] x"],
        &["bash", "-c", "x=r; ${x}m y"],
        &["bash", "-c", "$(printf r)m y"],
        &["bash", "-c", "`printf rm` y"],
        &["bash", "-c", "source ./script.sh"],
        &["bash", "-s"],
        &["sh"],
        &["python3", "-c", "import os; os.remove('x')"],
        &["perl", "-e", "unlink 'x'"],
        &["node", "-e", "require('fs').unlinkSync('x')"],
        &["git", "-c", "alias.x=push", "x"],
        &["git", "-c", "help.autocorrect=immediate", "psuh"],
        &["git", "psuh"],
        &["git", "--exec-path=./x", "push"],
        &["git", "-c", "core.sshCommand=x", "status"],
        &["env", "sh", "-c", "touch t"],
        &["bash", "-c", "BASH_ENV=./x bash -c true"],
        &["env", "BASH_ENV=./x", "bash", "-c", "true"],
        &["timeout", "5", "sh", "-c", "rm x"],
        &["sudo", "--user=root", "sh", "-c", "rm x"],
        &["bash", "-c", "git $sub origin"],
        &["xargs", "sh", "-c"],
        &["xargs", "-I{}", "sh", "-c", "{}"],
        &["xargs", "git"],
        &["xargs", "env"],
        &["git", "submodule", "foreach", "rm x"],
        &["git", "rebase", "-x", "rm x", "HEAD~1"],
        &["git", "bisect", "run", "rm", "x"],
        &["python3", "-"],
        &["bash", "-c", "python3 <<'EOF'\nimport os\nos.remove('x')\nEOF"],
        &["bash", "-c", "echo 'rm x' | sh"],
        &["sudo", "LD_PRELOAD=./x.so", "ls"],
        &["env", "-u", "A", "--", "B=1", "rm", "--", "victim"],
        &["/usr/lib/git-core/git-push"],
        &["nohup", "--", "/usr/lib/git-core/git-push"],
        &["env", "-", "dash", "-c", "c='/bin/touch t'\n$c"],
        &["bash", "-c", "x=r; i=\"a[\\$(\\${x}m victim)]\"; echo $((i))"],
        &["bash", "-c", "p=\"\\$(\\${x}m victim)\"; x=r; echo \"${p@P}\""],
        &["bash", "-c", "v=$(<n); (( v ))"],
        &["bash", "-c", "read -r v <n; [[ $v -gt 1 ]]"],
        &["bash", "-c", "[ -v 'a[$(rm x)]' ]"],
        &["bash", "-c", "let 'a[$(rm x)]'"],
        &["git", "ls-remote", "--upload-pack=rm victim; false", "."],
        &["git", "clone", "-u", "rm x", ".", "y"],
        &["git", "send-pack", "../bare.git", "HEAD:refs/heads/x"],
        &["git", "-c", "protocol.ext.allow=always", "ls-remote", "ext::sh -c rm% x"],
        &["setarch", "x86_64", "rm", "x"],
        &["prlimit", "--nofile=100", "rm", "x"],
        &["capsh", "--", "-c", "rm x"],
        &["sed", "-n", "1e rm victim", "f"],
        &["sed", "s/x/rm victim/e", "f"],
        &["tar", "--to-command=rm", "-xf", "a.tar"],
        &["vim", "-es", "-c", "!rm x"],
        &["awk", "BEGIN { system(\"rm x\") }"],
        // git keys that hand git a command, and keys cordon does not know.
        &["git", "-c", "tar.x.command=rm -f v; cat", "archive", "--format=x", "HEAD"],
        &["git", "-c", "man.viewer=v", "-c", "man.v.cmd=rm v", "help", "git"],
        &["git", "-c", "browser.v.cmd=rm v", "web--browse", "-b", "v", "http://x"],
        &["git", "-c", "trailer.x.cmd=rm v", "interpret-trailers", "--trailer", "x=1"],
        &["git", "-c", "imap.tunnel=rm v", "imap-send"],
        &["git", "-c", "guitool.x.cmd=rm v", "status"],
        &["git", "-c", "instaweb.httpd=rm v", "status"],
        &["git", "-c", "help.browser=rm", "help", "-w", "git"],
        &["git", "-c", "init.templateDir=./t", "init", "r"],
        &["git", "-c", "uploadarchive.x=1", "status"],
        &["git", "-c", "no.such.key=1", "status"],
        &["git", "--config-env=core.pager=P", "log"],
        &["git", "--config-env", "tar.x.command=P", "archive", "--format=x", "HEAD"],
        // make's own makefile text, and scriptlive's command.
        &["make", "-f", "/dev/null", "--eval", "x: ; rm -f v", "x"],
        &["make", "--eval=$(shell rm -f v)"],
        &["make", "-E", "$(shell rm -f v)"],
        &["make", "SHELL=/bin/rm"],
        &["make", "-f", "-"],
        &["make", "--no-such-option"],
        &["bash", "-c", "make --eval '$(shell rm -f v)'"],
        &["scriptlive", "-c", "rm v", "-t", "/dev/null", "-I", "/dev/null"],
        &["npx", "-c", "rm v"],
        &["perl", "-Mstrict;unlink(\"v\")", "-ne", "1"],
        &["php", "-B", "unlink('v');", "-R", "1;"],
        &["java", "-XX:OnError=rm v", "-jar", "x.jar"],
        // `test` that evaluates a name or arithmetic, and words that may split into `-v`.
        &["bash", "-c", "test -v 'a[$(rm x)]'"],
        &["bash", "-c", "[ \"$op\" 'a[$(rm x)]' ]"],
        &["bash", "-c", "[ $x ]"],
        &["bash", "-c", "[ \"$n\" -eq 1 ]"],
        &["bash", "-c", "test \"$n\" -gt 0"],
        // The attack review's bypasses: words that split, computed options, make's variables
        // and environment, node's scheme spellings, python's code-running modules, transports.
        &["bash", "-c", "c=r; d=m; set -- -v \"a\"\"[\\$($c$d x)]\"; [ \"$@\" ]"],
        &["bash", "-c", "test \"${z[@]}\""],
        &["bash", "-c", "[ \"\"* ]"],
        &["bash", "-c", "x=c; bash -\"$x\" 'rm x'"],
        &["bash", "-c", "x=e; perl -\"$x\" 'unlink q(x)'"],
        &["bash", "-c", "x=c; python3 -\"$x\" 'import os'"],
        &["bash", "-c", "make -f <(echo x) all"],
        &["bash", "-c", "f=/dev/stdin; make -f \"$f\" all"],
        &["bash", "-c", "x='. --eval=all:;rm'; make -C $x all"],
        &["bash", "-c", "make -C \"$@\" all"],
        &["bash", "-c", "env MAKEFLAGS='--eval=x' make all"],
        &["bash", "-c", "export GNUMAKEFLAGS=--eval=x; make all"],
        &["bash", "-c", "MAKEFILES=/dev/stdin make all"],
        &["make", "all", "MAKEFILES=/dev/stdin"],
        &["make", "CC=rm", "y"],
        &["make", "LINK.c=rm", "y"],
        &["node", "--import=DATA:text/javascript,x", "a.js"],
        &["node", "--import= data:text/javascript,x", "a.js"],
        &["python3", "-m", "timeit", "-n1", "import os"],
        &["python3", "-mpdb", "-c", "continue", "x.py"],
        &[
            "env",
            "GIT_ALLOW_PROTOCOL=ext",
            "git",
            "-c",
            "remote.o.url=ext::sh -c rm% x",
            "fetch",
            "o",
        ],
        &["git", "-c", "url.ext::sh -c .insteadOf=q:", "fetch", "q:x"],
        &["git", "-c", "remote.o.url=foo::x", "fetch", "o"],
        &[
            "bash",
            "-c",
            "export GIT_C\\ONFIG_COUNT=1 GIT_C\\ONFIG_KEY_0=core.sshCommand; git ls-remote x",
        ],
        &["bash", "-c", "export BASH_E\\NV=./env.sh; bash -c true"],
    ];
    for spelling in spellings {
        for approval in [OnRequest, OnFailure, Never, Untrusted] {
            let decision =
                assess_with(&argv(spelling), approval, &rules, &Escalation::UseDefault).decision;
            assert!(
                !matches!(decision, PreRunDecision::Run { .. }),
                "{spelling:?} under {approval:?}: {decision:?}"
            );
        }
    }
}

#[test]
fn commands_cordon_reads_still_run_unasked_beside_strict_rules() {
    let rules = strict_rules();
    for spelling in [
        &["cargo", "test"][..],
        &["bash", "-lc", "cargo test 2>&1 | tee log.txt"],
        &["bash", "-c", "ls | grep x && echo $HOME"],
        &["xargs", "grep", "foo"],
        &["xargs", "-0", "-n1", "grep", "foo"],
        &["find", ".", "-name", "*.rs"],
        &["git", "status"],
        &["git", "-C", "sub", "log", "--oneline"],
        &["nice", "-n", "5", "cargo", "build"],
        &["timeout", "-s", "KILL", "10", "make", "test"],
        &["env", "RUST_LOG=debug", "cargo", "run"],
        &["python3", "script.py"],
        &["bash", "build.sh"],
        &["git", "-c", "user.name=x", "commit", "-m", "x"],
        &["awk", "-F|", "{print $1}", "file"],
        &["sed", "-n", "s/hello/bye/p", "file"],
        &["sed", "-i", "s/a/b/g", "file"],
        &["tar", "-xzf", "a.tgz"],
        &["bash", "-lc", "for f in *.rs; do wc -l $f; done"],
        &["bash", "-lc", "if [ -f package.json ]; then npm ci; fi"],
        &["bash", "-lc", "[ -d \"$HOME/.cache\" ] && cargo build"],
        &["bash", "-lc", "if [ ! -e target ] || [ \"$CI\" = true ]; then cargo build; fi"],
        &["bash", "-lc", "test -f Cargo.toml && cargo test"],
        &["bash", "-lc", "[ -n \"${RUST_LOG:-}\" ] || cargo test"],
        &["bash", "-lc", "kill -TERM $$"],
        &["bash", "-lc", "kill -0 \"$pid\" && cargo test"],
        &["git", "-c", "color.ui=always", "-c", "core.quotePath=off", "diff"],
        &["git", "--config-env=user.email=EMAIL", "commit", "-m", "x"],
        &["git", "check-ref-format", "refs/heads/x"],
        &["make", "-j4", "CFLAGS=-O2", "test"],
        &["make", "-C", "sub", "-s", "all"],
        &["bash", "-lc", "make -j\"$(nproc)\" build"],
        &["bash", "-lc", "make -C \"$dir\" install"],
        &["bash", "-lc", "cargo test; if [ \"$?\" -ne 0 ]; then echo failed; fi"],
        &["bash", "-lc", "[ \"$#\" -eq 0 ] && echo none"],
        &["bash", "-lc", "[ \"${#files[@]}\" -gt 0 ] && ls"],
        &["bash", "-lc", "[ -v HOME ] && echo set"],
        &["git", "-c", "clone.defaultRemoteName=up", "clone", "https://h/r.git"],
    ] {
        let decision =
            assess_with(&argv(spelling), OnRequest, &rules, &Escalation::UseDefault).decision;
        assert_eq!(decision, RUN_SANDBOXED, "{spelling:?}");
    }
}

#[test]
fn an_unreadable_command_is_asked_with_the_reason_and_refused_under_never() {
    let rules = strict_rules();
    let command = argv(&["bash", "-c", "eval \"$CMD\""]);
    let assessment = assess_with(&command, OnRequest, &rules, &Escalation::UseDefault);
    let PreRunDecision::Ask { reason, sandbox: RunSandbox::Policy } = &assessment.decision else {
        panic!("{assessment:?}");
    };
    assert!(reason.contains("cannot tell which programs") && reason.contains("eval"), "{reason}");
    assert_eq!(assessment.unreadable, Some(Unreadable::Builtin { name: "eval".to_owned() }));
    let never = assess_with(&command, Never, &rules, &Escalation::UseDefault).decision;
    assert!(matches!(never, PreRunDecision::Refuse { .. }), "{never:?}");
    // Without a rule that could apply, an unreadable command runs as before.
    let none = assess_with(&command, OnRequest, &RuleSet::default(), &Escalation::UseDefault);
    assert_eq!(none.decision, RUN_SANDBOXED);
}

#[test]
fn known_safe_needs_every_program_to_be_a_system_file_and_runs_read_only() {
    let only_usr_bin = |program: &str| program.starts_with("/usr/bin/") || program == "ls";
    let input = |command: &[String], trusted: &dyn Fn(&str) -> bool| {
        assess(&AssessInput {
            command,
            approval: Untrusted,
            rules: &RuleSet::default(),
            escalation: &Escalation::UseDefault,
            trusted_program: trusted,
        })
    };
    let ls = argv(&["ls", "-la"]);
    assert_eq!(input(&ls, &only_usr_bin).decision, RUN_READ_ONLY);
    assert!(matches!(input(&ls, &|_| false).decision, PreRunDecision::Ask { .. }));
    let script = argv(&["bash", "-lc", "echo x && ls"]);
    assert_eq!(known_safe_programs(&script), argv(&["bash", "ls"]));
    assert!(matches!(input(&script, &only_usr_bin).decision, PreRunDecision::Ask { .. }));
}
