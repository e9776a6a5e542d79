//! `cordon doctor`: what this kernel offers and what each sandbox mode enforces here.

#[cfg(target_os = "linux")]
use std::fmt::Write as _;
use std::process::ExitCode;

#[cfg(target_os = "linux")]
use cordon_exec_core::{DoctorReport, MountViewStatus};
use cordon_policies::{
    DEFAULT_EXCLUDE_EXCEPTIONS, DEFAULT_EXCLUDES, SECRET_FILES, expand_hidden_path, secret_file,
    value_rules,
};
#[cfg(not(target_os = "linux"))]
use cordon_policies::{DEFAULT_HIDDEN_PATHS, DEFAULT_PROTECTED_PATHS, SandboxMode};
use serde_json::json;

use crate::config::Config;
use crate::flags::DoctorArgs;

#[cfg(target_os = "linux")]
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let report = DoctorReport::gather();
    let config = crate::config::load(crate::config::cordon_home().as_deref(), &[]);
    let broken = broken_state_files(&config);
    let environment = environment_report(&config);
    let mut hidden_here = hidden_here(&config);
    let hiding = Hiding::of(&report);
    for item in &mut hidden_here {
        item.hidden_by = hiding.hidden_by();
    }
    let home_hidden = home_hidden(&config);
    let advice = git_advice();
    let presets = presets_report(&config);
    let limits = cordon_exec_core::limits_report();
    let write_layer = write_layer_status();
    let configured_writes =
        config.as_ref().ok().and_then(|config| config.writes).unwrap_or_default();
    let text = if args.json {
        let mut document = serde_json::to_value(&report)?;
        if let Some(map) = document.as_object_mut() {
            map.insert(
                "write_layer".into(),
                match &write_layer {
                    Ok(()) => json!({ "available": true, "configured": configured_writes }),
                    Err(why) => {
                        json!({ "available": false, "why": why, "configured": configured_writes })
                    }
                },
            );
            map.insert("config_errors".into(), json!(broken));
            map.insert("presets".into(), presets);
            map.insert("limits".into(), serde_json::to_value(&limits)?);
            map.insert("hidden_here".into(), json!(hidden_here));
            map.insert("hidden_catalogue".into(), json!(SECRET_FILES));
            map.insert("home_hidden".into(), json!(home_hidden));
            map.insert("home_readable".into(), json!(cordon_policies::HOME_READABLE));
            map.insert("environment".into(), environment);
            map.insert("advice".into(), json!(advice));
        }
        format!("{}\n", serde_json::to_string_pretty(&document)?)
    } else {
        let mut text = String::new();
        for error in &broken {
            let _ = writeln!(
                text,
                "CONFIG BROKEN: {error}\n  every `cordon exec`, `executor` and `mcp-server` \
                 refuses to start (exit 125) until it is fixed (docs/config.md)"
            );
        }
        text.push_str(&render_text(&report));
        render_hidden_here(&mut text, &hidden_here);
        let _ = writeln!(text, "  {}", hiding.describe());
        render_home_hidden(&mut text, &home_hidden);
        render_environment(&mut text, &environment);
        render_deny_list(&mut text, &report);
        crate::presets::render_doctor(&mut text, &presets);
        render_limits(&mut text, &limits);
        let _ = match (&write_layer, configured_writes) {
            (_, cordon_exec_core::WriteChoice::Direct) => writeln!(
                text,
                "\nwrites: direct (config writes = \"direct\"; docs/transactions.md)"
            ),
            (Ok(()), _) => writeln!(
                text,
                "\nwrites: transactional (cordon exec writes through the write gate, its /tmp \
                 the workspace's own; cordon sandbox when --writes transaction is named; \
                 docs/transactions.md)"
            ),
            (Err(why), cordon_exec_core::WriteChoice::Auto) => writeln!(
                text,
                "\nwrites: direct (no write layer here: {why}; the workspace is searched for \
                 repositories instead; docs/transactions.md)"
            ),
            (Err(why), cordon_exec_core::WriteChoice::Transaction) => writeln!(
                text,
                "\nwrites: none (config writes = \"transaction\", and no write layer here: {why}; \
                 every sandboxed cordon exec is refused; docs/transactions.md)"
            ),
        };
        for line in &advice {
            let _ = writeln!(text, "advice: {line}");
        }
        text
    };
    crate::output::write_stdout(&text)?;
    Ok(if report.default_policy_enforceable && broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_NOT_ENFORCEABLE)
    })
}

