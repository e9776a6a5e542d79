//! The helper personality: build the mount view and the containment, confine the supervisor,
//! then start the command in it.

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use cordon_policies::{EnvSnapshot, ResolvedPolicy, SandboxPolicy};

use crate::apply::ApplyContext;
use crate::args::{Caller, DirIdentity, HelperArgs, Invocation, UserView, parse_invocation};
use crate::caps::{self, CapabilityDrop};
use crate::command::PreparedCommand;
use crate::containment::{self, Containment, NamespaceInit, PidNamespaceRequest};
use crate::error::HelperError;
use crate::hidden_reads;
use crate::landlock_rules::{self, DevPts, LandlockEnforcement, RuleTargets};
use crate::listings::Listings;
use crate::mount_view::{self, MountView};
use crate::proc_view::{self, ProcView};
use crate::proxy_listener;
use crate::report::{self, Enforcement};
use crate::sealing::LinkSearch;
use crate::seccomp;
use crate::sys;
use crate::unix_sockets::UnixSockets;
use cordon_policies::{MountViewRequirement, Strictness, WriteChoice};

/// The helper's entry point: parses `std::env::args_os()` (after `argv[0]`), confines the
/// process and execs the command. Never returns; on failure prints one line
/// `codex-linux-sandbox: <what failed>: <why>` (`cordon: sandbox: …` under `--caller cordon`)
/// and exits with the documented code.
///
/// Call it first thing in `main`, as a binary's `argv[0]` dispatch does: a descriptor named on
/// the command line (`--proxy-fd`) is taken as inherited, with no owner in this process yet.
/// A process with more than one thread is refused ([`HelperError::Threaded`], exit 125):
/// Landlock and seccomp would confine only this thread, and the forked supervisor allocates.
pub fn run_main(transactions: crate::own_transaction::TransactionHooks) -> ! {
    let (pid_namespace, args) = take_no_pid_namespace(std::env::args_os().skip(1).collect());
    crate::messages::set_caller(Caller::of(&args));
    let result = match parse_invocation(args) {
        Ok(Invocation::Help) => {
            crate::messages::usage();
            std::process::exit(0)
        }
        Ok(Invocation::Version) => {
            crate::messages::version();
            std::process::exit(0)
        }
        Ok(Invocation::Run(_)) if !sys::single_threaded() => Err(HelperError::Threaded),
        // SAFETY: this process has one thread (checked by the arm above; only this thread
        // could start another, and the helper starts none). This is the start of the process
        // (see above): `--proxy-fd` names an inherited descriptor that nothing here owns, and
        // without a namespace init there is no status pipe to take.
        Ok(Invocation::Run(args)) => unsafe {
            let args = HelperArgs { transactions: Some(transactions), ..*args };
            close_inherited_directories();
            run(&args, pid_namespace, CommandEnv::Inherited)
        },
        Err(error) => Err(error),
    };
    let error = match result {
        Ok(never) => match never {},
        Err(error) => error,
    };
    crate::messages::error(&error);
    std::process::exit(error.exit_code())
}

/// Closes the directories and `O_PATH` descriptors the caller passed on (see
/// [`sys::close_inherited_directories`]), saying so.
fn close_inherited_directories() {
    let closed = sys::close_inherited_directories();
    if closed > 0 {
        crate::messages::warning(format_args!(
            "closed {closed} inherited directory descriptor(s): through one the command would \
             reach the host's files around the sandbox"
        ));
    }
}

/// A descriptor the caller handed on still reaches its file through the caller's mount, around
/// the view's read-only mounts: through one, the command could change a file's mode, owner,
/// times or extended attributes (ownership is enough), or reopen it for writing through
/// `/proc/self/fd/N`. The command gets each such file through the view instead — by its name,
/// or a terminal by the name the sandbox's `/dev` gives it — or not at all when the view does
/// not show it. Says what it closed or could not give through the view.
/// `layered_devices` are the devices of the layered roots' own directories, taken before their
/// overlays cover them; `layered_roots` the roots.
fn give_handed_files_through_view(
    handed: &[sys::HandedFile],
    layered_devices: &[libc::dev_t],
    layered_roots: &[PathBuf],
) {
    if handed.is_empty() {
        return;
    }
    let names = |file: &sys::HandedFile| -> Vec<PathBuf> {
        let Some(name) = file.name() else { return Vec::new() };
        let mut names = vec![name.to_path_buf()];
        if file.is_terminal() {
            // Bound once, under the name of the first descriptor it is on.
            for fd in (0..3).chain([file.fd()]) {
                let place = crate::dev_view::terminal_place(fd, name);
                if !names.contains(&place) {
                    names.push(place);
                }
            }
        }
        names
    };
    let given = sys::give_handed_files_through_view(
        handed,
        &sys::ViewNames { names: &names, layered_devices, layered_roots },
    );
    if !given.closed.is_empty() {
        let closed: Vec<String> = given
            .closed
            .iter()
            .map(|(fd, name)| match name {
                Some(name) => format!("{fd} ({})", name.display()),
                None => format!("{fd} (no longer reachable by its name)"),
            })
            .collect();
        crate::messages::warning(format_args!(
            "closed inherited descriptor(s) {}: the sandbox shows their files elsewhere or not \
             at all, and through them the command could change the files around it",
            closed.join(", ")
        ));
    }
    if given.terminals_left > 0 {
        crate::messages::warning(format_args!(
            "not enforced: the terminal handed on has no name in the sandbox's view, so the \
             command can change its mode and owner"
        ));
    }
}

