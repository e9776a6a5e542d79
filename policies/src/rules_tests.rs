use super::*;
use pretty_assertions::assert_eq;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn rule(prefix: &[&str], decision: RuleDecision, source: RuleSource) -> Rule {
    Rule { prefix: argv(prefix), decision, justification: None, source }
}

fn parse_ok(text: &str, source: RuleSource) -> RuleSet {
    let (rules, warnings) = RuleSet::parse(text, source).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    rules
}

const USER_RULES: &str = r#"
[[rule]]
prefix = ["git", "push"]
decision = "prompt"
justification = "pushes leave the machine"

[[rule]]
prefix = ["rm", "-rf"]
decision = "forbidden"

[[rule]]
prefix = ["cargo"]
decision = "allow"
"#;

#[test]
fn a_rules_file_parses_in_file_order() {
    let rules = parse_ok(USER_RULES, RuleSource::User);
    assert_eq!(
        rules.rules(),
        &[
            Rule {
                prefix: argv(&["git", "push"]),
                decision: RuleDecision::Prompt,
                justification: Some("pushes leave the machine".to_owned()),
                source: RuleSource::User,
            },
            rule(&["rm", "-rf"], RuleDecision::Forbidden, RuleSource::User),
            rule(&["cargo"], RuleDecision::Allow, RuleSource::User),
        ]
    );
    assert!(!rules.is_empty());
    assert!(parse_ok("", RuleSource::User).is_empty());
    assert!(parse_ok("# only a comment\n", RuleSource::Workspace).is_empty());
}

#[test]
fn unknown_keys_bad_values_and_empty_prefixes_are_errors_with_context() {
    let cases = [
        ("[[rule]]\nprefix = [\"ls\"]\ndecison = \"allow\"\n", RuleSource::User),
        ("[[rule]]\nprefix = [\"ls\"]\n", RuleSource::User),
        ("[[rule]]\nprefix = [\"ls\"]\ndecision = \"maybe\"\n", RuleSource::Workspace),
        ("[[rules]]\nprefix = [\"ls\"]\ndecision = \"allow\"\n", RuleSource::User),
        ("[[rule]]\nprefix = \"ls\"\ndecision = \"allow\"\n", RuleSource::User),
        ("[[rule]\n", RuleSource::User),
    ];
    let errors: Vec<String> = cases
        .iter()
        .map(|(text, source)| RuleSet::parse(text, *source).unwrap_err().to_string())
        .collect();
    assert_eq!(
        errors,
        vec![
            "$CORDON_HOME/rules.toml: line 3: unknown field `decison`, expected one of `prefix`, \
             `decision`, `justification`",
            "$CORDON_HOME/rules.toml: line 1: missing field `decision`",
            ".cordon/rules.toml: line 3: unknown variant `maybe`, expected one of `allow`, \
             `prompt`, `forbidden`",
            "$CORDON_HOME/rules.toml: line 1: unknown field `rules`, expected `rule`",
            "$CORDON_HOME/rules.toml: line 2: invalid type: string \"ls\", expected a sequence",
            "$CORDON_HOME/rules.toml: line 1: invalid table header expected `.`, `]]`",
        ]
    );

    let empty = "[[rule]]\nprefix = [\"ls\"]\ndecision = \"allow\"\n\
                 [[rule]]\nprefix = []\ndecision = \"forbidden\"\n";
    let err = RuleSet::parse(empty, RuleSource::User).unwrap_err();
    assert_eq!(err, RulesError::EmptyPrefix { file: RuleSource::User, number: 2 });
    assert_eq!(err.to_string(), "$CORDON_HOME/rules.toml: rule 2 has an empty prefix");
}

#[test]
fn workspace_allow_rules_are_dropped_with_a_warning_and_tightening_rules_apply() {
    let (rules, warnings) = RuleSet::parse(USER_RULES, RuleSource::Workspace).unwrap();
    assert_eq!(
        warnings,
        vec![
            "ignoring allow rule [\"cargo\"] in the workspace rules file: a sandboxed command \
             can write it; put allow rules in $CORDON_HOME/rules.toml"
        ]
    );
    assert_eq!(
        rules.rules().iter().map(|r| (r.prefix.clone(), r.decision)).collect::<Vec<_>>(),
        vec![
            (argv(&["git", "push"]), RuleDecision::Prompt),
            (argv(&["rm", "-rf"]), RuleDecision::Forbidden),
        ]
    );
    assert!(rules.rules().iter().all(|r| r.source == RuleSource::Workspace));
}

#[test]
fn a_rule_matches_commands_that_start_with_its_prefix() {
    let rules = parse_ok(USER_RULES, RuleSource::User);
    let decision = |words: &[&str]| rules.evaluate(&argv(words)).map(|r| r.decision);
    assert_eq!(
        [
            decision(&["git", "push", "origin", "main"]),
            decision(&["git", "push"]),
            decision(&["/usr/bin/git", "push"]),
            decision(&["git", "pull"]),
            decision(&["git"]),
            decision(&["./git", "push"]),
            decision(&["rm", "-rf", "/"]),
            decision(&["rm", "-r", "-f", "/"]),
            decision(&["cargo", "test"]),
            decision(&[]),
        ],
        [
            Some(RuleDecision::Prompt),
            Some(RuleDecision::Prompt),
            Some(RuleDecision::Prompt),
            None,
            None,
            // Forbidding and asking rules match any path's basename: `./git` may well be git.
            Some(RuleDecision::Prompt),
            Some(RuleDecision::Forbidden),
            None,
            Some(RuleDecision::Allow),
            None,
        ]
    );
}

