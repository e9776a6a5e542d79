//! The everyday corpus (`tests/corpus/everyday_commands.txt`): commands an agent runs every day,
//! each marked readable (`R`) or unreadable by design (`U`). With one `forbidden` rule that none
//! of them uses, no readable command may be refused under `never` or asked under `on-request`,
//! and every command marked unreadable must be read as unreadable (so the marks stay true).

use cordon_policies::{
    AskForApproval, AssessInput, Escalation, PreRunDecision, RuleSet, RuleSource, assess,
};

const CORPUS: &str = include_str!("../corpus/everyday_commands.txt");

fn rules() -> RuleSet {
    let toml = "[[rule]]\nprefix = [\"git\", \"push\"]\ndecision = \"forbidden\"\n";
    RuleSet::parse(toml, RuleSource::User).expect("rules parse").0
}

#[test]
fn readable_everyday_commands_are_never_asked_or_refused_beside_an_unrelated_rule() {
    let rules = rules();
    let mut wrong = Vec::new();
    let (mut readable, mut unreadable) = (0, 0);
    for line in CORPUS.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (mark, script) = line.split_once('\t').expect("a mark, a tab and a script");
        let command: Vec<String> = ["bash", "-lc", script].map(str::to_owned).to_vec();
        let decide = |approval| {
            assess(&AssessInput {
                command: &command,
                approval,
                rules: &rules,
                escalation: &Escalation::UseDefault,
                trusted_program: &|_| true,
            })
        };
        let never = decide(AskForApproval::Never);
        let on_request = decide(AskForApproval::OnRequest);
        match mark {
            "R" => {
                readable += 1;
                let refused = matches!(never.decision, PreRunDecision::Refuse { .. });
                let asked = matches!(on_request.decision, PreRunDecision::Ask { .. });
                if refused || asked || never.unreadable.is_some() {
                    wrong
                        .push(format!("R {script}: {:?} / {:?}", never.decision, never.unreadable));
                }
            }
            "U" => {
                unreadable += 1;
                if never.unreadable.is_none() {
                    wrong.push(format!("U {script}: read as readable"));
                }
            }
            other => panic!("unknown mark {other:?} in {line:?}"),
        }
    }
    let total = readable + unreadable;
    println!(
        "everyday corpus: {total} commands, {readable} readable, {unreadable} unreadable by design \
         ({:.1}%)",
        100.0 * f64::from(unreadable) / f64::from(total)
    );
    assert!(total >= 300, "the corpus has {total} commands");
    assert!(wrong.is_empty(), "{} misjudged:\n{}", wrong.len(), wrong.join("\n"));
}