/// What keeps every run from starting: the config file (or `$CORDON_HOME/rules.toml`) that
/// cordon will not read, one line each.
fn broken_state_files(config: &anyhow::Result<Config>) -> Vec<String> {
    let mut broken = Vec::new();
    if let Err(error) = config {
        broken.push(format!("{error:#}"));
    }
    if let Err(error) = crate::settings::load_user_rules(crate::config::cordon_home().as_deref()) {
        broken.push(format!("{error:#}"));
    }
    broken
}

/// Which resource limits (`--limit`) this machine holds, as this user, and how.
#[cfg(target_os = "linux")]
fn render_limits(out: &mut String, report: &cordon_exec_core::LimitsReport) {
    let _ = writeln!(out, "\nresource limits (--limit; docs/limits.md):");
    match (&report.cgroup, &report.no_cgroup) {
        (Some(cgroup), _) => {
            let _ = writeln!(out, "  a cgroup per command: {cgroup}");
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "  no cgroup per command: {why}");
        }
        (None, None) => {}
    }
    for limit in &report.limits {
        let _ = writeln!(out, "  {:<11} {:<8} {}", limit.key.as_str(), limit.how, limit.detail);
    }
}

/// What the user's own git setup leaves open. A directory holding plain `HEAD`, `config` and
/// `objects` is a repository to git: a sandboxed command can write one anywhere in its
/// workspace (a fixture, a download), and a later `git` run outside the sandbox in that
/// directory obeys its `config` (`core.fsmonitor`, hooks). `safe.bareRepository=explicit`
/// makes git ignore such a directory unless it is named with `--git-dir`.
#[cfg(target_os = "linux")]
fn git_advice() -> Vec<String> {
    // The global and system files, with their includes; from `/`, so that no repository's own
    // config (a workspace's, which may be a FIFO or anything else) is read.
    let explicit = ["--global", "--system"].iter().any(|scope| {
        git_config(&[scope, "--includes", "--get", "safe.bareRepository"])
            .is_some_and(|value| value.trim() == "explicit")
    });
    if explicit || git_config(&["--version"]).is_none() {
        return Vec::new();
    }
    vec![
        "run `git config --global safe.bareRepository explicit`: git then ignores a directory \
         shaped like a bare repository (HEAD, config, objects) that a sandboxed command could \
         leave in a workspace, whose config would run code when you use git there"
            .to_owned(),
    ]
}

/// `git ARGS` (`git config …`, or `git --version` when the first is `--version`) run from `/`
/// with a deadline: its stdout, `None` when git is missing, fails or takes too long.
#[cfg(target_os = "linux")]
fn git_config(args: &[&str]) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut command = Command::new("git");
    if args.first() != Some(&"--version") {
        command.arg("config");
    }
    let mut child = command
        .args(args)
        .current_dir("/")
        .env("GIT_CEILING_DIRECTORIES", "/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
                return status.success().then_some(out);
            }
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Whether `--writes transaction` works here, as this user with this `CORDON_HOME`: a
/// transactional `true` in a throwaway directory, run by this very binary (its run directory
/// goes when it ends). The reason cordon gives when it cannot.
#[cfg(target_os = "linux")]
fn write_layer_status() -> Result<(), String> {
    let workspace =
        tempfile::tempdir().map_err(|e| format!("cannot make a directory to try: {e}"))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find cordon itself: {e}"))?;
    let out = std::process::Command::new(exe)
        .args(["exec", "-a", "never", "--writes", "transaction", "-C"])
        .arg(workspace.path())
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cordon: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(cordon_policies::render_text(stderr.lines().next().unwrap_or("refused")).text)
}

/// `cordon doctor`'s status when the default policy cannot be enforced here.
#[cfg(target_os = "linux")]
const EXIT_NOT_ENFORCEABLE: u8 = 1;

