//! `cordon doctor`: what this kernel offers and what each sandbox mode enforces here.

#[cfg(target_os = "linux")]
use std::fmt::Write as _;
use std::process::ExitCode;

use cordon_policies::{DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, SandboxMode};
use serde_json::json;

use crate::flags::DoctorArgs;

#[cfg(target_os = "linux")]
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    use cordon_sandbox_linux::report::gaps;
    use cordon_sandbox_linux::seccomp::{Network, deny_rules};

    let probe = cordon_sandbox_linux::probe::probe();
    let predicted = probe.predicted_enforcement(Network::Off);
    let gaps = gaps(&predicted);
    let network_gaps: Vec<_> = gaps_with_network(&probe);
    let deny = |network| {
        deny_rules(network)
            .into_iter()
            .map(|r| json!({"syscall": r.syscall, "when": r.condition, "stops": r.reason}))
            .collect::<Vec<_>>()
    };
    let mode_report = |mode: SandboxMode| match mode {
        SandboxMode::DangerFullAccess => {
            json!({"sandbox": false, "enforced": [], "not_enforced": []})
        }
        SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => {
            let mut enforced = Vec::new();
            if predicted.landlock_enforced {
                enforced.push(format!(
                    "Landlock ABI {}: {}",
                    predicted.landlock_abi,
                    if mode == SandboxMode::ReadOnly {
                        "no writes anywhere but /dev/null"
                    } else {
                        "writes only under the writable roots (and /dev/null)"
                    }
                ));
            }
            if predicted.mount_view.is_ok() {
                enforced.push("mount view: read-only mounts outside the writable roots, protected paths read-only, hidden paths covered, private /dev/shm".to_owned());
            }
            if predicted.seccomp {
                enforced.push("seccomp: network off unless allowed; ptrace, namespaces, mount, keyrings, bpf, perf, TIOCSTI refused".to_owned());
            }
            enforced.push("no_new_privs; every capability dropped".to_owned());
            let mut report = json!({"sandbox": true, "enforced": enforced, "not_enforced": gaps});
            if mode == SandboxMode::WorkspaceWrite {
                report["not_enforced_with_network"] = json!(network_gaps);
            }
            report
        }
    };
    let modes: serde_json::Map<String, serde_json::Value> =
        SandboxMode::ALL.iter().map(|m| (m.as_str().to_owned(), mode_report(*m))).collect();
    let report = json!({
        "kernel": {
            "landlock_abi": probe.landlock_abi,
            "seccomp_filter": probe.seccomp_filter,
            "unprivileged_user_namespaces": probe.unprivileged_user_namespaces,
            "mount_view": match &probe.mount_view { Ok(()) => json!(true), Err(e) => json!(e) },
            "legacy_tiocsti": probe.legacy_tiocsti,
            "root": probe.is_root,
        },
        "modes": modes,
        "protected_paths": DEFAULT_PROTECTED_PATHS,
        "protected_paths_note": "a protected path that does not exist stays creatable: making it read-only would need a mount point on the host, and the helper never leaves anything behind",
        "hidden_paths": DEFAULT_HIDDEN_PATHS,
        "seccomp_deny_list": {"network_off": deny(Network::Off), "network_on_socket_rule": deny(Network::On).into_iter().filter(|r| r["syscall"] == "socket").collect::<Vec<_>>()},
    });
    if args.json {
        return write_stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    write_stdout(&render_text(&report))
}

/// Gaps that only a policy with the network on has.
#[cfg(target_os = "linux")]
fn gaps_with_network(
    probe: &cordon_sandbox_linux::probe::KernelProbe,
) -> Vec<cordon_sandbox_linux::report::Gap> {
    use cordon_sandbox_linux::seccomp::Network;
    let without = cordon_sandbox_linux::report::gaps(&probe.predicted_enforcement(Network::Off));
    cordon_sandbox_linux::report::gaps(&probe.predicted_enforcement(Network::On))
        .into_iter()
        .filter(|g| !without.contains(g))
        .collect()
}

