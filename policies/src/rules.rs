//! Prefix rules: `allow`, `prompt` or `forbidden` for commands that start
//! with given words, read from `$CORDON_HOME/rules.toml` and `<workspace>/.cordon/rules.toml`.
//!
//! ```toml
//! [[rule]]
//! prefix = ["git", "push"]
//! decision = "prompt"
//! justification = "pushes leave the machine"
//! ```
//!
//! A sandboxed command can write its workspace, so the workspace file may only tighten: its
//! `allow` rules are dropped with a warning.

use serde::{Deserialize, Serialize};

use crate::judge::{Unit, units};
use crate::normalize::basename;
use crate::reading::read_command;
use crate::shell_script::program_name;
use crate::unreadable::{COMPUTED_WORD, Unreadable};

/// What a rule decides, ordered by strictness: `Allow < Prompt < Forbidden`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleDecision {
    /// Run without asking (still sandboxed).
    Allow,
    /// Always ask first.
    Prompt,
    /// Refuse to run.
    Forbidden,
}

/// Which file a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleSource {
    /// `$CORDON_HOME/rules.toml`.
    User,
    /// `<workspace>/.cordon/rules.toml`.
    Workspace,
}

impl RuleSource {
    /// How messages name the file.
    pub(crate) fn file_name(self) -> &'static str {
        match self {
            RuleSource::User => "$CORDON_HOME/rules.toml",
            RuleSource::Workspace => ".cordon/rules.toml",
        }
    }
}

/// One `[[rule]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The words a command must start with (never empty in a parsed [`RuleSet`]).
    pub prefix: Vec<String>,
    pub decision: RuleDecision,
    /// Why the rule exists; shown when it asks or refuses.
    pub justification: Option<String>,
    pub source: RuleSource,
}

/// Whether a rule applies to one unit of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    No,
    /// The command might be one the rule names: a word the shell computes stands where the
    /// rule's prefix has a word, or the unit cannot be read at all.
    Maybe,
    Yes,
}

impl Rule {
    /// The rule's prefix against `words` from their start, a computed word matching maybe.
    fn prefix_match(prefix: &[String], words: &[String], program_matches: bool) -> Match {
        let (Some((_, rest)), Some(command)) = (prefix.split_first(), words.get(..prefix.len()))
        else {
            return Match::No;
        };
        if !program_matches {
            return Match::No;
        }
        let mut result = Match::Yes;
        for (needed, word) in rest.iter().zip(&command[1..]) {
            if word.contains(COMPUTED_WORD) {
                result = Match::Maybe;
            } else if needed != word {
                return Match::No;
            }
        }
        result
    }

    fn matches_exactly(&self, command: &[String]) -> bool {
        self.exact_match(command) == Match::Yes
    }

    fn exact_match(&self, command: &[String]) -> Match {
        let (Some(first), Some(command_first)) = (self.prefix.first(), command.first()) else {
            return Match::No;
        };
        let program = first == command_first || program_name(command_first) == Some(first.as_str());
        Rule::prefix_match(&self.prefix, command, program)
    }

    fn normalized_match(&self, command: &[String]) -> Match {
        let prefix = self.normalized_prefix();
        let Ok(command) = read_command(command) else { return Match::No };
        let program = !prefix.is_empty() && prefix.first() == command.first();
        Rule::prefix_match(&prefix, &command, program)
    }

    fn matches_words(&self, words: &[String]) -> bool {
        let prefix = self.normalized_prefix();
        !prefix.is_empty() && prefix.iter().all(|needed| words.contains(needed))
    }

    fn normalized_prefix(&self) -> Vec<String> {
        match read_command(&self.prefix) {
            Ok(prefix) if !prefix.is_empty() => prefix,
            _ => self.prefix.iter().map(|w| basename(w).to_owned()).collect(),
        }
    }

