//! `cordon diff` and `cordon undo`: what a transactional run changed, and taking it back.

#[cfg(target_os = "linux")]
use std::fmt::Write as _;
use std::process::ExitCode;

#[cfg(target_os = "linux")]
use anyhow::Context;
#[cfg(target_os = "linux")]
use cordon_policies::render_text;

use crate::flags::{DiffArgs, UndoArgs};

#[cfg(target_os = "linux")]
fn show(path: &std::path::Path) -> String {
    render_text(&path.display().to_string()).text
}

#[cfg(target_os = "linux")]
fn home() -> anyhow::Result<std::path::PathBuf> {
    crate::config::cordon_home().context("CORDON_HOME is not set and there is no HOME")
}

/// Where "the newest run that changed something here" looks.
#[cfg(target_os = "linux")]
fn here() -> anyhow::Result<std::path::PathBuf> {
    let cwd = std::env::current_dir().context("the current directory")?;
    Ok(std::fs::canonicalize(&cwd).unwrap_or(cwd))
}

#[cfg(target_os = "linux")]
pub fn diff(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let home = home()?;
    if args.list {
        let runs = cordon_exec_core::reviews(&home);
        let text = if args.json {
            format!("{}\n", serde_json::to_string_pretty(&runs)?)
        } else if runs.is_empty() {
            "no run is kept\n".to_owned()
        } else {
            let mut text = String::new();
            for run in &runs {
                let first = run.applied.first().map(|c| show(&c.path)).unwrap_or_default();
                let _ = writeln!(
                    text,
                    "{}  {:<11}  {} applied, {} held  {first}",
                    run.id,
                    run.state,
                    run.applied.len(),
                    run.held.len()
                );
            }
            text
        };
        crate::output::write_stdout(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let run = cordon_exec_core::review(&home, args.run.as_deref(), &here()?)?;
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&run)?)
    } else {
        let mut text = format!("{} ({}), kept in {}\n", run.id, run.state, show(&run.dir));
        for change in &run.applied {
            let mark = match change.kind {
                cordon_exec_core::ChangeKind::Created => "A",
                cordon_exec_core::ChangeKind::Replaced => "M",
                cordon_exec_core::ChangeKind::Deleted => "D",
            };
            let _ = write!(text, "{mark} {}", show(&change.path));
            if let Some(kept) = &change.kept {
                let _ = write!(text, "  (was: {})", show(kept));
            }
            if let Some(why) = &change.not_kept {
                let _ = write!(text, "  (not kept: {})", render_text(why).text);
            }
            if change.changed_since {
                text.push_str("  (changed since)");
            }
            text.push('\n');
        }
        for change in &run.held {
            let _ = writeln!(
                text,
                "H {}  ({}; kept: {})",
                show(&change.path),
                render_text(&change.why).text,
                show(&change.kept_at)
            );
        }
        if run.applied.is_empty() && run.held.is_empty() {
            text.push_str("(no change recorded)\n");
        }
        text
    };
    crate::output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(target_os = "linux")]
pub fn undo(args: &UndoArgs) -> anyhow::Result<ExitCode> {
    let home = home()?;
    let id = match &args.run {
        Some(id) => id.clone(),
        None => cordon_exec_core::review(&home, None, &here()?)?.id,
    };
    let done = cordon_exec_core::undo(&home, &id)?;
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&done)?)
    } else {
        let mut text = String::new();
        for path in &done.restored {
            let _ = writeln!(text, "restored {}", show(path));
        }
        for moved in &done.removed {
            let _ = writeln!(text, "removed {} (now {})", show(&moved.path), show(&moved.to));
        }
        for left in &done.left {
            let _ = writeln!(text, "left {}: {}", show(&left.path), render_text(&left.why).text);
        }
        if done.restored.is_empty() && done.removed.is_empty() && done.left.is_empty() {
            let _ = writeln!(text, "run {id} recorded no change");
        }
        text
    };
    crate::output::write_stdout(&text)?;
    Ok(if done.left.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(not(target_os = "linux"))]
pub fn diff(_args: &DiffArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("cordon diff: transactional runs are Linux's; nothing is kept on this platform")
}

#[cfg(not(target_os = "linux"))]
pub fn undo(_args: &UndoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("cordon undo: transactional runs are Linux's; nothing is kept on this platform")
}
