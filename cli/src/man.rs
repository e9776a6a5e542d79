//! `cordon man`: one roff page per command, generated from the clap definitions so that every
//! flag is documented where `--help` documents it, plus the sections `--help` has no room for
//! (exit status, files, environment) on the top page.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::flags::{Cli, ManArgs};

/// What every page ends with, after clap's own sections.
const SEE_ALSO_DOCS: &str = "The docs/ directory of the source tree describes each area in full: \
commands.md, config.md, rules.md, approvals.md, environment.md, secrets.md, network.md, \
trust-boundary.md, linux-sandbox.md, macos.md, executor-protocol.md, mcp.md, remote.md, \
exit-codes.md, logging.md, kernels.md, performance.md.";

/// The top page's sections that `--help` leaves out.
const TOP_PAGE_EXTRA: &str = r#".SH "EXIT STATUS"
.TP
\fIthe command's own\fR
The command ran; its status is passed through (128+N when signal N ended it).
.TP
\fB124\fR
\-\-timeout killed the command and everything it started.
.TP
\fB125\fR
cordon's own failure: the sandbox could not be set up on this kernel (the reason is printed;
\-\-best\-effort accepts a weaker sandbox), a refusal (forbidden rule, approval denied), a config
or rules file cordon will not read, or a remote machine that cannot enforce the policy.
.TP
\fB126\fR, \fB127\fR
The command could not be executed, or was not found.
.TP
\fB2\fR
The command line could not be parsed; nothing ran.
.TP
\fB1\fR
From \fBcordon doctor\fR: the default policy cannot be enforced here, or the config is broken.
.SH FILES
.TP
\fI$CORDON_HOME/config.toml\fR
Settings (default \fI~/.cordon\fR; no file needed). \fBcordon config show\fR prints every
effective setting and where it came from.
.TP
\fI$CORDON_HOME/rules.toml\fR, \fI<workspace>/.cordon/rules.toml\fR
Prefix rules: allow, prompt, forbidden. The workspace file may only tighten.
.SH ENVIRONMENT
.TP
\fBCORDON_HOME\fR
Where cordon keeps its config, rules and caches (default \fI~/.cordon\fR). It is never writable
from inside a sandbox.
.TP
\fBRUST_LOG\fR
When set, the log filter instead of \-v/\-vv.
.TP
\fBCORDON_LINUX_SANDBOX_EXE\fR
The Linux helper to run instead of this binary under the name codex\-linux\-sandbox.
"#;

pub fn run(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let mut command = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    // Deferred subcommands (see `flags::Command`) are built before the pages list them.
    command.build();
    if let Some(dir) = &args.dir {
        for path in write_every_page(&command, dir)? {
            crate::output::write_stdout(&format!("{}\n", path.display()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut page = &command;
    for name in &args.command {
        page = page.find_subcommand(name).with_context(|| {
            format!("no command `{}`: see `cordon --help`", args.command.join(" "))
        })?;
    }
    let text = render(page, args.command.is_empty())?;
    crate::output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Every page of `command` and its subcommands, as `NAME.1` files in `dir`.
fn write_every_page(command: &clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for (page, top) in pages(command) {
        let path = dir.join(format!("{}.1", page_name(page)));
        // The directory may be one a sandboxed command could write: a planted link at a page's
        // name is replaced, never followed.
        crate::state_files::write_replacing(&path, &render(page, top)?, 0o644)
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// `command` and every subcommand below it that has a page, with whether it is the top one.
fn pages(command: &clap::Command) -> Vec<(&clap::Command, bool)> {
    let mut all = vec![(command, true)];
    let mut index = 0;
    while index < all.len() {
        let (parent, _) = all[index];
        all.extend(parent.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| (s, false)));
        index += 1;
    }
    all
}

/// `cordon-exec`, `cordon-sandbox-linux`: the name clap gave the built subcommand.
fn page_name(command: &clap::Command) -> String {
    command.get_display_name().unwrap_or(command.get_name()).to_owned()
}

fn render(command: &clap::Command, top: bool) -> anyhow::Result<String> {
    let mut page = Vec::new();
    let source = format!("cordon {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(command.clone()).source(source).render(&mut page)?;
    let mut text = String::from_utf8_lossy(&page).into_owned();
    if top {
        text.push_str(TOP_PAGE_EXTRA);
    }
    text.push_str(".SH \"SEE ALSO\"\n");
    let related: Vec<String> = if top {
        command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("\\fB{}\\fR(1)", page_name(s)))
            .collect()
    } else {
        vec!["\\fBcordon\\fR(1)".to_owned()]
    };
    text.push_str(&format!("{}\n.PP\n{SEE_ALSO_DOCS}\n", related.join(", ")));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built() -> clap::Command {
        let mut command = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
        command.build();
        command
    }

    /// roff's spelling of a flag: `-` is written `\-`.
    fn roff(flag: &str) -> String {
        flag.replace('-', "\\-")
    }

    /// Every flag of every command is on that command's page, and every page another page
    /// points to exists.
    #[test]
    fn every_flag_of_every_command_is_on_its_page() {
        let command = built();
        let all = pages(&command);
        let names: Vec<String> = all.iter().map(|(page, _)| page_name(page)).collect();
        assert!(names.contains(&"cordon-exec".to_owned()), "{names:?}");
        assert!(names.contains(&"cordon-sandbox-linux".to_owned()), "{names:?}");
        for (page, top) in all {
            let text = render(page, top).unwrap();
            for arg in page.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    let spelled = roff(&format!("--{long}"));
                    assert!(text.contains(&spelled), "{}: --{long} missing", page_name(page));
                }
                if let Some(short) = arg.get_short() {
                    let spelled = roff(&format!("-{short}"));
                    assert!(text.contains(&spelled), "{}: -{short} missing", page_name(page));
                }
            }
            for cited in text.split("\\fB").skip(1).filter_map(|s| s.split_once("\\fR(1)")) {
                let cited = cited.0.replace("\\-", "-");
                assert!(names.contains(&cited), "{} cites {cited}(1)", page_name(page));
            }
        }
    }

    #[test]
    fn pages_are_written_to_a_directory_one_per_command() {
        let dir = tempfile::tempdir().unwrap();
        // A link planted at a page's name is replaced, its target left alone.
        let target = dir.path().join("target");
        std::fs::write(&target, "untouched").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("cordon-exec.1")).unwrap();
        let written = write_every_page(&built(), dir.path()).unwrap();
        assert!(written.len() >= 8, "{written:?}");
        let exec = std::fs::read_to_string(dir.path().join("cordon-exec.1")).unwrap();
        assert!(exec.contains(".TH cordon-exec 1"), "{}", &exec[..200.min(exec.len())]);
        let top = std::fs::read_to_string(dir.path().join("cordon.1")).unwrap();
        assert!(top.contains("EXIT STATUS") && top.contains("CORDON_HOME"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert!(!std::fs::symlink_metadata(dir.path().join("cordon-exec.1")).unwrap().is_symlink());
    }
}