    fn applies_to(&self, unit: &Unit) -> Match {
        match unit {
            Unit::Command(command) | Unit::ShellCall(command) => {
                self.exact_match(command).max(self.normalized_match(command))
            }
            Unit::Opaque(words) => {
                if self.matches_words(words) {
                    Match::Yes
                } else {
                    Match::No
                }
            }
            Unit::Unreadable(_) => Match::Maybe,
        }
    }
}

/// What the rules say about one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Judgement<'a> {
    /// The strictest rule that surely applies (for an allow rule: to every command of it).
    pub rule: Option<&'a Rule>,
    /// When a `prompt` or `forbidden` rule might apply but cordon cannot tell: the strictest
    /// such rule, and why the command cannot be read.
    pub uncertain: Option<(&'a Rule, Option<Unreadable>)>,
    /// Why the command cannot be read, whether or not a rule is concerned.
    pub unreadable: Option<Unreadable>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    rules: Vec<Rule>,
}

/// A rules file's text as TOML sees it. Unknown keys are errors: a misspelt `decison` must not
/// silently turn a `forbidden` rule into nothing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    prefix: Vec<String>,
    decision: RuleDecision,
    justification: Option<String>,
}

/// A rules file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    /// Not TOML, or not the rules shape (unknown key, missing `decision`, wrong type, …).
    #[error("{}: {}{message}", .file.file_name(), line_prefix(*.line))]
    Toml {
        file: RuleSource,
        /// 1-based line of the problem, when TOML knows it.
        line: Option<usize>,
        message: String,
    },
    /// A `[[rule]]` with `prefix = []`, which would match every command.
    #[error("{}: rule {number} has an empty prefix", .file.file_name())]
    EmptyPrefix {
        file: RuleSource,
        /// 1-based position of the `[[rule]]` in the file.
        number: usize,
    },
}

impl RulesError {
    /// The problem without the file's symbolic name, for callers that name the real path:
    /// `line 3: unknown field …`.
    pub fn detail(&self) -> String {
        match self {
            RulesError::Toml { line, message, .. } => format!("{}{message}", line_prefix(*line)),
            RulesError::EmptyPrefix { number, .. } => format!("rule {number} has an empty prefix"),
        }
    }
}

fn line_prefix(line: Option<usize>) -> String {
    line.map(|line| format!("line {line}: ")).unwrap_or_default()
}

impl RuleSet {
    /// Parses one rules file's text. Unknown keys and empty prefixes are errors. A `Workspace`
    /// file's `allow` rules are dropped and reported as warnings (one line each); its `prompt`
    /// and `forbidden` rules apply.
    pub fn parse(text: &str, source: RuleSource) -> Result<(RuleSet, Vec<String>), RulesError> {
        let file: RulesFile = toml::from_str(text).map_err(|error| RulesError::Toml {
            file: source,
            line: error
                .span()
                .and_then(|span| text.get(..span.start))
                .map(|before| before.matches('\n').count() + 1),
            message: error.message().trim().replace('\n', " "),
        })?;
        let mut rules = Vec::with_capacity(file.rule.len());
        let mut warnings = Vec::new();
        for (index, entry) in file.rule.into_iter().enumerate() {
            if entry.prefix.is_empty() {
                return Err(RulesError::EmptyPrefix { file: source, number: index + 1 });
            }
            if source == RuleSource::Workspace && entry.decision == RuleDecision::Allow {
                let prefix = entry.prefix;
                warnings.push(format!(
                    "ignoring allow rule {prefix:?} in the workspace rules file: a sandboxed \
                     command can write it; put allow rules in $CORDON_HOME/rules.toml"
                ));
                continue;
            }
            rules.push(Rule {
                prefix: entry.prefix,
                decision: entry.decision,
                justification: entry.justification,
                source,
            });
        }
        Ok((RuleSet { rules }, warnings))
    }

    /// Appends `other`'s rules after this set's (file order decides ties).
    pub fn merge(&mut self, other: RuleSet) {
        self.rules.extend(other.rules);
    }