/// The helper without an `execve` of the helper binary: run in the calling process (`cordon
/// sandbox`, which would exec the helper anyway) or in a child the caller forked for it
/// (`cordon exec`) — one exec fewer on the way to the command. The caller is set up as the
/// helper's caller would set it up: stdio, process group, parent-death signal. What the exec
/// would have done is done here first: descriptors marked close-on-exec are closed (a
/// supervisor that never execs would otherwise keep the caller's open, and a spawner waits for
/// one of them to close), caught signals go back to their default disposition (ignored ones stay
/// ignored, as across an exec), and `PATH` becomes `env`'s, which the search for the command
/// uses. `env` itself is the command's environment, as the exec'd helper would have inherited
/// it; the rest of this process's own environment is left alone (the helper reads none of it,
/// so rewriting it variable by variable would only add work to every launch). Then the same
/// steps as [`run_main`]. Never returns.
///
/// # Safety
///
/// - This process has one thread, and if it is a forked (or cloned) child, the process it was
///   forked from had one thread at the fork: the helper allocates, changes the environment
///   and forks, none of which the child of a threaded process may do, and Landlock and
///   seccomp would confine only this thread.
/// - No code that owns one of this process's descriptors above stderr runs again: the helper
///   closes them (those an exec would close, as `descriptors` says), and never returns.
/// - `args.proxy_fd`, when given, names a descriptor the caller left open for the helper alone,
///   and with [`InProcessStart::NamespaceInit`] and a status report, descriptor 3
///   ([`containment::STATUS_REPORT_FD`]) is the status pipe, owned by nothing else.
pub unsafe fn run_in_process(
    args: &HelperArgs,
    env: &[(OsString, OsString)],
    descriptors: InheritedDescriptors,
    start: InProcessStart,
) -> ! {
    crate::messages::set_caller(args.caller);
    // A status report pipe on descriptor 3 is the supervisor's, not the caller's.
    let lowest_closed = match start {
        InProcessStart::NamespaceInit(init)
            if init.status_report() == containment::StatusReport::OnDescriptor3 =>
        {
            containment::STATUS_REPORT_FD + 1
        }
        InProcessStart::NamespaceInit(_) | InProcessStart::Plain => 3,
    };
    // The proxy's hand-over socket is the helper's, passed to it as an exec would have: kept.
    match descriptors {
        // SAFETY: no owner of a closed descriptor runs again: the caller's code never does
        // (this function's contract), and this function has opened none yet.
        InheritedDescriptors::AllCloseOnExec => unsafe {
            sys::close_descriptors_from(lowest_closed, args.proxy_fd);
        },
        // SAFETY: as above.
        InheritedDescriptors::Mixed => unsafe {
            sys::close_cloexec_descriptors(args.proxy_fd);
            close_inherited_directories();
        },
    }
    sys::reset_caught_signals();
    let path = env.iter().find(|(key, _)| key == "PATH").map(|(_, value)| value);
    // SAFETY: this process has one thread (this function's contract).
    unsafe { sys::set_search_path(path) };
    let result = match start {
        // SAFETY: one thread, `--proxy-fd` and descriptor 3 as `run` needs them (this
        // function's contract).
        InProcessStart::Plain => unsafe {
            run(args, PidNamespaceRequest::WhenAvailable, CommandEnv::Given(env))
        },
        InProcessStart::NamespaceInit(init) => {
            let request = PidNamespaceRequest::Entered(init.status_report());
            containment::init_namespaces(init)
                // SAFETY: as for `Plain`.
                .and_then(|()| unsafe { run(args, request, CommandEnv::Given(env)) })
        }
    };
    let error = match result {
        Ok(never) => match never {},
        Err(error) => error,
    };
    crate::messages::error(&error);
    // `_exit`: buffered output and exit handlers belong to the caller, not to this helper.
    sys::exit_now(error.exit_code())
}

/// How the process that calls [`run_in_process`] was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InProcessStart {
    /// Forked by the caller (or the caller itself): the helper makes the PID namespace and
    /// forks the supervisor into it, staying outside.
    Plain,
    /// Cloned into new PID + IPC namespaces ([`containment::clone_namespace_init`]): this
    /// process is the supervisor, with no helper between it and its spawner. For spawners that
    /// give the command no terminal.
    NamespaceInit(NamespaceInit),
}

/// What the descriptors above stderr of a [`run_in_process`] caller are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InheritedDescriptors {
    /// Every one is marked close-on-exec (a spawner marked them all, as cordon's does for the
    /// command), except `--proxy-fd`'s, which is the helper's: the others are closed at once
    /// (`close_range`), with no listing of `/proc/self/fd` — whose entries the kernel would
    /// build, and drop again at exit, on every launch.
    AllCloseOnExec,
    /// Some may be meant for the command (`cordon sandbox` passes its caller's on, as an exec
    /// would): those marked close-on-exec are closed (but `--proxy-fd`'s), the others stay.
    Mixed,
}

/// Where the command's environment comes from.
#[derive(Debug, Clone, Copy)]
enum CommandEnv<'a> {
    /// This process's (the exec'd helper's).
    Inherited,
    /// The caller's list ([`run_in_process`]).
    Given(&'a [(OsString, OsString)]),
}

/// A transaction of the helper's own, begun, with what its gate needs besides the changes.
type OwnRun = (Box<dyn crate::own_transaction::OpenTransaction>, ApplyContext);

/// The run state of a transaction of the helper's own, when the request asks for one and the
/// caller makes no write layers itself: `transaction` fails (125) where none can be made,
/// `auto` then writes directly and says why.
fn begin_own_transaction(
    args: &HelperArgs,
    env: &EnvSnapshot,
    (policy, unsealed_roots): (&cordon_policies::ResolvedPolicy, Option<&[PathBuf]>),
    pid_namespace: PidNamespaceRequest,
) -> Result<Option<OwnRun>, HelperError> {
    let choice = args.request.writes;
    if args.writes_to.is_some() || choice == WriteChoice::Direct {
        return Ok(None);
    }
    // Read-only: nothing to write. (Without a sandbox the helper execs before this.)
    if !matches!(args.request.policy, SandboxPolicy::WorkspaceWrite(_)) {
        return Ok(None);
    }
    // `auto` falls back to direct writes: said to a caller that runs the helper directly;
    // cordon's front ends say it in `--dry-run`, `--json` and `doctor`.
    let unavailable = |why: String| match choice {
        WriteChoice::Transaction => Err(HelperError::NoTransaction(why)),
        WriteChoice::Auto | WriteChoice::Direct => {
            if args.caller == Caller::Direct {
                crate::messages::warning(format_args!("writing the roots directly: {why}"));
            }
            Ok(None)
        }
    };
    let Some(hooks) = args.transactions else {
        return unavailable("this way of starting the helper keeps no run state".into());
    };
    match pid_namespace {
        PidNamespaceRequest::Entered(_) => {
            return unavailable("the helper is not the command's parent here".into());
        }
        PidNamespaceRequest::Disabled => {
            return unavailable(
                "it needs the command in a PID namespace of its own (--no-pid-namespace turns \
                 it off)"
                    .into(),
            );
        }
        PidNamespaceRequest::WhenAvailable | PidNamespaceRequest::Required => {}
    }
    let Some(home) = env.cordon_home.as_deref() else {
        return unavailable("they keep their state in CORDON_HOME, and none is set".into());
    };
    let mount_view_off = args.request.mount_view == MountViewRequirement::Disabled;
    let runs = hooks.0.runs_dir(home);
    let roots = &policy.writable_roots;
    // Judged against the roots as asked (a root that holds $HOME before it is sealed entry by
    // entry), as cordon's front end judges them.
    let asked = unsealed_roots.unwrap_or(roots);
    if let Err(why) = crate::layer_availability::availability(&runs, asked, mount_view_off) {
        return unavailable(why.to_string());
    }
    let context = crate::own_transaction::apply_context(&args.request.policy, env);
    let named = args
        .request
        .policy
        .named_writable_roots(&args.request.policy_cwd, |p| std::fs::canonicalize(p));
    let inner = crate::own_transaction::roots_in_temporary(roots, &named, env);
    let start = crate::own_transaction::TransactionStart {
        cordon_home: home,
        workspace: &args.request.policy_cwd,
        context: &context,
        inner: &inner,
    };
    let run = hooks.0.begin(&start).map_err(HelperError::OwnTransaction)?;
    Ok(Some((run, context)))
}

