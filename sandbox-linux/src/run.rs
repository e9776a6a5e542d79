//! The helper personality: confine this process, then `execvp` the command (DESIGN §5).

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use cordon_policies::{EnvSnapshot, SandboxPolicy};

use crate::args::{HelperArgs, MountViewRequirement, ParentDeath, Strictness, parse_helper_args};
use crate::caps::{self, CapabilityDrop};
use crate::error::HelperError;
use crate::landlock_rules::{self, LandlockEnforcement};
use crate::mount_view::{self, MountView};
use crate::report::{self, Enforcement};
use crate::seccomp::{self, Network};
use crate::sys;

/// The helper's entry point: parses `std::env::args_os()` (after `argv[0]`), confines the
/// process and execs the command. Never returns; on failure prints one line
/// `codex-linux-sandbox: <what failed>: <why>` and exits with the documented code.
pub fn run_main() -> ! {
    let result = parse_helper_args(std::env::args_os().skip(1)).and_then(|args| run(&args));
    let error = match result {
        Ok(never) => match never {},
        Err(error) => error,
    };
    eprintln!("{}: {error}", crate::HELPER_ARG0);
    std::process::exit(error.exit_code())
}

fn run(args: &HelperArgs) -> Result<Infallible, HelperError> {
    if let SandboxPolicy::DangerFullAccess {} = args.sandbox_policy {
        return exec(args, &[]);
    }
    let env =
        EnvSnapshot::from_lookup(|k| std::env::var_os(k), Some(nix::unistd::getuid().as_raw()));
    let policy = args
        .sandbox_policy
        .resolve(&args.sandbox_policy_cwd, &env.view(), |p| std::fs::canonicalize(p))
        .map_err(HelperError::Policy)?;
    let best_effort = args.strictness == Strictness::BestEffort;

    // 1. The mount view: needs CAP_SYS_ADMIN in the new namespace, so before everything else.
    let mut extra_writable = Vec::new();
    let mount_view = match args.mount_view {
        MountViewRequirement::Disabled => Err("turned off with --no-mount-view".to_owned()),
        MountViewRequirement::WhenAvailable | MountViewRequirement::Required => {
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            let plan = mount_view::plan(&policy, &mount_view::parse_mountinfo(&mountinfo));
            match mount_view::enter(&plan)? {
                MountView::Built => {
                    if plan.private_dev_shm {
                        extra_writable.push(PathBuf::from("/dev/shm"));
                    }
                    Ok(())
                }
                MountView::Unavailable(reason) => Err(reason),
                MountView::Disabled => Err("turned off".to_owned()),
            }
        }
    };

    // 2. Landlock (also sets no_new_privs).
    let landlock_plan = landlock_rules::plan(&policy, &extra_writable);
    let landlock_enforced = match landlock_rules::install(&landlock_plan) {
        Ok(LandlockEnforcement::Enforced) => true,
        Ok(LandlockEnforcement::NotEnforced) => false,
        Err(_) if best_effort => false,
        Err(error) => return Err(error),
    };

    // 3. Capabilities: nothing below needs any.
    let capabilities = caps::drop_all()?;

    // 4. no_new_privs, then seccomp (last: it forbids the mount calls above).
    let no_new_privs = nix::sys::prctl::set_no_new_privs().is_ok();
    let network = if policy.network_access { Network::On } else { Network::Off };
    let seccomp = match seccomp::build_program(network).and_then(|p| seccomp::install(&p)) {
        Ok(()) => true,
        Err(_) if best_effort => false,
        Err(error) => return Err(error),
    };

    let enforcement = Enforcement {
        landlock_abi: sys::landlock_abi(),
        landlock_enforced,
        mount_view,
        mount_view_required: args.mount_view == MountViewRequirement::Required,
        seccomp,
        no_new_privs,
        bounding_set_dropped: capabilities == CapabilityDrop::All,
        network_access: policy.network_access,
    };
    let gaps = report::gaps(&enforcement);
    if best_effort {
        if !gaps.is_empty() {
            let list: Vec<&str> = gaps.iter().map(|g| g.what.as_str()).collect();
            eprintln!("{}: warning: not enforced: {}", crate::HELPER_ARG0, list.join("; "));
        }
    } else {
        let required: Vec<&str> =
            gaps.iter().filter(|g| g.required).map(|g| g.what.as_str()).collect();
        if !required.is_empty() {
            return Err(HelperError::NotEnforced(required.join("; ")));
        }
    }

    if args.parent_death == ParentDeath::Kill {
        // Survives the exec below (it is cleared only for set-user-ID programs, which
        // no_new_privs rules out).
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
            .map_err(|e| HelperError::ParentDeathSignal(e.into()))?;
    }
    let mut env = vec![("CORDON_SANDBOX", "linux")];
    if !policy.network_access {
        env.push(("CORDON_SANDBOX_NETWORK_DISABLED", "1"));
    }
    exec(args, &env)
}

/// Enters the command cwd (after the mount view, so relative paths resolve through it) and
/// execs the command with `extra_env` added to the environment.
fn exec(args: &HelperArgs, extra_env: &[(&str, &str)]) -> Result<Infallible, HelperError> {
    let cwd = match &args.command_cwd {
        Some(cwd) => cwd.clone(),
        None => std::env::current_dir()
            .map_err(|source| HelperError::CommandCwd { path: PathBuf::from("."), source })?,
    };
    nix::unistd::chdir(&cwd)
        .map_err(|e| HelperError::CommandCwd { path: cwd.clone(), source: e.into() })?;

    let program = &args.command[0];
    let exec_error =
        |source: std::io::Error| HelperError::Exec { command: program.clone(), source };
    let to_c = |s: OsString| {
        CString::new(s.into_vec())
            .map_err(|e| exec_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))
    };
    let argv = args.command.iter().cloned().map(to_c).collect::<Result<Vec<_>, _>>()?;
    let mut envp = Vec::new();
    for (key, value) in std::env::vars_os() {
        if extra_env.iter().any(|(k, _)| key.as_bytes() == k.as_bytes()) {
            continue;
        }
        let mut pair = key.into_vec();
        pair.push(b'=');
        pair.extend(value.into_vec());
        envp.push(to_c(OsString::from_vec(pair))?);
    }
    for (key, value) in extra_env {
        envp.push(to_c(OsString::from(format!("{key}={value}")))?);
    }
    sys::reset_sigpipe();
    let error = nix::unistd::execvpe(&argv[0], &argv, &envp).unwrap_err();
    Err(exec_error(error.into()))
}