    /// The rule that decides `command`, if any (ties: the first in file order):
    /// - the strictest `forbidden` or `prompt` rule that applies to the command, to any inner
    ///   command of a plain shell script (matched after normalization), or to any word of a
    ///   script that is not plain;
    /// - otherwise an `allow` rule, but only when *every* command that will run is matched by
    ///   an allow rule or is known-safe, at least one by a rule, and no script is opaque: one
    ///   allow rule for `cargo test` never approves `cargo test; python3 …`.
    pub fn evaluate(&self, command: &[String]) -> Option<&Rule> {
        self.judge(command).rule
    }

    /// The strictest rule that surely applies, the strictest that might apply, and why the
    /// command cannot be read (see [`Judgement`]).
    pub(crate) fn judge(&self, command: &[String]) -> Judgement<'_> {
        let units = units(command);
        let unreadable = units.iter().find_map(|unit| match unit {
            Unit::Unreadable(why) => Some(why.clone()),
            Unit::Command(_) | Unit::ShellCall(_) | Unit::Opaque(_) => None,
        });
        let mut sure: Option<&Rule> = None;
        let mut maybe: Option<&Rule> = None;
        for rule in self.rules.iter().filter(|r| r.decision != RuleDecision::Allow) {
            let best = units.iter().map(|unit| rule.applies_to(unit)).max().unwrap_or(Match::No);
            let slot = match best {
                Match::Yes => &mut sure,
                Match::Maybe => &mut maybe,
                Match::No => continue,
            };
            if slot.is_none_or(|current| rule.decision > current.decision) {
                *slot = Some(rule);
            }
        }
        let uncertain = match (sure, maybe) {
            (_, None) => None,
            (Some(sure), Some(maybe)) if sure.decision >= maybe.decision => None,
            (_, Some(maybe)) => Some((maybe, unreadable.clone())),
        };
        let rule = match sure {
            Some(rule) => Some(rule),
            None if unreadable.is_some() => None,
            None => self.allow_for_every_command(&units),
        };
        Judgement { rule, uncertain, unreadable }
    }

    fn allow_for_every_command<'a>(&'a self, units: &[Unit]) -> Option<&'a Rule> {
        let allows = || self.rules.iter().filter(|r| r.decision == RuleDecision::Allow);
        let leaves: Vec<&Vec<String>> = units
            .iter()
            .filter_map(|unit| match unit {
                Unit::Command(command) => Some(command),
                Unit::ShellCall(_) | Unit::Opaque(_) | Unit::Unreadable(_) => None,
            })
            .collect();
        // A script that is not plain is never allowed unasked, and neither is an empty one.
        if leaves.is_empty() || units.iter().any(|u| matches!(u, Unit::Opaque(_))) {
            return None;
        }
        // Nor a command with a word that was not UTF-8 (U+FFFD stands for any invalid byte in
        // the text decisions see): a rule written for one such word would allow them all.
        if leaves.iter().any(|command| command.iter().any(|word| word.contains('\u{FFFD}'))) {
            return None;
        }
        let mut first_match = None;
        for command in leaves {
            match allows().find(|r| r.matches_exactly(command)) {
                Some(rule) => {
                    first_match.get_or_insert(rule);
                }
                None => return None,
            }
        }
        first_match
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

/// TOML text of one allow rule, ready to append to `$CORDON_HOME/rules.toml` (starts with
/// `"\n[[rule]]\n"`). Round-trips through [`RuleSet::parse`] for any non-empty prefix.
pub fn allow_rule_toml(prefix: &[String]) -> String {
    let mut words = String::new();
    match prefix.serialize(toml::ser::ValueSerializer::new(&mut words)) {
        Ok(()) => format!("\n[[rule]]\nprefix = {words}\ndecision = \"allow\"\n"),
        // A list of strings always serialises; should that ever change, add no rule (the user
        // is asked again next time) rather than write a broken file.
        Err(error) => {
            let error = error.to_string().replace('\n', " ");
            format!("\n# cordon could not write an allow rule here: {error}\n")
        }
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