/// Removes `--no-pid-namespace` (before `--`): a flag of this helper only, for benchmarks and
/// kernels where the namespace misbehaves. It is not a field of [`HelperArgs`], which the
/// orchestrator builds and which never asks for it.
fn take_no_pid_namespace(args: Vec<OsString>) -> (PidNamespaceRequest, Vec<OsString>) {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    if args[..end].iter().any(|a| a == "--no-pid-namespace") {
        let kept = args
            .iter()
            .enumerate()
            .filter(|(i, a)| *i >= end || *a != "--no-pid-namespace")
            .map(|(_, a)| a.clone())
            .collect();
        (PidNamespaceRequest::Disabled, kept)
    } else {
        (PidNamespaceRequest::WhenAvailable, args)
    }
}

/// Confines this process and starts the command (the steps in the crate docs).
///
/// # Safety
///
/// This process has one thread (the supervisor is forked, and Landlock and seccomp confine the
/// calling thread only); `args.proxy_fd`, when given, names a descriptor left open for the
/// helper alone; with [`PidNamespaceRequest::Entered`] and a status report, descriptor 3 is
/// the status pipe, owned by nothing else.
unsafe fn run(
    args: &HelperArgs,
    pid_namespace: PidNamespaceRequest,
    command_env: CommandEnv<'_>,
) -> Result<Infallible, HelperError> {
    // Owned, and close-on-exec, before anything else: on every path below, including a failed
    // set-up, it reaches no program this process or its children execute.
    let proxy_channel = match args.proxy_fd {
        // SAFETY: the spawner left it open for the helper alone (this function's contract;
        // the flag's parser refuses 0-2, which std's stdio handles use), and this is the one
        // place that takes it.
        Some(fd) => Some(unsafe { sys::adopt_inherited_descriptor(fd) }.map_err(|source| {
            HelperError::NetworkNamespace { what: "the proxy's descriptor (--proxy-fd)", source }
        })?),
        None => None,
    };
    // Limits that cannot be held are refused before anything is set up.
    for caveat in process_limits(args)?.1 {
        crate::messages::warning(caveat);
    }
    if let SandboxPolicy::DangerFullAccess {} = args.request.policy {
        // A transaction asked for by name is never dropped in silence.
        if args.request.writes == WriteChoice::Transaction {
            return Err(HelperError::NoTransaction(
                "danger-full-access runs the command without a sandbox to make it in".into(),
            ));
        }
        return Err(prepare_exec(args, command_env, &[])?.exec());
    }
    // The command's environment may have been filtered (no HOME) or rewritten (another
    // TMPDIR): what is hidden and writable comes from the caller's view when it sends one.
    let own_env;
    let env = match &args.user_view {
        UserView::Given(view) => view,
        UserView::OwnEnvironment => {
            let uid = nix::unistd::getuid();
            let mut view = EnvSnapshot::from_lookup(|k| std::env::var_os(k), Some(uid.as_raw()));
            view.account_home = nix::unistd::User::from_uid(uid).ok().flatten().map(|u| u.dir);
            own_env = view;
            &own_env
        }
    };
    let mut policy = args
        .request
        .policy
        .resolve(&args.request.policy_cwd, &env.view(), |p| std::fs::canonicalize(p))
        .map_err(HelperError::Policy)?;
    // A root that holds `/dev` (`/`, `/dev`: a command started there, a `$TMPDIR` there) would
    // grant every device node of the machine; a directory inside `/dev` may be one.
    let dev = Path::new("/dev");
    if let Some(root) = policy.writable_roots.iter().find(|root| dev.starts_with(root)) {
        return Err(HelperError::RootHoldsDevices(root.clone()));
    }
    // A directory in `/dev` keeps its devices as a root (a GPU's `/dev/dri`): only when the
    // user named it as one, not because a command was started there or `$TMPDIR` points there.
    let named: Vec<PathBuf> = match &args.request.policy {
        SandboxPolicy::WorkspaceWrite(write) => write
            .writable_roots
            .iter()
            .filter_map(|root| std::fs::canonicalize(args.request.policy_cwd.join(root)).ok())
            .collect(),
        SandboxPolicy::ReadOnly { .. } | SandboxPolicy::DangerFullAccess {} => Vec::new(),
    };
    let shm = Path::new("/dev/shm");
    if let Some(root) = policy
        .writable_roots
        .iter()
        .find(|root| root.starts_with(dev) && !root.starts_with(shm) && !named.contains(root))
    {
        return Err(HelperError::RootInDevUnnamed(root.clone()));
    }
    // Nor may a root be, hold or lie on the kernel's own interface (`/proc`, `/sys`, a cgroup
    // tree, wherever they are mounted): a root caller without capabilities still changes the
    // machine's settings through their files, which only file modes guard.
    for root in &policy.writable_roots {
        if let Some(what) = crate::kernel_interface::root_touches(root) {
            return Err(HelperError::RootOnKernelInterface { root: root.clone(), what });
        }
    }
    // Below a root, found in the mount table: O(mounts), so only for a root caller, whose
    // command keeps uid 0 — the settings there are root's to write; anyone else's command
    // writes only what its own uid already may.
    if nix::unistd::geteuid().is_root()
        && let Some((root, what)) =
            crate::kernel_interface::root_holding_a_mount(&policy.writable_roots)?
    {
        return Err(HelperError::RootOnKernelInterface { root, what });
    }
    // Which standard stream is the controlling terminal, read while `/proc` is still the
    // caller's (the command's PID namespace gets a `/proc` of its own later).
    let _ = sys::controlling_terminal_on_stdio();
    // A directory (or `O_PATH`) descriptor as a standard stream would reach around the view.
    let replaced = sys::replace_directory_stdio();
    if replaced > 0 {
        crate::messages::warning(format_args!(
            "{replaced} standard stream(s) were directories: replaced with /dev/null, as \
             through one the command would reach the host's files around the sandbox"
        ));
    }
    // Before anything is confined: this may create the directory on the host.
    let cordon_home_inside_root =
        crate::cordon_home::protect(env.cordon_home.as_deref(), &mut policy)?;
    let mut unsealed_roots = None;
    // What the user's next shell, git or Python loads, judged by its place under $HOME — the
    // $HOME given, and the password database's when that is another or none is given.
    let homes = crate::home_reads::homes(env);
    for home in &homes {
        policy.protected_paths.extend(
            cordon_policies::home_start_up_paths(home).map(|path| path.display().to_string()),
        );
        // Writing directly, what the user's global git configuration includes is as much git's
        // configuration as `~/.gitconfig` (a `core.fsmonitor` there runs at the next `git
        // status`): read-only wherever it lies. A transaction's gate judges it instead.
        if args.writes_to.is_none() {
            policy.protected_paths.extend(
                crate::apply::global_include_targets(Some(home))
                    .iter()
                    .map(|path| path.display().to_string()),
            );
        }
        // A root that holds $HOME grants its plain entries one by one instead: nothing new can
        // be created at its top, and no dot entry, code directory or start-up path — nor what
        // one of them links to — is granted, with the mount view or without it.
        let Ok(home) = std::fs::canonicalize(home) else { continue };
        let roots = &policy.writable_roots;
        let holds_home = roots.iter().any(|root| home.starts_with(root));
        if !holds_home && !roots.iter().any(|root| root.starts_with(&home)) {
            continue;
        }
        let mut omit: Vec<PathBuf> =
            env.cordon_home.iter().filter_map(|dir| std::fs::canonicalize(dir).ok()).collect();
        omit.extend(policy.hidden_paths.iter().map(PathBuf::from));
        // A root inside $HOME (a dotfiles repository as the workspace) loses what a dot entry
        // or start-up path links to; a root holding $HOME also what links deeper in the dot
        // directories lead to.
        let depth = if holds_home { LinkSearch::Deep } else { LinkSearch::TopLevel };
        let cordons: Vec<PathBuf> =
            env.cordon_home.iter().filter_map(|dir| std::fs::canonicalize(dir).ok()).collect();
        omit.extend(crate::sealing::linked_from_dot_entries(&home, depth, &cordons));
        let seal = cordon_policies::HomeSeal { home: &home, omit: &omit };
        let sealed = seal.seal(&policy.writable_roots, crate::sealing::list_entries);
        let before = std::mem::replace(&mut policy.writable_roots, sealed);
        unsealed_roots.get_or_insert(before);
    }
    // The helper's own file, and what the caller starts itself from.
    let executables: Vec<PathBuf> = std::fs::read_link("/proc/self/exe")
        .into_iter()
        .chain(invoked_path())
        .chain(env.cordon_executables.iter().cloned())
        .collect();
    let cordon_executables_inside_roots =
        crate::cordon_home::protect_executables(&executables, &mut policy);
    let best_effort = args.request.strictness == Strictness::BestEffort;
    // A transaction of the helper's own: the run's state is made now, and its applier forked
    // before anything is unshared, so that it sees the roots as the host has them.
    let own_args;
    let mut applier = None;
    let roots = (&policy, unsealed_roots.as_deref());
    let args = match begin_own_transaction(args, env, roots, pid_namespace)? {
        None => args,
        Some((run, context)) => {
            own_args = HelperArgs {
                writes_to: Some(run.layers_dir().to_path_buf()),
                temporary_in: run.temporary_in().map(Path::to_path_buf),
                ..args.clone()
            };
            // SAFETY: one thread (this function's contract).
            applier = Some(unsafe { containment::start_applier(run, context) }?);
            &own_args
        }
    };
    // Write layers, made before anything is mounted: what the command writes to its roots
    // lands in the caller's directory until the caller applies it.
    let layers = match &args.writes_to {
        None => Vec::new(),
        Some(dir) => {
            // `/tmp` and `$TMPDIR`, unless the policy names one as a root itself (a workspace
            // that is `/tmp`): that one's writes are applied like any workspace's.
            let named = args
                .request
                .policy
                .named_writable_roots(&args.request.policy_cwd, |p| std::fs::canonicalize(p));
            let temporary: Vec<PathBuf> = crate::own_transaction::temporary_dirs(env)
                .into_iter()
                .filter(|path| !named.contains(path))
                .collect();
            let directories: Vec<PathBuf> =
                policy.writable_roots.iter().filter(|root| root.is_dir()).cloned().collect();
            // A preset's cache (the only roots cordon allows in its per-workspace state) is
            // written directly: only sandboxed runs of its workspace ever read it.
            let state = env
                .cordon_home
                .as_deref()
                .and_then(|home| std::fs::canonicalize(home.join("workspaces")).ok());
            let caches = directories
                .iter()
                .filter(|root| state.as_ref().is_some_and(|state| root.starts_with(state)));
            let shared: Vec<PathBuf> = temporary.iter().chain(caches).cloned().collect();
            let roots = crate::write_layer::layered_roots(&directories, &shared);
            let mut layers = crate::write_layer::prepare(dir, &roots, &policy.writable_roots)?;
            if let Some(keep_in) = &args.temporary_in {
                let canonical = std::fs::canonicalize(keep_in).map_err(|source| {
                    HelperError::WriteLayer { what: format!("{}", keep_in.display()), source }
                })?;
                let inside = roots.iter().find(|root| canonical.starts_with(root));
                if let Some(root) = inside {
                    return Err(HelperError::Usage(format!(
                        "--temporary-in {}: lies inside the writable root {}, where the command \
                         could write its own changes",
                        keep_in.display(),
                        root.display()
                    )));
                }
                let temporary: Vec<PathBuf> =
                    temporary.into_iter().filter(|root| directories.contains(root)).collect();
                layers.extend(crate::write_layer::prepare_temporary(
                    dir, keep_in, &temporary, &roots,
                )?);
            }
            // Each allowed socket is bound in the innermost layer that holds it.
            let roots: Vec<PathBuf> = layers.iter().map(|layer| layer.root.clone()).collect();
            for layer in &mut layers {
                layer.sockets = policy
                    .allowed_sockets
                    .iter()
                    .filter(|socket| {
                        let innermost = roots
                            .iter()
                            .filter(|root| socket.starts_with(root))
                            .max_by_key(|root| root.components().count());
                        innermost == Some(&layer.root)
                    })
                    .cloned()
                    .collect();
            }
            layers
        }
    };
    // A directory seen through a write layer has the overlay's device number: the command
    // cwd's identity is checked before the layers are mounted, and its path entered after.
    let layered_args;
    let args = match (args.command_cwd_identity, &args.command_cwd) {
        (Some(expected), Some(cwd)) if !layers.is_empty() => {
            check_cwd_identity(cwd, cwd, expected)?;
            layered_args = HelperArgs { command_cwd_identity: None, ..args.clone() };
            &layered_args
        }
        _ => args,
    };

    // The directories on the way to the hidden paths, each read once for the mount view and
    // the read rights. The view adds no names to them, so what is read now holds inside it.
    let listings = Listings::new();
    // Hidden besides the policy's paths where `/dev` is the host's (without the view, or with
    // a writable root holding `/dev`), by the view and by the read rights alike.
    let mut devices = Vec::new();
    // The rest of the host's `/dev` but the ordinary devices, where it stays: by read rights.
    let mut unlisted_devices = Vec::new();
    // Which devpts instance the command sees, and whether the host's `/dev` (with its devices
    // usable) is what it sees too.
    let mut dev_pts = DevPts::Host;
    let mut host_dev = true;
    // The home directories' allow-list: hidden by read rights, with a stand-in only where
    // those cannot hide or would fail a login shell's start-up files.
    let abi = sys::landlock_version().unwrap_or(0);
    let landlock = abi >= 1;
    // With the network off, or a domain list, seccomp refuses UNIX sockets below ABI 9.
    let sockets_reachable = policy.network_access && policy.network_domains.is_none() && abi < 9;
    let rights = match (landlock, sockets_reachable) {
        (false, _) => crate::home_reads::ReadRights::Nothing,
        (true, true) => crate::home_reads::ReadRights::ReadsOnly,
        (true, false) => crate::home_reads::ReadRights::Everything,
    };
    let home_list = crate::home_reads::HomeListContext {
        reading: &args.request.home_reads,
        view: env,
        homes: &homes,
        workspace: &args.request.policy_cwd,
    };
    let home_reads = crate::home_reads::plan(&home_list, &policy, &listings);
    let cwds: Vec<PathBuf> = std::iter::once(&args.request.policy_cwd)
        .chain(args.command_cwd.as_ref())
        .filter_map(|cwd| std::fs::canonicalize(cwd).ok())
        .collect();
    let home_covers = match crate::home_reads::covers(&home_reads, rights, &homes, &cwds) {
        Ok(covers) => covers,
        Err(crate::home_reads::StartsInHiddenEntry { cwd, entry }) => {
            let what = format!(
                "the command would start in {} inside {}, which the home directory's \
                 allow-list hides: {} (--unhide {} shows it)",
                cwd.display(),
                entry.display(),
                match rights {
                    crate::home_reads::ReadRights::Nothing => {
                        "without Landlock nothing keeps it unreadable there"
                    }
                    _ =>
                        "with the network on, Landlock before ABI 9 cannot keep its sockets \
                          from answering there",
                },
                entry.display()
            );
            if !best_effort {
                return Err(HelperError::NotEnforced(format!(
                    "{what}; pass --best-effort to run with it reachable"
                )));
            }
            crate::messages::warning(format_args!("not enforced: {what}"));
            crate::home_reads::HomeCovers::default()
        }
    };
    policy.hidden_paths.extend(home_covers.stand_ins.iter().cloned());

    // 1. The mount view: needs CAP_SYS_ADMIN in the new namespace, so before everything else.
    let mut extra_writable = Vec::new();
    // The layered roots' own directories, opened before their overlays cover them (see below).
    let mut layered_lowers = Vec::new();
    let mut proc_covers = Vec::new();
    // Whether the command has a network namespace of its own (only loopback).
    let mut private_network = false;
    // The git dirs the mount view found in the roots (none without it).
    let mut known_git_dirs: Option<Vec<PathBuf>> = None;
    let mount_view = match args.request.mount_view {
        MountViewRequirement::Disabled if !layers.is_empty() => {
            return Err(HelperError::WriteLayerWithoutMountView(
                mount_view::NoMountView::TurnedOff.to_string(),
            ));
        }
        MountViewRequirement::Disabled => Err(mount_view::NoMountView::TurnedOff),
        MountViewRequirement::WhenAvailable | MountViewRequirement::Required => {
            let mut network = mount_view::NetworkNamespace::for_policy(&policy);
            // The view is planned inside its namespace: in the user namespace an unprivileged
            // caller gets there, it can list its own directories that deny it reading (a
            // `0311` directory a sandboxed command made to hide a repository from the search
            // for nested repositories), as git can still reach what lies in them.
            let mut entered = mount_view::enter(network);
            // With the network off, a kernel that refuses a network namespace (where it grants
            // a mount namespace) still gets the view: seccomp then keeps the network off.
            if matches!(entered, MountView::Unavailable(_))
                && network == mount_view::NetworkNamespace::Private
                && policy.network_domains.is_none()
            {
                network = mount_view::NetworkNamespace::Shared;
                entered = mount_view::enter(network);
            }
            private_network = matches!(entered, MountView::Entered)
                && network == mount_view::NetworkNamespace::Private;
            match entered {
                MountView::Entered => {
                    let dev_use = |roots| crate::dev_view::DevUse {
                        roots,
                        cwds: &cwds,
                        sockets: &policy.allowed_sockets,
                    };
                    let own_dev =
                        crate::dev_view::own_dev_possible(&dev_use(&policy.writable_roots))
                            && unsealed_roots.as_deref().is_none_or(|roots| {
                                crate::dev_view::own_dev_possible(&dev_use(roots))
                            });
                    host_dev = !own_dev;
                    if !own_dev {
                        // The mount view puts a devpts of the sandbox's own on `/dev/pts`.
                        let hidden = crate::dev_view::host_dev_hidden(DevPts::Private);
                        (devices, unlisted_devices) = (hidden.covered, hidden.unreadable);
                    }
                    let mut plan = plan_mount_view(
                        &policy,
                        unsealed_roots.as_deref(),
                        &mount_view::Surveyed {
                            listings: &listings,
                            walked: args.walked.as_deref(),
                            devices: &devices,
                            own_dev,
                            layers: &layers,
                        },
                    )?;
                    plan.network = network;
                    plan.filtered_dirs.extend(home_covers.filtered.iter().cloned());
                    mount_view::keep_working_directories_in_dev_shm(&mut plan, &cwds);
                    warn_unusable_git_files(&plan.unusable_git_files);
                    warn_unsearched(&plan.unsearched);
                    known_git_dirs = Some(std::mem::take(&mut plan.git_dirs));
                    layered_lowers = layers
                        .iter()
                        .filter_map(|layer| landlock_rules::open_place(&layer.root).ok())
                        .collect();
                    let handed = sys::handed_files();
                    let layered_devices: Vec<libc::dev_t> = layers
                        .iter()
                        .filter_map(|layer| std::fs::metadata(&layer.root).ok())
                        .map(|meta| std::os::unix::fs::MetadataExt::dev(&meta))
                        .collect();
                    let terminals: Vec<libc::c_int> = handed
                        .iter()
                        .filter(|file| file.is_terminal())
                        .map(|file| file.fd())
                        .collect();
                    dev_pts = mount_view::build(&plan, &terminals)?;
                    let layered_roots: Vec<PathBuf> =
                        layers.iter().map(|layer| layer.root.clone()).collect();
                    give_handed_files_through_view(&handed, &layered_devices, &layered_roots);
                    if plan.private_dev_shm {
                        extra_writable.push(PathBuf::from("/dev/shm"));
                    }
                    proc_covers = plan.proc_covers;
                    Ok(())
                }
                MountView::Unavailable(reason) if !layers.is_empty() => {
                    return Err(HelperError::WriteLayerWithoutMountView(reason.to_string()));
                }
                MountView::Unavailable(reason) => Err(reason),
            }
        }
    };

    if mount_view.is_err() {
        // Without the view `/dev/shm` is the host's, which a root there would write — by that
        // name or another (a bind of it): only when named, as elsewhere in `/dev`.
        let device = |path: &Path| {
            std::fs::metadata(path).ok().map(|meta| std::os::unix::fs::MetadataExt::dev(&meta))
        };
        let host_shm = device(shm);
        let mounts = crate::mount_table::mounts_with_types()?;
        let reaches_shm = |root: &PathBuf| {
            root.starts_with(shm)
                || (host_shm.is_some()
                    && (device(root) == host_shm
                        || mounts.iter().any(|(point, _)| {
                            point.starts_with(root) && device(point) == host_shm
                        })))
        };
        if let Some(root) =
            policy.writable_roots.iter().find(|root| reaches_shm(root) && !named.contains(root))
        {
            return Err(HelperError::RootInHostShmUnnamed(root.clone()));
        }
        // Nor is any mount `nodev`: a root on a devtmpfs or devpts (a bind of `/dev/pts`
        // elsewhere), or holding one below it (a chroot's `/dev`), would open its devices —
        // but a directory in `/dev` the user named.
        let device_kinds = &crate::kernel_interface::DEVICE_TYPE_NAMES;
        let named_in_dev: Vec<PathBuf> =
            named.iter().filter(|root| root.starts_with(dev)).cloned().collect();
        if let Some((root, how)) = crate::kernel_interface::root_with_a_mount_of(
            &mounts,
            &policy.writable_roots,
            device_kinds,
            &named_in_dev,
        ) {
            let what = format!(
                "{how}, whose devices only the mount view keeps closed ({reason})",
                reason = mount_view.as_ref().err().map_or(String::new(), ToString::to_string)
            );
            return Err(HelperError::RootOnKernelInterface { root, what });
        }
        let hidden = crate::dev_view::host_dev_hidden(DevPts::Host);
        (devices, unlisted_devices) = (hidden.covered, hidden.unreadable);
    }

    // 2. Containment, so that nothing outlives the command: PID + IPC namespaces inside the
    // mount view, else a subreaper. The helper stays outside as the caller's child; what
    // follows runs in the supervisor, which confines itself and then forks the command.
    let pid_namespace = match (mount_view.as_ref(), pid_namespace) {
        (Ok(()), request) => request,
        // Already in the namespace: it stays, but without a mount namespace of its own a new
        // /proc would land on the host's.
        (Err(_), PidNamespaceRequest::Entered(report)) => PidNamespaceRequest::Entered(report),
        (
            Err(_),
            PidNamespaceRequest::WhenAvailable
            | PidNamespaceRequest::Disabled
            | PidNamespaceRequest::Required,
        ) => PidNamespaceRequest::Disabled,
    };
    // A write layer is applied once the supervisor has ended: only a PID namespace makes that
    // the end of every process of the command. Under a subreaper the command can kill the
    // supervisor and leave a process that writes, after the apply, through a file the gate
    // passed.
    let pid_namespace = match pid_namespace {
        _ if layers.is_empty() => pid_namespace,
        PidNamespaceRequest::Disabled => {
            return Err(HelperError::NoTransaction(
                "a write layer needs the command in a PID namespace of its own \
                 (--no-pid-namespace turns it off)"
                    .into(),
            ));
        }
        PidNamespaceRequest::WhenAvailable | PidNamespaceRequest::Required => {
            PidNamespaceRequest::Required
        }
        PidNamespaceRequest::Entered(report) => PidNamespaceRequest::Entered(report),
    };
    // Called directly (Codex, a harness), the helper is the only step after the run: what a
    // bind cannot keep from being created — a protected name that does not exist — or a bound
    // name another run's step after it renamed away and the command made anew, is moved aside
    // once nothing of the command is left; and, writing directly with the mount view, what the
    // command planted in the repositories of the roots, new ones included (found by the same
    // bounded search as before the run, which says what it did not reach).
    let watch = match args.caller {
        Caller::Direct => {
            // Under write layers the gate judges what lands in a layered root; a root no layer
            // covers is written directly and keeps this step.
            let unlayered = |path: &Path| !layers.iter().any(|layer| path.starts_with(&layer.root));
            let (missing, existing) = protected_names(&policy);
            let missing: Vec<PathBuf> = missing.into_iter().filter(|p| unlayered(p)).collect();
            let existing: Vec<PathBuf> = existing.into_iter().filter(|p| unlayered(p)).collect();
            let roots: Vec<PathBuf> =
                policy.writable_roots.iter().filter(|root| unlayered(root)).cloned().collect();
            let git_dirs: Vec<PathBuf> =
                known_git_dirs.iter().flatten().filter(|dir| unlayered(dir)).cloned().collect();
            let mut watch = match known_git_dirs {
                Some(_) => crate::planted::Watch::before(&roots, &git_dirs, &missing),
                None => crate::planted::Watch::before(&[], &[], &missing),
            };
            watch.watch_replaced(&existing);
            let needed = layers.is_empty()
                || !roots.is_empty()
                || !missing.is_empty()
                || !existing.is_empty();
            needed.then_some(watch)
        }
        Caller::Cordon => None,
    };
    let after_run = containment::Afterwards { watch, applier };
    // SAFETY: one thread, and descriptor 3 as `split` needs it (this function's contract).
    let supervisor = unsafe { containment::split(pid_namespace, args.parent_death, after_run) }?;
    let containment = match supervisor.containment {
        // Cloned into the namespace but refused a mount namespace: no /proc of its own (a new
        // one would land on the host's), as without a PID namespace; the warning below says
        // there is no mount view.
        Containment::PidNamespace if mount_view.is_err() => Containment::PidNamespace,
        Containment::PidNamespace => match proc_view::mount_fresh_proc(&proc_covers)? {
            ProcView::Private => Containment::PidNamespace,
            ProcView::Host(reason) => {
                crate::messages::warning(format_args!(
                    "{reason}: /proc shows the host's processes (they stay out of reach)"
                ));
                Containment::PidNamespace
            }
        },
        Containment::Subreaper => Containment::Subreaper,
    };

    // The proxy's listener: bound in the command's network namespace and handed to the proxy
    // before anything below confines this process. The hand-over socket is closed by then
    // either way: nothing of cordon's but the port stays within the command's reach.
    let proxy_port = match (&policy.network_domains, &mount_view, proxy_channel) {
        (None, _, _) => None,
        (Some(_), Err(reason), _) => {
            // The empty network namespace is the only thing that confines a domain list;
            // never fall back to the host's network, not even with --best-effort.
            return Err(HelperError::NotEnforced(format!(
                "the network allow-list needs a network namespace, which comes with the mount \
                 view ({reason})"
            )));
        }
        (Some(rules), Ok(()), Some(channel)) => {
            let forwards =
                cordon_policies::loopback_forwards(rules).map_err(HelperError::DomainList)?;
            Some(proxy_listener::start(channel, &forwards)?)
        }
        // No proxy to reach: the namespace has loopback only, which is network off.
        (Some(_), Ok(()), None) => None,
    };

    // 3. Landlock (also sets no_new_privs). Read is granted by omission around the hidden
    // paths, planned now that the view is built: a stand-in is a mount, and a mount's own
    // rights are not those of what it covers.
    let reads = if landlock {
        let roots: Vec<PathBuf> =
            policy.writable_roots.iter().chain(&extra_writable).cloned().collect();
        // The raw disks too: without the mount view, a root caller would read them whole.
        let mut hidden = policy.hidden_paths.clone();
        hidden.extend(devices.iter().cloned());
        hidden.extend(unlisted_devices.iter().cloned());
        hidden.extend(crate::home_reads::unreadable(&home_reads).cloned());
        if let (Err(reason), crate::home_reads::ReadRights::ReadsOnly) = (&mount_view, rights) {
            if !home_reads.hidden.is_empty() {
                crate::messages::warning(format_args!(
                    "not enforced: with the network on and no mount view ({reason}), a UNIX \
                     socket in an entry of the home directory that the allow-list hides can be \
                     connected to (Landlock refuses that from ABI 9; this kernel has {abi})"
                ));
            }
        }
        let mut one_by_one: Vec<PathBuf> =
            homes.iter().filter_map(|home| std::fs::canonicalize(home).ok()).collect();
        one_by_one.extend(home_reads.containers.iter().map(|view| view.dir.clone()));
        // The host's `/dev`, where devices are hidden in it, however many entries it holds:
        // granted as a whole, nothing would keep them unreadable.
        if !devices.is_empty() || !unlisted_devices.is_empty() {
            one_by_one.push(PathBuf::from("/dev"));
        }
        let mut reads = hidden_reads::plan(&hidden, &roots, &one_by_one, &listings);
        reads.granted = home_reads.granted.clone();
        // Outside the writable roots, a hidden path Landlock leaves to the mount view lies in
        // a directory too large to grant entry by entry: without the view nothing hides it.
        let unhidden: Vec<String> = reads
            .mount_view_only
            .iter()
            .filter(|place| !roots.iter().any(|root| place.starts_with(root)))
            .map(|place| place.display().to_string())
            .collect();
        if let (Err(reason), Some(first)) = (&mount_view, unhidden.first()) {
            let what = format!(
                "hiding {first}{} needs the mount view ({reason}): a directory on the way holds \
                 more than {} entries, too many to keep it unreadable entry by entry",
                if unhidden.len() > 1 {
                    format!(" and {} more", unhidden.len() - 1)
                } else {
                    String::new()
                },
                hidden_reads::MAX_ENTRIES
            );
            if !best_effort {
                return Err(HelperError::NotEnforced(format!(
                    "{what}; pass --best-effort to run with it readable"
                )));
            }
            crate::messages::warning(format_args!("not enforced: {what}"));
        }
        reads
    } else {
        hidden_reads::ReadPlan::default()
    };
    let mut landlock_plan = landlock_rules::plan(&policy, &extra_writable, &reads, dev_pts);
    // A file the caller handed on from a layered root still lies in the host's directory, which
    // the overlay covers in the view: reopened by name (`/dev/stdin`, `/proc/self/fd/N`) it
    // is read there. Read rights only: a write through the host's directory would pass the
    // layer by.
    for lower in &layered_lowers {
        landlock_rules::add_reads_beneath(&mut landlock_plan, lower);
    }
    if host_dev {
        landlock_plan.host_dev = landlock_rules::HostDev::of_dev();
    }
    // A network namespace of its own has only loopback: binding and connecting there is the
    // command's own business (a test suite's local server).
    if private_network {
        landlock_plan.deny_tcp = false;
    }
    let (landlock_enforced, rule_targets) = match landlock_rules::install(&landlock_plan) {
        Ok((LandlockEnforcement::Enforced, targets)) => (true, targets),
        Ok((LandlockEnforcement::NotEnforced, targets)) => (false, targets),
        Err(_) if best_effort => (false, RuleTargets::default()),
        Err(error) => return Err(error),
    };

    // 4. Capabilities: nothing below needs any.
    let capabilities = caps::drop_all()?;

    let unix_sockets =
        UnixSockets::decide(&policy, landlock_enforced, private_network, best_effort)?;

    // 5. no_new_privs, then seccomp (last: it forbids the mount calls above).
    let no_new_privs = nix::sys::prctl::set_no_new_privs().is_ok();
    let installed = seccomp::build_program(unix_sockets.seccomp_network())
        .map_err(HelperError::from)
        .and_then(|program| seccomp::install(&program).map_err(HelperError::from));
    let seccomp = match installed {
        Ok(()) => true,
        Err(_) if best_effort => false,
        Err(error) => return Err(error),
    };

    let enforcement = Enforcement {
        landlock_abi: sys::landlock_abi(),
        landlock_enforced,
        mount_view,
        // Without the mount view, protected and hidden paths, nested repositories and start-up
        // files are not enforced: a run refuses (125) unless the user accepts that with
        // --best-effort, or turned the view off themselves.
        mount_view_required: args.request.mount_view != MountViewRequirement::Disabled,
        seccomp,
        no_new_privs,
        bounding_set_dropped: capabilities == CapabilityDrop::All,
        unix_sockets,
        cordon_home_inside_root,
        cordon_executables_inside_roots,
        containment,
    };
    let gaps = report::gaps(&enforcement);
    if let (Err(reason), MountViewRequirement::WhenAvailable, true) =
        (&enforcement.mount_view, args.request.mount_view, best_effort)
    {
        // Said once per command, so no one mistakes Landlock alone for the whole sandbox.
        crate::messages::warning(format_args!(
            "no mount view ({reason}): .git/hooks, .cordon and the other protected paths inside \
             the writable roots are writable and hidden paths inside them readable (elsewhere \
             Landlock keeps hidden paths unreadable, their names visible); run as root or allow \
             unprivileged user namespaces"
        ));
    }
    if best_effort {
        if !gaps.is_empty() {
            let list: Vec<&str> = gaps.iter().map(|g| g.what.as_str()).collect();
            crate::messages::warning(format_args!("not enforced: {}", list.join("; ")));
        }
        // cordon's own state is never writable from inside a sandbox: a weaker sandbox is
        // accepted, never one that can rewrite the config and rules judging the next command.
        if let (Err(reason), Some(home)) =
            (&enforcement.mount_view, &enforcement.cordon_home_inside_root)
        {
            return Err(HelperError::NotEnforced(format!(
                "keeping cordon's own state ({}) read-only needs the mount view ({reason}), even \
                 with --best-effort: narrow the writable roots or set CORDON_HOME outside them",
                home.display()
            )));
        }
    } else {
        let required: Vec<&str> =
            gaps.iter().filter(|g| g.required).map(|g| g.what.as_str()).collect();
        if !required.is_empty() {
            let mut what = required.join("; ");
            if let Err(errno) = sys::landlock_version() {
                let cause = crate::probe::landlock_cause(errno);
                what = format!("{what} [{}; fix: {}]", cause.why, cause.fix);
            }
            return Err(HelperError::NotEnforced(what));
        }
    }

    let mut env = vec![("CORDON_SANDBOX", "linux".to_owned())];
    if !policy.network_access || (policy.network_domains.is_some() && proxy_port.is_none()) {
        env.push(("CORDON_SANDBOX_NETWORK_DISABLED", "1".to_owned()));
    }
    if let Some(port) = proxy_port {
        env.extend(cordon_policies::proxy_env(port));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    supervisor.run(&prepare_exec(args, command_env, &env)?, rule_targets)
}

/// The mount view's plan, made in the view's namespace. The view binds a sealed root whole,
/// once (`unsealed` gives the roots before sealing): Landlock, which is always in place when
/// the view is (else the helper exits 125 unless best effort), keeps new entries out of it,
/// where a bind per entry would cost a mount per entry.
/// The protected and hidden paths inside the writable roots — a relative protected name of one
/// component in each root (`.codex`, `.envrc`, and `.git` when the policy protects it whole),
/// and every absolute protected or hidden path there — as (those that do not exist now, the
/// protected ones that do).
fn protected_names(policy: &ResolvedPolicy) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut missing = Vec::new();
    let mut existing = Vec::new();
    for root in &policy.writable_roots {
        let named = policy.protected_paths.iter().map(Path::new).filter_map(|entry| {
            if entry.is_absolute() {
                entry.starts_with(root).then(|| entry.to_path_buf())
            } else {
                (entry.components().count() == 1).then(|| root.join(entry))
            }
        });
        for path in named {
            match std::fs::symlink_metadata(&path) {
                Ok(_) if !existing.contains(&path) => existing.push(path),
                Ok(_) => {}
                Err(_) if !missing.contains(&path) => missing.push(path),
                Err(_) => {}
            }
        }
        for path in policy.hidden_paths.iter().filter(|p| p.starts_with(root)) {
            if std::fs::symlink_metadata(path).is_err() && !missing.contains(path) {
                missing.push(path.clone());
            }
        }
    }
    (missing, existing)
}