#[cfg(target_os = "linux")]
fn render_text(report: &serde_json::Value) -> String {
    let mut out = String::new();
    macro_rules! println {
        ($($arg:tt)*) => {{
            let _ = writeln!(out, $($arg)*);
        }};
    }
    let kernel = &report["kernel"];
    println!("kernel");
    println!("  landlock ABI:                 {}", kernel["landlock_abi"]);
    println!("  seccomp filters:              {}", kernel["seccomp_filter"]);
    println!("  unprivileged user namespaces: {}", kernel["unprivileged_user_namespaces"]);
    println!("  mount view:                   {}", kernel["mount_view"]);
    let tiocsti = match kernel["legacy_tiocsti"].as_bool() {
        Some(true) => "1 (TIOCSTI allowed by the kernel; cordon's seccomp refuses it)",
        Some(false) => "0 (the kernel refuses TIOCSTI; cordon's seccomp does too)",
        None => "absent (TIOCSTI always allowed by the kernel; cordon's seccomp refuses it)",
    };
    println!("  dev.tty.legacy_tiocsti:       {tiocsti}");
    println!("  running as root:              {}", kernel["root"]);
    for (mode, value) in report["modes"].as_object().into_iter().flatten() {
        println!("\n{mode}");
        if value["sandbox"] == false {
            println!("  no sandbox");
            continue;
        }
        for item in value["enforced"].as_array().into_iter().flatten() {
            println!("  enforced:     {}", item.as_str().unwrap_or_default());
        }
        for gap in value["not_enforced"].as_array().into_iter().flatten() {
            let required =
                if gap["required"] == true { " [required: runs refuse, exit 125]" } else { "" };
            println!("  NOT enforced: {}{required}", gap["what"].as_str().unwrap_or_default());
        }
        for gap in value["not_enforced_with_network"].as_array().into_iter().flatten() {
            println!("  NOT enforced: {}", gap["what"].as_str().unwrap_or_default());
        }
    }
    println!("\nprotected paths (read-only inside writable roots): {}", report["protected_paths"]);
    println!("  note: {}", report["protected_paths_note"].as_str().unwrap_or_default());
    println!("hidden paths: {}", report["hidden_paths"]);
    println!(
        "\nseccomp deny list (EPERM; other architectures and x32 numbers are refused, clone3 is ENOSYS):"
    );
    for rule in report["seccomp_deny_list"]["network_off"].as_array().into_iter().flatten() {
        println!(
            "  {:<18} {:<40} {}",
            rule["syscall"].as_str().unwrap_or_default(),
            rule["when"].as_str().unwrap_or_default(),
            rule["stops"].as_str().unwrap_or_default()
        );
    }
    for rule in
        report["seccomp_deny_list"]["network_on_socket_rule"].as_array().into_iter().flatten()
    {
        println!(
            "  with --network: socket when {}: {}",
            rule["when"].as_str().unwrap_or_default(),
            rule["stops"].as_str().unwrap_or_default()
        );
    }
    out
}

fn write_stdout(text: &str) -> anyhow::Result<ExitCode> {
    crate::output::write_stdout(text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(target_os = "linux"))]
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let modes: Vec<&str> = SandboxMode::ALL.iter().map(|m| m.as_str()).collect();
    let report = json!({
        "platform": std::env::consts::OS,
        "sandbox": "seatbelt (/usr/bin/sandbox-exec)",
        "modes": modes,
        "protected_paths": DEFAULT_PROTECTED_PATHS,
        "hidden_paths": DEFAULT_HIDDEN_PATHS,
    });
    if args.json {
        return write_stdout(&format!("{report}\n"));
    }
    write_stdout(&format!(
        "platform {}: Seatbelt via /usr/bin/sandbox-exec\n",
        std::env::consts::OS
    ))
}