#[cfg(target_os = "linux")]
fn render_text(report: &DoctorReport) -> String {
    let mut out = String::new();
    macro_rules! println {
        ($($arg:tt)*) => {{
            let _ = writeln!(out, $($arg)*);
        }};
    }
    let kernel = &report.kernel;
    println!("kernel");
    println!("  landlock ABI:                 {}", kernel.landlock_abi);
    println!("  seccomp filters:              {}", kernel.seccomp_filter);
    println!("  unprivileged user namespaces: {}", kernel.unprivileged_user_namespaces);
    match &kernel.mount_view {
        MountViewStatus::Available(_) => println!("  mount view:                   true"),
        MountViewStatus::Unavailable(why) => println!("  mount view:                   {why:?}"),
    }
    println!("  containment:                  {}", report.containment);
    let tiocsti = match kernel.legacy_tiocsti {
        Some(true) => "1 (TIOCSTI allowed by the kernel; cordon's seccomp refuses it)",
        Some(false) => "0 (the kernel refuses TIOCSTI; cordon's seccomp does too)",
        None => "absent (TIOCSTI always allowed by the kernel; cordon's seccomp refuses it)",
    };
    println!("  dev.tty.legacy_tiocsti:       {tiocsti}");
    println!("  running as root:              {}", kernel.root);
    for cause in &report.causes {
        println!("  missing {}: {}\n    fix: {}", cause.mechanism, cause.why, cause.fix);
    }
    if !report.default_policy_enforceable {
        println!(
            "  the default policy (workspace-write) cannot be enforced here: sandboxed runs \
             refuse with exit 125 (--best-effort runs them with what is available)"
        );
    }
    for (mode, value) in &report.modes {
        println!("\n{mode}");
        if !value.sandbox {
            println!("  no sandbox");
            continue;
        }
        for item in &value.enforced {
            println!("  enforced:     {item}");
        }
        for gap in &value.not_enforced {
            let required = if gap.required { " [required: runs refuse, exit 125]" } else { "" };
            println!("  NOT enforced: {}{required}", gap.what);
        }
        for gap in value.not_enforced_with_network.iter().flatten() {
            println!("  NOT enforced: {}", gap.what);
        }
    }
    println!("\nprotected paths (read-only inside writable roots): {:?}", report.protected_paths);
    println!("  note: {}", report.protected_paths_note);
    println!(
        "hidden paths: {} catalogue entries by default (credential files, histories, browser \
         and mail profiles, agent and bus sockets; `cordon doctor --json` lists them with their \
         tools); expanded for this user's $HOME, XDG and tool variables they name more paths, \
         which `cordon exec --dry-run -- true` counts",
        report.hidden_paths.len()
    );
    let sockets = &report.unix_sockets;
    println!("\nnetwork off: {}", sockets.network_off_is);
    println!("\nhost UNIX socket files, reached by a sandboxed command:");
    println!("  network off:   {}", sockets.network_off);
    println!("  domain list:   {}", sockets.domain_list);
    println!("  network on:    {}", sockets.network_on);
    out
}

#[cfg(target_os = "linux")]
fn render_deny_list(out: &mut String, report: &DoctorReport) {
    let _ = writeln!(
        out,
        "\nseccomp deny list (EPERM; other architectures and x32 numbers are refused, clone3 is ENOSYS):"
    );
    for rule in &report.seccomp_deny_list.network_off {
        let _ = writeln!(out, "  {:<18} {:<40} {}", rule.syscall, rule.when, rule.stops);
    }
    for rule in &report.seccomp_deny_list.network_on_socket_rule {
        let _ = writeln!(out, "  with --network: socket when {}: {}", rule.when, rule.stops);
    }
    for rule in &report.seccomp_deny_list.domain_list_socket_rules {
        let _ = writeln!(
            out,
            "  with --allow-domain: {} when {}: {}",
            rule.syscall, rule.when, rule.stops
        );
    }
}

/// What hides a hidden path on this kernel, for every entry of "hidden here".
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
struct Hiding {
    mount_view: bool,
    landlock: bool,
}

#[cfg(target_os = "linux")]
impl Hiding {
    fn of(report: &DoctorReport) -> Hiding {
        Hiding {
            mount_view: matches!(report.kernel.mount_view, MountViewStatus::Available(_)),
            landlock: report.kernel.landlock_abi >= 1,
        }
    }

    fn hidden_by(self) -> Vec<&'static str> {
        let mut by = Vec::new();
        if self.mount_view {
            by.push("mount view");
        }
        if self.landlock {
            by.push("landlock");
        }
        by
    }

    /// One line on how the entries above are hidden here, and where each mechanism stops.
    fn describe(self) -> &'static str {
        match (self.mount_view, self.landlock) {
            (true, true) => {
                "hidden by the mount view (an empty stand-in) and by Landlock (no read right: \
                 also when a program outside replaces one or creates it during a run); inside \
                 a writable root (/tmp, $TMPDIR, the workspace) the mount view alone hides"
            }
            (false, true) => {
                "no mount view here: Landlock hides them (no read right, the names stay \
                 visible); one inside a writable root (/tmp, $TMPDIR, the workspace) is \
                 readable"
            }
            (true, false) => {
                "no Landlock here: the mount view alone hides them (runs refuse, exit 125, \
                 unless --best-effort); a file a program outside replaces during a run is \
                 readable to that run"
            }
            (false, false) => "neither the mount view nor Landlock is available: nothing is hidden",
        }
    }
}

