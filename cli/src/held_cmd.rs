//! `cordon held`: the transactional runs that kept something, and what to do with it.

#[cfg(target_os = "linux")]
use std::fmt::Write as _;
use std::process::ExitCode;

#[cfg(target_os = "linux")]
use anyhow::Context;
#[cfg(target_os = "linux")]
use cordon_policies::render_text;

use crate::flags::HeldArgs;

#[cfg(target_os = "linux")]
pub fn run(args: &HeldArgs) -> anyhow::Result<ExitCode> {
    let home =
        crate::config::cordon_home().context("CORDON_HOME is not set and there is no HOME")?;
    let show = |path: &std::path::Path| render_text(&path.display().to_string()).text;
    let Some(id) = &args.run else {
        let runs = cordon_exec_core::kept_runs(&home);
        let text = if args.json {
            format!("{}\n", serde_json::to_string_pretty(&runs)?)
        } else if runs.is_empty() {
            "no run kept anything\n".to_owned()
        } else {
            let mut text = String::new();
            for run in &runs {
                let first = run.held.first().map(|change| show(&change.path)).unwrap_or_default();
                let more = match run.held.len() {
                    0 | 1 => String::new(),
                    n => format!(" and {} more", n - 1),
                };
                let _ = writeln!(text, "{}  {:<11}  {first}{more}", run.id, run.state);
            }
            text
        };
        crate::output::write_stdout(&text)?;
        return Ok(ExitCode::SUCCESS);
    };
    if args.drop {
        cordon_exec_core::drop_run(&home, id)?;
        crate::output::write_stdout(&format!("removed {id}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.take.is_empty() {
        let taken = cordon_exec_core::take(&home, id, &args.take)?;
        let mut text = String::new();
        for path in &taken {
            let _ = writeln!(text, "took in {}", show(path));
        }
        crate::output::write_stdout(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let run = cordon_exec_core::kept_run(&home, id)?;
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&run)?)
    } else {
        let mut text = format!("{} ({}), kept in {}\n", run.id, run.state, show(&run.dir));
        for change in &run.held {
            let _ = writeln!(
                text,
                "  {}\n      why:  {}\n      kept: {}",
                show(&change.path),
                render_text(&change.why).text,
                show(&change.kept_at)
            );
            for entry in &change.contents {
                let name = if entry.path.as_os_str().is_empty() {
                    ".".to_owned()
                } else {
                    show(&entry.path)
                };
                let _ = writeln!(text, "        {name}: {}", render_text(&entry.what).text);
            }
        }
        text
    };
    crate::output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(target_os = "linux"))]
pub fn run(_args: &HeldArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("cordon held: transactional runs are Linux's; nothing is kept on this platform")
}