#[test]
fn the_strictest_rule_wins_and_ties_go_to_the_first_in_file_order() {
    let mut rules = parse_ok(
        "[[rule]]\nprefix = [\"git\"]\ndecision = \"allow\"\n\
         [[rule]]\nprefix = [\"git\", \"push\"]\ndecision = \"prompt\"\njustification = \"first\"\n\
         [[rule]]\nprefix = [\"git\", \"push\", \"--force\"]\ndecision = \"forbidden\"\n",
        RuleSource::User,
    );
    let (workspace, _) = RuleSet::parse(
        "[[rule]]\nprefix = [\"git\", \"push\"]\ndecision = \"prompt\"\njustification = \"second\"\n",
        RuleSource::Workspace,
    )
    .unwrap();
    rules.merge(workspace);
    assert_eq!(rules.rules().len(), 4);
    assert_eq!(
        rules.evaluate(&argv(&["git", "push"])),
        Some(&Rule {
            prefix: argv(&["git", "push"]),
            decision: RuleDecision::Prompt,
            justification: Some("first".to_owned()),
            source: RuleSource::User,
        })
    );
    assert_eq!(
        rules.evaluate(&argv(&["git", "push", "--force"])).map(|r| r.decision),
        Some(RuleDecision::Forbidden)
    );
    assert_eq!(
        rules.evaluate(&argv(&["git", "status"])).map(|r| r.decision),
        Some(RuleDecision::Allow)
    );
}

#[test]
fn rules_see_every_command_of_a_plain_shell_script() {
    let rules = parse_ok(USER_RULES, RuleSource::User);
    let decision = |words: &[&str]| rules.evaluate(&argv(words)).map(|r| r.decision);
    assert_eq!(
        [
            decision(&["bash", "-lc", "cargo build && git push"]),
            decision(&["bash", "-lc", "cargo build && rm -rf target; git push"]),
            decision(&["sh", "-c", "bash -c 'rm -rf /'"]),
            decision(&["bash", "-lc", "cargo build"]),
            // Not plain: a rule whose words appear in the script applies.
            decision(&["bash", "-lc", "git push > /dev/null"]),
            decision(&["bash", "-lc", "rm -rf x 2>&1"]),
            decision(&["bash", "-lc", "\\rm -rf x"]),
            decision(&["bash", "-lc", "r\\\nm -rf x"]),
            decision(&["dash", "-c", "git push #"]),
            // Allow rules approve a script only when every command in it is allowed by a rule:
            // a known-safe command would otherwise run outside its read-only sandbox.
            decision(&["bash", "-lc", "cargo test; python3 -c 'open(\"f\", \"w\")'"]),
            decision(&["bash", "-lc", "cargo test && ls"]),
            decision(&["bash", "-lc", "cargo test 2>&1"]),
        ],
        [
            Some(RuleDecision::Prompt),
            Some(RuleDecision::Forbidden),
            Some(RuleDecision::Forbidden),
            Some(RuleDecision::Allow),
            Some(RuleDecision::Prompt),
            Some(RuleDecision::Forbidden),
            Some(RuleDecision::Forbidden),
            Some(RuleDecision::Forbidden),
            Some(RuleDecision::Prompt),
            None,
            None,
            None,
        ]
    );
    // A rule for the shell itself still matches the outer command.
    let bash = parse_ok("[[rule]]\nprefix = [\"bash\"]\ndecision = \"prompt\"\n", RuleSource::User);
    assert_eq!(
        bash.evaluate(&argv(&["bash", "-lc", "ls"])).map(|r| r.decision),
        Some(RuleDecision::Prompt)
    );
}

#[test]
fn allow_rule_toml_round_trips_through_parse() {
    let prefix = argv(&["git", "commit", "-m", "it's \"quoted\"\n\\ and \u{7f}\u{1b} ünïcode"]);
    let text = allow_rule_toml(&prefix);
    assert!(text.starts_with("\n[[rule]]\n"), "{text}");
    let appended = format!("{USER_RULES}{text}");
    let rules = parse_ok(&appended, RuleSource::User);
    assert_eq!(
        rules.rules().last(),
        Some(&Rule {
            prefix,
            decision: RuleDecision::Allow,
            justification: None,
            source: RuleSource::User,
        })
    );
    assert_eq!(
        allow_rule_toml(&argv(&["git", "status"])),
        "\n[[rule]]\nprefix = [\"git\", \"status\"]\ndecision = \"allow\"\n"
    );
}

#[test]
fn rules_serialise_for_policy_check_output() {
    let rule = Rule {
        prefix: argv(&["git", "push"]),
        decision: RuleDecision::Prompt,
        justification: None,
        source: RuleSource::Workspace,
    };
    assert_eq!(
        serde_json::to_string(&rule).unwrap(),
        r#"{"prefix":["git","push"],"decision":"prompt","justification":null,"source":"workspace"}"#
    );
}

#[test]
fn an_allow_rule_never_matches_a_word_that_was_not_utf8() {
    // `tool\u{FFFD}` is what an always-allow for `$'tool\xff'` would have saved; it must not
    // stand for `$'tool\xfe'` (also U+FFFD once lossy), nor for itself.
    let rules = parse_ok(
        "[[rule]]\nprefix = [\"./tool\u{FFFD}\"]\ndecision = \"allow\"\n[[rule]]\nprefix = \
         [\"cargo\"]\ndecision = \"allow\"\n",
        RuleSource::User,
    );
    assert_eq!(rules.evaluate(&argv(&["./tool\u{FFFD}", "arg"])), None);
    assert_eq!(rules.evaluate(&argv(&["cargo", "b\u{FFFD}ild"])), None);
    assert!(rules.evaluate(&argv(&["cargo", "build"])).is_some());
}