fn plan_mount_view(
    policy: &cordon_policies::ResolvedPolicy,
    unsealed: Option<&[PathBuf]>,
    host: &mount_view::Surveyed<'_>,
) -> Result<mount_view::MountPlan, HelperError> {
    let proc_mounts = crate::mount_table::mounts_under_proc()?;
    let mut view_policy = policy.clone();
    let landlock = crate::sys::landlock_version().is_ok_and(|abi| abi >= 1);
    if let (Some(roots), true) = (unsealed, landlock) {
        view_policy.writable_roots = roots.to_vec();
    }
    Ok(mount_view::plan(&view_policy, &proc_mounts, host))
}

/// One line for every git file the plan could not use: the user's own git commands would hang
/// on it (or run out of memory) too, so they learn about it before they try. Paths are quoted,
/// so no byte of a planted name reaches the terminal raw.
fn warn_unusable_git_files(files: &[crate::git_dirs::UnusableGitFile]) {
    if files.is_empty() {
        return;
    }
    let list: Vec<String> =
        files.iter().map(|file| format!("{:?} {}", file.path, file.why)).collect();
    crate::messages::warning(format_args!(
        "not followed, and read-only in the sandbox (git cannot use it either): {}",
        list.join("; ")
    ));
}

/// The path this helper was started by, when `argv[0]` names one (a caller such as Codex runs
/// it by its full path, which may be a link inside a writable root).
fn invoked_path() -> Option<PathBuf> {
    let arg0 = PathBuf::from(std::env::args_os().next()?);
    (arg0.components().count() > 1).then(|| std::path::absolute(&arg0).ok()).flatten()
}

