//! `cordon executor`: sessions over JSON lines on stdin/stdout. Logging goes to stderr only.

use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

use cordon_exec_core::executor::serve;
use cordon_exec_core::session::{SessionDefaults, SessionManager};

use crate::exec_cmd::{Bypass, command_env, prepare};
use crate::flags::ExecutorArgs;

pub fn run(args: ExecutorArgs) -> anyhow::Result<ExitCode> {
    let prepared = prepare(&args.sandbox, &args.policy, Bypass::No)?;
    announce_gaps(&prepared.request.policy);
    let defaults = SessionDefaults {
        cwd: prepared.request.cwd.clone(),
        sandbox_policy: prepared.request.policy.clone(),
        approval: prepared.approval,
        env: command_env(&prepared.config),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let served = local.block_on(&runtime, async move {
        let manager = Rc::new(SessionManager::new(Arc::new(prepared.orchestrator), defaults)?);
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        serve(stdin, tokio::io::stdout(), Rc::clone(&manager)).await?;
        manager.shutdown();
        anyhow::Ok(())
    });
    // Calls still in flight are abandoned (their sessions were terminated above), and so are
    // blocking helpers stuck in a read of stdin (after `shutdown`) or a write to a terminal.
    drop(local);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Says once, at start, what this machine's sandbox does not enforce (DESIGN §5 step 2).
fn announce_gaps(policy: &cordon_policies::SandboxPolicy) {
    #[cfg(target_os = "linux")]
    if !matches!(policy, cordon_policies::SandboxPolicy::DangerFullAccess {}) {
        let gaps = cordon_sandbox_linux::report::gaps(
            &cordon_sandbox_linux::probe::probe()
                .predicted_enforcement(crate::exec_cmd::network_of(policy)),
        );
        for gap in gaps {
            let required = if gap.required { " (required: sandboxed calls will fail)" } else { "" };
            eprintln!("cordon executor: not enforced here: {}{required}", gap.what);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = policy;
}