/// One hidden path that exists for this user.
#[derive(Debug, serde::Serialize)]
struct HiddenHere {
    /// The absolute path.
    path: std::path::PathBuf,
    /// The hidden-path entry it comes from (`~/.ssh`).
    entry: String,
    /// The catalogue's tool and why; none for an entry of the user's own list.
    tool: Option<&'static str>,
    why: Option<&'static str>,
    /// What hides it on this system (`mount view`, `landlock`; `seatbelt` on macOS).
    hidden_by: Vec<&'static str>,
}

/// The hidden paths in force (the config's list or the catalogue) that exist for this user: what
/// a sandboxed command finds replaced by an empty stand-in. Expanded as the sandbox expands
/// them, from cordon's own environment (HOME, the password database's home, XDG_RUNTIME_DIR,
/// SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS).
fn hidden_here(config: &anyhow::Result<Config>) -> Vec<HiddenHere> {
    let (Ok(config), Ok(view)) = (config, crate::config::user_view()) else {
        return Vec::new();
    };
    let env = view.view();
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    for entry in crate::settings::configured_hidden_paths(config) {
        let known = secret_file(&entry);
        for path in expand_hidden_path(&entry, &env) {
            if std::fs::metadata(&path).is_err() || !seen.insert(path.clone()) {
                continue;
            }
            found.push(HiddenHere {
                path,
                entry: entry.clone(),
                tool: known.map(|k| k.tool),
                why: known.map(|k| k.why),
                hidden_by: if cfg!(target_os = "macos") { vec!["seatbelt"] } else { Vec::new() },
            });
        }
    }
    found
}

/// The entries of the home directories the allow-list hides from a sandboxed command started
/// here, under the config's settings.
#[cfg(target_os = "linux")]
fn home_hidden(config: &anyhow::Result<Config>) -> Vec<std::path::PathBuf> {
    let (Ok(config), Ok(view), Ok(cwd)) =
        (config, crate::config::user_view(), std::env::current_dir())
    else {
        return Vec::new();
    };
    let policy = cordon_policies::SandboxPolicy::WorkspaceWrite(Default::default());
    let mut request = cordon_policies::SandboxRequest::new(policy, cwd.clone());
    request.home_reads = crate::settings::home_reading(config, &[]);
    let Ok(resolved) = request.policy.resolve(&cwd, &view.view(), |p| std::fs::canonicalize(p))
    else {
        return Vec::new();
    };
    cordon_exec_core::home_list_plan(&request, &view, &resolved).hidden
}

#[cfg(target_os = "linux")]
fn render_home_hidden(out: &mut String, hidden: &[std::path::PathBuf]) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "
hidden by the home allow-list (entries of your home directories that are not on the \
         list of what a sandboxed command reads there; --unhide PATH, docs/secrets.md):"
    );
    if hidden.is_empty() {
        let _ = writeln!(out, "  (none: every entry here is on the list, or the list is off)");
    }
    for path in hidden {
        let _ = writeln!(out, "  {}", cordon_policies::render_text(&path.to_string_lossy()).text);
    }
}

fn render_hidden_here(out: &mut String, hidden: &[HiddenHere]) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "\nhidden here (a sandboxed command finds these empty):");
    if hidden.is_empty() {
        let _ = writeln!(out, "  (none of the hidden paths exists for this user)");
    }
    for item in hidden {
        let what = match (item.tool, item.why) {
            (Some(tool), Some(why)) => format!("{tool}: {why}"),
            _ => "your hidden_paths".to_owned(),
        };
        let path = cordon_policies::render_text(&item.path.to_string_lossy()).text;
        let _ = writeln!(out, "  {path:<44} {what}");
    }
}

