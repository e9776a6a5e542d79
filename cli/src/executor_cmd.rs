//! `cordon executor`: sessions over JSON lines on stdin/stdout. Logging goes to stderr only.

use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

use cordon_exec_core::executor::{LocalExecutor, ServeEnd, serve};
use cordon_exec_core::session::{SessionDefaults, SessionManager};

use cordon_exec_core::platform::predicted_gaps;
use cordon_policies::SandboxMode;

use crate::flags::ExecutorArgs;
use crate::settings::{Bypass, Settings};

pub fn run(args: ExecutorArgs) -> anyhow::Result<ExitCode> {
    let settings =
        Settings::load(&args.sandbox, &args.policy, SandboxMode::WorkspaceWrite, Bypass::No)?;
    announce_gaps(&settings.policy);
    let orchestrator = settings.orchestrator()?;
    let defaults = SessionDefaults {
        cwd: settings.cwd.clone(),
        sandbox_policy: settings.policy.clone(),
        approval: settings.approval,
        env: settings.command_env().0,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let served = local.block_on(&runtime, async move {
        let manager = Rc::new(SessionManager::new(Arc::new(orchestrator), defaults)?);
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let backend = Rc::new(LocalExecutor { manager: Rc::clone(&manager) });
        let end = serve(stdin, tokio::io::stdout(), backend).await?;
        manager.shutdown();
        anyhow::Ok(end)
    });
    // Calls still in flight are abandoned (their sessions were terminated above), and so are
    // blocking helpers stuck in a read of stdin (after `shutdown`) or a write to a terminal.
    drop(local);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    // The manager's last owner went with the local set: its temporary directory is gone.
    match served? {
        ServeEnd::Eof | ServeEnd::Shutdown => Ok(ExitCode::SUCCESS),
        ServeEnd::Signal(signal) => Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))),
    }
}

/// Says once, at start, what this machine's sandbox does not enforce (DESIGN §5 step 2).
fn announce_gaps(policy: &cordon_policies::SandboxPolicy) {
    for gap in predicted_gaps(policy) {
        let required = if gap.required { " (required: sandboxed calls will fail)" } else { "" };
        eprintln!("cordon executor: not enforced here: {}{required}", gap.what);
    }
}