/// One line when the search for repositories ran out of time or allowance: a repository in
/// what was not searched keeps a writable config and hooks.
fn warn_unsearched(dirs: &[PathBuf]) {
    let Some(first) = dirs.first() else { return };
    let more = match dirs.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    // Quoted (no byte of a planted name reaches the terminal raw), and its middle not shown
    // past a line's worth: a path is as long as the command makes it.
    let first = cordon_policies::abbreviate(&format!("{first:?}"), 200).text;
    crate::messages::warning(format_args!(
        "not searched for git repositories (too many directories or repositories, too \
         deep, or not readable): {first}{more}; a repository there keeps a writable config and hooks: narrow \
         the writable roots"
    ));
}

/// Refuses unless `dir` (the command cwd `cwd`, or `.` once entered) is the directory with
/// `expected`'s device and inode numbers.
fn check_cwd_identity(cwd: &Path, dir: &Path, expected: DirIdentity) -> Result<(), HelperError> {
    let here = nix::sys::stat::stat(dir)
        .map_err(|e| HelperError::CommandCwd { path: cwd.to_path_buf(), source: e.into() })?;
    // Widened for the platforms where they are narrower than u64.
    #[allow(clippy::useless_conversion)]
    let found = DirIdentity { dev: u64::from(here.st_dev), ino: u64::from(here.st_ino) };
    if found != expected {
        return Err(HelperError::CommandCwdChanged { path: cwd.to_path_buf() });
    }
    Ok(())
}

