//! Property tests: the parsers and decisions never panic on arbitrary input, and the few
//! round-trip properties hold.

use proptest::prelude::*;

use crate::plain_words::RESERVED_WORDS;
use crate::{
    AskForApproval, AssessInput, Escalation, RuleDecision, RuleSet, RuleSource, allow_rule_toml,
    assess, is_known_safe, is_shell_call, plain_shell_commands, script_words,
};

/// Text made of shell syntax and words, so the parser meets every construct, not just noise.
fn shellish() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        "[a-z0-9._/=-]{1,8}",
        Just(" ".to_owned()),
        Just(" && ".to_owned()),
        Just(" || ".to_owned()),
        Just("; ".to_owned()),
        Just(" | ".to_owned()),
        Just("\n".to_owned()),
        "[-'\"$`|&;<>(){}*?~#!\\[\\]\\\\ =%+@,^]{1,3}",
        Just("$(".to_owned()),
        Just("<<EOF\n".to_owned()),
        Just("bash -c ".to_owned()),
        any::<String>(),
    ];
    prop::collection::vec(fragment, 0..16).prop_map(|parts| parts.concat())
}

/// An argv that is sometimes a shell call, sometimes anything.
fn argv() -> impl Strategy<Value = Vec<String>> {
    let shell_call = (
        prop_oneof![Just("bash"), Just("sh"), Just("zsh"), Just("/bin/bash"), Just("/usr/bin/sh")],
        prop_oneof![Just("-c"), Just("-lc")],
        shellish(),
    )
        .prop_map(|(shell, flag, script)| vec![shell.to_owned(), flag.to_owned(), script]);
    let word = prop_oneof![
        any::<String>(),
        "(ls|git|find|sed|rg|sort|uniq|env|date|file|rm|sudo|bash)",
        "-{0,2}[a-zA-Z-]{0,12}(=[a-z]{0,4})?",
    ];
    prop_oneof![shell_call, prop::collection::vec(word, 0..8)]
}

/// Text that looks like a rules file, with mistakes mixed in.
fn tomlish() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("[[rule]]\n".to_owned()),
        Just("[rule]\n".to_owned()),
        "prefix = \\[(\"[a-z -]{0,6}\"(, )?){0,3}\\]\n",
        "decision = \"(allow|prompt|forbidden|deny|)\"\n",
        "justification = \"[a-z ]{0,10}\"\n",
        "[a-z_]{1,8} = [0-9]{1,3}\n",
        "[\\[\\]\"=,a-z \n]{0,12}",
        any::<String>(),
    ];
    prop::collection::vec(line, 0..12).prop_map(|lines| lines.concat())
}

/// A plain command name: not a reserved word of bash, zsh or ksh, nor a declaration builtin,
/// which the grammar parses as syntax rather than as a simple command.
fn command_name() -> impl Strategy<Value = String> {
    const DECLARATIONS: &[&str] = &["unset", "unsetenv"];
    "[a-z_][a-z0-9_./:-]{0,8}".prop_filter("reserved word", |w| {
        !RESERVED_WORDS.contains(&w.as_str()) && !DECLARATIONS.contains(&w.as_str())
    })
}

fn source() -> impl Strategy<Value = RuleSource> {
    prop_oneof![Just(RuleSource::User), Just(RuleSource::Workspace)]
}

fn approval() -> impl Strategy<Value = AskForApproval> {
    prop::sample::select(AskForApproval::ALL.to_vec())
}

const FIXED_RULES: &str = r#"
[[rule]]
prefix = ["git", "push"]
decision = "prompt"
[[rule]]
prefix = ["rm", "-rf"]
decision = "forbidden"
[[rule]]
prefix = ["ls"]
decision = "allow"
"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn safety_and_shell_parsing_never_panic(command in argv()) {
        let _ = is_known_safe(&command);
        let _ = plain_shell_commands(&command);
        let _ = is_shell_call(&command);
        let _ = script_words(&command);
    }

    #[test]
    fn any_string_as_a_script_never_panics(script in any::<String>(), flag in "-l?c") {
        let command = vec!["bash".to_owned(), flag, script];
        let _ = is_known_safe(&command);
        let _ = plain_shell_commands(&command);
        let _ = script_words(&command);
    }

    #[test]
    fn rules_parsing_and_evaluation_never_panic(
        text in tomlish(),
        source in source(),
        command in argv(),
    ) {
        if let Ok((rules, _warnings)) = RuleSet::parse(&text, source) {
            let _ = rules.evaluate(&command);
        }
        let (fixed, _) = RuleSet::parse(FIXED_RULES, RuleSource::User)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let _ = fixed.evaluate(&command);
    }

    #[test]
    fn arbitrary_text_as_rules_never_panics(text in any::<String>(), source in source()) {
        let _ = RuleSet::parse(&text, source);
    }

    #[test]
    fn assess_never_panics(
        command in argv(),
        approval in approval(),
        justification in proptest::option::of(any::<String>()),
    ) {
        let (rules, _) = RuleSet::parse(FIXED_RULES, RuleSource::User)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let escalated = Escalation::RequireEscalated { justification };
        for escalation in [&Escalation::UseDefault, &escalated] {
            let input =
                AssessInput { command: &command, approval, rules: &rules, escalation, trusted_program: &|_| true };
            let _ = assess(&input);
        }
    }

    #[test]
    fn allow_rule_toml_round_trips_for_any_prefix(
        prefix in prop::collection::vec(any::<String>(), 1..5),
    ) {
        let (rules, warnings) = RuleSet::parse(&allow_rule_toml(&prefix), RuleSource::User)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(warnings.is_empty());
        prop_assert_eq!(rules.rules().len(), 1);
        prop_assert_eq!(&rules.rules()[0].prefix, &prefix);
        prop_assert_eq!(rules.rules()[0].decision, RuleDecision::Allow);
    }

    #[test]
    fn plain_words_joined_by_operators_come_back_as_commands(
        commands in prop::collection::vec(
            (command_name(), prop::collection::vec("[a-zA-Z0-9_./:,+@%-][a-zA-Z0-9_./:=,+@%-]{0,7}", 0..3))
                .prop_map(|(name, args)| [vec![name], args].concat()),
            1..5,
        ),
        operators in prop::collection::vec(
            prop_oneof![Just(" && "), Just(" || "), Just("; "), Just(" | "), Just("\n")],
            4,
        ),
    ) {
        let mut script = String::new();
        for (i, command) in commands.iter().enumerate() {
            if i > 0 {
                script.push_str(operators[i - 1]);
            }
            script.push_str(&command.join(" "));
        }
        let argv = vec!["bash".to_owned(), "-lc".to_owned(), script];
        prop_assert_eq!(plain_shell_commands(&argv), Some(commands));
    }
}