/// The environment policy in force: the config's `[shell_environment_policy]`, the default
/// excludes it applies (or their absence), and what it removes from this environment (names
/// only).
fn environment_report(config: &anyhow::Result<Config>) -> serde_json::Value {
    let policy = match config {
        Ok(config) => &config.shell_environment_policy,
        Err(error) => return json!({"config_error": format!("{error:#}")}),
    };
    let (_, removed_here) = crate::settings::filter_own_env(policy);
    let defaults_on = !policy.ignore_default_excludes;
    json!({
        "inherit": policy.inherit,
        "default_excludes": if defaults_on { DEFAULT_EXCLUDES.to_vec() } else { Vec::new() },
        "kept_despite_default_excludes":
            if defaults_on { DEFAULT_EXCLUDE_EXCEPTIONS.to_vec() } else { Vec::new() },
        "value_rules": if defaults_on { value_rules() } else { Vec::new() },
        "exclude": policy.exclude,
        "set": policy.set.keys().collect::<Vec<_>>(),
        "include_only": policy.include_only,
        "removed_here": removed_here,
        "note": "patterns are case-insensitive globs over the whole name; HOME, TMPDIR and the \
                 hidden paths come from cordon's own environment, whatever the command is given",
    })
}

fn render_environment(out: &mut String, env: &serde_json::Value) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "\nenvironment policy (shell_environment_policy)");
    if let Some(error) = env["config_error"].as_str() {
        let _ = writeln!(out, "  config error: {error}");
        return;
    }
    let list = |key: &str| {
        let items: Vec<&str> =
            env[key].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        if items.is_empty() { "(none)".to_owned() } else { items.join(" ") }
    };
    let _ = writeln!(out, "  inherit:          {}", env["inherit"].as_str().unwrap_or_default());
    let _ = writeln!(out, "  default excludes: {}", list("default_excludes"));
    let _ = writeln!(out, "  kept by name:     {}", list("kept_despite_default_excludes"));
    for rule in env["value_rules"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  value rule:       {}", rule.as_str().unwrap_or_default());
    }
    let _ = writeln!(out, "  exclude:          {}", list("exclude"));
    let _ = writeln!(out, "  set:              {}", list("set"));
    let _ = writeln!(out, "  include_only:     {}", list("include_only"));
    let removed: Vec<String> = env["removed_here"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            let name = item["name"].as_str().unwrap_or_default();
            let reason = item["reason"].as_str().unwrap_or_default();
            format!("{} ({reason})", cordon_policies::render_text(name).text)
        })
        .collect();
    let removed = if removed.is_empty() { "(none)".to_owned() } else { removed.join(" ") };
    let _ = writeln!(out, "  removed here:     {removed}");
    let _ = writeln!(out, "  note: {}", env["note"].as_str().unwrap_or_default());
}

/// Writes the report; exit 1 when the config is broken (every run would refuse to start).
#[cfg(not(target_os = "linux"))]
fn write_stdout(text: &str, broken: &[String]) -> anyhow::Result<ExitCode> {
    crate::output::write_stdout(text)?;
    Ok(if broken.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(not(target_os = "linux"))]
pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let config = crate::config::load(crate::config::cordon_home().as_deref(), &[]);
    let broken = broken_state_files(&config);
    let hidden_here = hidden_here(&config);
    let modes: Vec<&str> = SandboxMode::ALL.iter().map(|m| m.as_str()).collect();
    let report = json!({
        "config_errors": broken,
        "platform": std::env::consts::OS,
        "sandbox": "seatbelt (/usr/bin/sandbox-exec)",
        "modes": modes,
        "protected_paths": DEFAULT_PROTECTED_PATHS,
        "hidden_paths": DEFAULT_HIDDEN_PATHS,
        "hidden_here": hidden_here,
        "hidden_catalogue": SECRET_FILES,
        "environment": environment_report(&config),
        "presets": presets_report(&config),
    });
    if args.json {
        return write_stdout(&format!("{report}\n"), &broken);
    }
    let mut text: String = broken.iter().map(|error| format!("CONFIG BROKEN: {error}\n")).collect();
    text.push_str(&format!(
        "platform {}: Seatbelt via /usr/bin/sandbox-exec\n",
        std::env::consts::OS
    ));
    render_hidden_here(&mut text, &hidden_here);
    render_environment(&mut text, &report["environment"]);
    crate::presets::render_doctor(&mut text, &report["presets"]);
    write_stdout(&text, &broken)
}

/// The presets and what each allows with this user's configuration.
fn presets_report(config: &anyhow::Result<Config>) -> serde_json::Value {
    let in_config = config.as_ref().map(|c| c.presets.as_slice()).unwrap_or_default();
    crate::presets::doctor_report(in_config)
}