/// Enters the command cwd (after the mount view, so relative paths resolve through it) and
/// prepares the command with `extra_env` added to its environment.
fn prepare_exec(
    args: &HelperArgs,
    command_env: CommandEnv<'_>,
    extra_env: &[(&str, &str)],
) -> Result<PreparedCommand, HelperError> {
    let cwd = match &args.command_cwd {
        Some(cwd) => cwd.clone(),
        None => std::env::current_dir()
            .map_err(|source| HelperError::CommandCwd { path: PathBuf::from("."), source })?,
    };
    nix::unistd::chdir(&cwd)
        .map_err(|e| HelperError::CommandCwd { path: cwd.clone(), source: e.into() })?;
    if let Some(expected) = args.command_cwd_identity {
        check_cwd_identity(&cwd, Path::new("."), expected)?;
    }

    let program = &args.command[0];
    let exec_error =
        |source: std::io::Error| HelperError::Exec { command: program.clone(), source };
    let to_c = |s: OsString| {
        CString::new(s.into_vec())
            .map_err(|e| exec_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))
    };
    let argv = args.command.iter().cloned().map(to_c).collect::<Result<Vec<_>, _>>()?;
    let base: Vec<(OsString, OsString)> = match command_env {
        CommandEnv::Inherited => std::env::vars_os().collect(),
        CommandEnv::Given(env) => {
            // A name given twice is set once, to its last value (as `setenv` would).
            let mut unique: Vec<(OsString, OsString)> = Vec::with_capacity(env.len());
            for (key, value) in env {
                match unique.iter_mut().find(|(k, _)| k == key) {
                    Some(entry) => entry.1 = value.clone(),
                    None => unique.push((key.clone(), value.clone())),
                }
            }
            unique
        }
    };
    let mut envp = Vec::with_capacity(base.len() + extra_env.len());
    for (key, value) in base {
        // What no environment can hold (a caller's list could).
        if key.is_empty()
            || key.as_bytes().contains(&b'=')
            || key.as_bytes().contains(&0)
            || value.as_bytes().contains(&0)
        {
            continue;
        }
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
    let rlimits = process_limits(args)?.0;
    Ok(PreparedCommand { program: program.clone(), argv, envp, rlimits })
}

/// The rlimits the command starts with, and what best effort only approximates: the memory
/// and pids limits fall to this helper when no cgroup made by its caller holds them.
fn process_limits(
    args: &HelperArgs,
) -> Result<(Vec<cordon_policies::ProcessLimit>, Vec<String>), HelperError> {
    Ok(args.request.limits.process_limits(
        args.tree_limits,
        args.request.strictness,
        "no cgroup was made for this command (the helper makes none itself)",
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn no_pid_namespace_is_taken_only_before_the_separator() {
        let (request, rest) =
            take_no_pid_namespace(os(&["--no-pid-namespace", "--x", "--", "--no-pid-namespace"]));
        assert_eq!(request, PidNamespaceRequest::Disabled);
        assert_eq!(rest, os(&["--x", "--", "--no-pid-namespace"]));
        let (request, rest) = take_no_pid_namespace(os(&["--x", "--", "--no-pid-namespace"]));
        assert_eq!(request, PidNamespaceRequest::WhenAvailable);
        assert_eq!(rest, os(&["--x", "--", "--no-pid-namespace"]));
    }
}
