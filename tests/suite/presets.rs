//! Package-manager presets (`--preset npm|pip|cargo`): the real clients against the real
//! registries through cordon's proxy, in a throwaway `$HOME`, with the effects checked from
//! outside — the package on disk, the user's own cache untouched, the sandbox-only cache
//! written. Where this machine cannot reach a registry (or lacks the client), those tests skip
//! with a printed reason that `CORDON_TEST_REQUIRE_SANDBOX=1` does NOT make fatal: a registry
//! is the network's, not the kernel's. The rest stays on loopback: which hosts a preset allows
//! (the user's configuration, never the workspace's), what the sandbox may write in
//! `$CORDON_HOME`, what becomes of the user's tokens.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use super::util::*;

/// Skips, with the reason, when a registry or its client is not there. Never fatal: the
/// sandbox is not what is missing.
macro_rules! skip_unless_registry {
    ($cond:expr, $($reason:tt)*) => {
        if !$cond {
            eprintln!("SKIPPED (registry unreachable, not a sandbox gap): {}", format!($($reason)*));
            return;
        }
    };
}

macro_rules! require_domain_list {
    () => {
        require_sandbox!(1);
        skip_unless!(
            features().path_rules(),
            "the domain allow-list needs the mount view's namespaces"
        );
    };
}

/// A throwaway user: `home` (HOME, with CORDON_HOME at `home/.cordon`) and a workspace beside
/// it.
pub(super) struct Throwaway {
    _dir: tempfile::TempDir,
    pub(super) home: PathBuf,
    pub(super) ws: PathBuf,
}

pub(super) fn user() -> Throwaway {
    let dir = scratch();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    Throwaway { home, ws, _dir: dir }
}

impl Throwaway {
    /// `cordon exec -a never ARGS` in the workspace as this user.
    pub(super) fn cordon(&self, args: &[&str]) -> Command {
        let mut command = self.cordon_exec(&["-a", "never"]);
        command.args(args);
        command
    }

    /// `cordon exec ARGS` in the workspace as this user, with the user's own variables of the
    /// clients taken out (the suite's environment is not theirs).
    fn cordon_exec(&self, args: &[&str]) -> Command {
        self.cordon_exec_in(&self.ws, args)
    }

    /// [`Throwaway::cordon_exec`] in another workspace `dir` of this user.
    pub(super) fn cordon_exec_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(CORDON);
        command
            .args(["exec", "-C"])
            .arg(dir)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .env("HOME", &self.home)
            .env_remove("CORDON_HOME")
            .env_remove("CARGO_HOME")
            .env_remove("NPM_CONFIG_USERCONFIG")
            .env_remove("PIP_CONFIG_FILE")
            .env_remove("PIP_INDEX_URL")
            .env_remove("PIP_EXTRA_INDEX_URL")
            .env_remove("XDG_CONFIG_HOME")
            // pip's version check writes its cache even when nothing else is cacheable.
            .env_remove("PIP_DISABLE_PIP_VERSION_CHECK");
        // rustup's proxies find the toolchains through RUSTUP_HOME (the real user's).
        if let Some(rustup) = rustup_home() {
            command.env("RUSTUP_HOME", rustup);
        }
        command
    }

    pub(super) fn cache(&self, tool: &str) -> PathBuf {
        workspace_cache(&self.home.join(".cordon"), &self.ws, tool)
    }
}

/// The cache of `tool` cordon keeps for the workspace `ws` in `cordon_home`, found by the
/// `workspace` file that names it (or where it would be, when no run made it yet).
pub(super) fn workspace_cache(cordon_home: &Path, ws: &Path, tool: &str) -> PathBuf {
    let ws = std::fs::canonicalize(ws).unwrap();
    let named = format!("{}\n", ws.display());
    let dirs = std::fs::read_dir(cordon_home.join("workspaces")).into_iter().flatten().flatten();
    dirs.map(|entry| entry.path())
        .find(|dir| std::fs::read_to_string(dir.join("workspace")).is_ok_and(|t| t == named))
        .unwrap_or_else(|| cordon_home.join("workspaces/none"))
        .join("cache")
        .join(tool)
}

fn rustup_home() -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
        .filter(|p| p.is_dir())
}

pub(super) fn run(mut command: impl std::borrow::BorrowMut<Command>) -> Run {
    command.borrow_mut().output().unwrap().into()
}

/// Whether `program` answers `--version`.
pub(super) fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `dir` holds anything but the cache tag cordon writes.
fn written(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().any(|e| e.file_name() != "CACHEDIR.TAG"))
        .unwrap_or(false)
}

/// Runs `script` (a probe of the registry, outside any sandbox, with caches in a scratch
/// directory) and says whether it worked.
fn reachable(script: &str) -> bool {
    let dir = scratch();
    Command::new("sh")
        .args(["-c", script])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("CARGO_HOME", dir.path().join("cargo"))
        .envs(rustup_home().map(|r| ("RUSTUP_HOME", r)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn npm_pack_through_its_preset_writes_only_the_sandbox_cache() {
    require_domain_list!();
    skip_unless_registry!(installed("npm"), "npm is not installed");
    skip_unless_registry!(
        reachable("npm view is-number@7.0.0 version"),
        "npm cannot reach registry.npmjs.org from here"
    );
    let u = user();
    let out = run(u.cordon(&["--preset", "npm", "--", "npm", "pack", "is-number@7.0.0"]));
    out.assert_ok();
    assert!(u.ws.join("is-number-7.0.0.tgz").is_file(), "{}", out.stderr);
    assert!(!u.home.join(".npm").exists(), "the user's own npm cache was written");
    assert!(written(&u.cache("npm").join("_cacache")), "the sandbox cache was not used");
}

#[test]
fn pip_download_through_its_preset_writes_only_the_sandbox_cache() {
    require_domain_list!();
    skip_unless_registry!(installed("pip"), "pip is not installed");
    skip_unless_registry!(
        reachable("pip download --no-deps --no-cache-dir -d . six==1.17.0"),
        "pip cannot reach pypi.org from here"
    );
    let u = user();
    let args = ["--preset", "pip", "--", "pip", "download", "--no-deps", "-d", ".", "six==1.17.0"];
    let out = run(u.cordon(&args));
    out.assert_ok();
    assert!(u.ws.join("six-1.17.0-py2.py3-none-any.whl").is_file(), "{}", out.stderr);
    assert!(!u.home.join(".cache/pip").exists(), "the user's own pip cache was written");
    assert!(written(&u.cache("pip")), "the sandbox cache was not used");
}

/// A project that depends on one tiny crate.
fn tiny_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\ncfg-if = \"=1.0.0\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
}

#[test]
fn cargo_fetch_through_its_preset_writes_only_the_sandbox_cache_and_a_build_then_needs_it() {
    require_domain_list!();
    skip_unless_registry!(installed("cargo"), "cargo is not installed");
    skip_unless_registry!(
        reachable(
            "mkdir p && cd p && printf '[package]\\nname=\"p\"\\nversion=\"0.1.0\"\\n\
             [dependencies]\\ncfg-if=\"=1.0.0\"\\n' > Cargo.toml && mkdir src && \
             touch src/main.rs && cargo fetch"
        ),
        "cargo cannot reach index.crates.io from here"
    );
    let u = user();
    tiny_project(&u.ws);
    // The user's own configuration is carried into the preset's CARGO_HOME; the token is not.
    std::fs::create_dir_all(u.home.join(".cargo")).unwrap();
    std::fs::write(
        u.home.join(".cargo/config.toml"),
        "[registry]\ntoken = \"cio_SECRETTOKEN\"\n[net]\nretry = 3\n",
    )
    .unwrap();
    let out = run(u.cordon(&["--preset", "cargo", "--", "cargo", "fetch"]));
    out.assert_ok();
    assert!(u.ws.join("Cargo.lock").is_file(), "{}", out.stderr);
    assert!(!u.home.join(".cargo/registry").exists(), "the user's own registry was written");
    assert!(written(&u.cache("cargo").join("registry")), "the sandbox cache was not used");
    let carried = std::fs::read_to_string(u.cache("cargo").join("config.toml")).unwrap();
    assert!(carried.contains("retry = 3") && !carried.contains("SECRET"), "{carried}");
    // The crates live in this workspace's preset cache: a build without the preset fails on
    // the network and says which preset fetched them; with it, the build works.
    let plain = run(u.cordon(&["--", "cargo", "build", "-q"]));
    assert_ne!(plain.code, Some(0), "{}", plain.stderr);
    assert!(plain.stderr.contains("--preset cargo"), "{}", plain.stderr);
    assert!(plain.stderr.contains("presets = [\"cargo\"]"), "{}", plain.stderr);
    let built = run(u.cordon(&["--preset", "cargo", "--", "cargo", "build", "-q"]));
    built.assert_ok();
    assert!(u.ws.join("target/debug/tiny").is_file(), "{}", built.stderr);
}

/// A loopback server standing in for a registry: answers every request with 200 and records
/// its path.
struct Registry {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Registry {
    fn start() -> Registry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
                log.lock().unwrap().push(path);
                let mut stream = reader.into_inner();
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                );
            }
        });
        Registry { port, seen }
    }

    fn resolve(&self) -> String {
        format!("user.test=127.0.0.1:{0},workspace.test=127.0.0.1:{0}", self.port)
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Asks the proxy for `/NAME` on `host` with curl, for each (host, name).
fn fetch_script(port: u16, targets: &[(&str, &str)]) -> String {
    targets
        .iter()
        .map(|(host, name)| {
            format!(
                "curl -sS -m 20 -x \"$HTTP_PROXY\" http://{host}:{port}/{name} >/dev/null 2>&1;"
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The hosts come from the user's own configuration (here `user.test`), never from the
/// workspace's `.npmrc`, `.cargo/config.toml` or a virtual environment's `pip.conf`, nor from
/// a user file that lies inside a writable root (a `CARGO_HOME` in the workspace) or links into
/// one: a sandboxed run could have written those.
#[test]
fn presets_allow_the_users_configured_registry_and_ignore_workspace_configuration() {
    require_domain_list!();
    skip_unless!(Path::new("/usr/bin/curl").exists(), "needs curl (apt-get install -y curl)");
    let registry = Registry::start();
    let port = registry.port;
    let u = user();
    let user_url = format!("http://user.test:{port}/");
    let evil = format!("http://workspace.test:{port}/");
    std::fs::write(u.home.join(".npmrc"), format!("registry={user_url}\n")).unwrap();
    std::fs::create_dir_all(u.home.join(".config/pip")).unwrap();
    std::fs::write(
        u.home.join(".config/pip/pip.conf"),
        format!("[global]\nindex-url = {user_url}simple\n"),
    )
    .unwrap();
    // What a sandboxed run could have left in the workspace.
    std::fs::write(u.ws.join(".npmrc"), format!("registry={evil}\n")).unwrap();
    std::fs::create_dir_all(u.ws.join(".cargo")).unwrap();
    std::fs::write(
        u.ws.join(".cargo/config.toml"),
        format!("[registries.w]\nindex = \"sparse+{evil}\"\n"),
    )
    .unwrap();
    // A user file that is a link into the workspace (a dotfiles checkout there) is skipped too.
    std::fs::write(u.ws.join("dot-pip.conf"), format!("[global]\nextra-index-url = {evil}\n"))
        .unwrap();
    std::fs::create_dir_all(u.home.join(".pip")).unwrap();
    std::os::unix::fs::symlink(u.ws.join("dot-pip.conf"), u.home.join(".pip/pip.conf")).unwrap();
    std::fs::create_dir_all(u.ws.join("venv")).unwrap();
    std::fs::write(u.ws.join("venv/pip.conf"), format!("[global]\nindex-url = {evil}\n")).unwrap();
    let cargo_home = u.ws.join("cargo-home");
    std::fs::create_dir_all(&cargo_home).unwrap();
    std::fs::write(
        cargo_home.join("config.toml"),
        format!("[registries.w]\nindex = \"sparse+{evil}\"\n"),
    )
    .unwrap();
    let script = fetch_script(port, &[("workspace.test", "workspace"), ("user.test", "user")]);
    let out = run(u
        .cordon(&["--json", "--preset", "npm", "--preset", "pip", "--preset", "cargo"])
        .env("CORDON_TEST_RESOLVE", registry.resolve())
        .env("CARGO_HOME", &cargo_home)
        .env("VIRTUAL_ENV", u.ws.join("venv"))
        .args(["--", "sh", "-c", &script]));
    assert_eq!(registry.seen(), ["/user"], "{}\n{}", out.stdout, out.stderr);
    let document: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let denied = document["network_denied"].to_string();
    assert!(denied.contains("workspace.test"), "{denied}");
    assert!(out.stderr.contains("--preset ignores"), "{}", out.stderr);
    assert!(out.stderr.contains("cargo-home"), "{}", out.stderr);
    assert!(out.stderr.contains(".pip/pip.conf"), "{}", out.stderr);
}

/// The cache is the one writable place in `$CORDON_HOME`: the config, the rules and the other
/// caches' parent stay read-only, a link planted in the cache never makes cordon write
/// elsewhere (it writes cargo's carried configuration by renaming a new file over the name),
/// and a cache a command opened to other users is private again at the next run.
#[test]
fn only_the_preset_cache_is_writable_in_cordon_home_and_planted_links_are_replaced() {
    require_domain_list!();
    for who in USERS {
        let u = user();
        let home = u.home.to_str().unwrap();
        let victim = u.ws.join("../victim");
        std::fs::write(&victim, "untouched\n").unwrap();
        if who == User::Nobody {
            for dir in [&u.home, &u.ws] {
                nix::unistd::chown(dir.as_path(), Some(65534.into()), Some(65534.into())).unwrap();
            }
        }
        let script = format!(
            "for f in {home}/.cordon/config.toml {home}/.cordon/rules.toml $CARGO_HOME/../x \
             $CARGO_HOME/../../x $CARGO_HOME/ok; do touch $f 2>/dev/null && echo wrote $f; done; \
             ln -sf {victim} $CARGO_HOME/config.toml; \
             echo planted > $CARGO_HOME/config; \
             chmod 777 $CARGO_HOME",
            victim = victim.display()
        );
        let mut command = command_as(who, cordon_for(who));
        command
            .args(["exec", "-a", "never", "--preset", "cargo", "-C"])
            .arg(&u.ws)
            .args(["--", "sh", "-c", &script])
            .current_dir(&u.ws)
            .stdin(Stdio::null())
            .env("HOME", &u.home)
            .env_remove("CORDON_HOME")
            .env_remove("CARGO_HOME");
        let out = run(&mut command);
        out.assert_ok();
        let cache = u.cache("cargo");
        assert_eq!(out.stdout.trim(), format!("wrote {}/ok", cache.display()), "{who:?}");
        for name in ["config.toml", "rules.toml"] {
            assert!(!u.home.join(".cordon").join(name).exists(), "{who:?}: {name}");
        }
        for place in [cache.join("../x"), cache.join("../../x")] {
            assert!(!place.exists(), "{who:?}: {}", place.display());
        }
        // The next run replaces the planted link and removes the planted older name.
        let mut again = command_as(who, cordon_for(who));
        again
            .args(["exec", "-a", "never", "--preset", "cargo", "-C"])
            .arg(&u.ws)
            .args(["--", "true"])
            .current_dir(&u.ws)
            .stdin(Stdio::null())
            .env("HOME", &u.home)
            .env_remove("CORDON_HOME")
            .env_remove("CARGO_HOME");
        run(&mut again).assert_ok();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n", "{who:?}");
        let carried = u.cache("cargo").join("config.toml");
        assert!(std::fs::symlink_metadata(&carried).unwrap().is_file(), "{who:?}");
        assert!(!u.cache("cargo").join("config").exists(), "{who:?}");
        // A mode the sandboxed command opened is private again before the next run.
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(u.cache("cargo")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700, "{who:?}");
    }
}

/// The variables point at the sandbox-only caches in a sandboxed run only: without the sandbox
/// the client keeps the user's own cache (what a sandbox wrote is never used outside one), and
/// the user's tokens reach neither the command's environment nor the carried configuration.
#[test]
fn preset_variables_reach_only_sandboxed_runs_and_carry_no_token() {
    require_domain_list!();
    let u = user();
    std::fs::write(
        u.home.join(".npmrc"),
        "registry=https://bob:hunter2pw@registry.npmjs.org/\n\
         //registry.npmjs.org/:_authToken=npm_SECRETabcdefghijklmnopqrstuvwxyz0123\n",
    )
    .unwrap();
    std::fs::create_dir_all(u.home.join(".cargo")).unwrap();
    std::fs::write(u.home.join(".cargo/credentials.toml"), "[registry]\ntoken = \"cioSECRET\"\n")
        .unwrap();
    let script = "env; cat ~/.npmrc ~/.cargo/credentials.toml; cat \"$CARGO_HOME\"/* 2>/dev/null";
    let sandboxed =
        run(u.cordon(&["--preset", "npm", "--preset", "cargo", "--", "sh", "-c", script]));
    let cache = u.cache("npm");
    assert!(
        sandboxed.stdout.contains(&format!("npm_config_cache={}", cache.display())),
        "{}",
        sandboxed.stdout
    );
    assert!(sandboxed.stdout.contains("npm_config_registry=https://registry.npmjs.org/"));
    for secret in ["hunter2pw", "SECRET"] {
        assert!(!sandboxed.stdout.contains(secret), "{secret}: {}", sandboxed.stdout);
    }
    let unsandboxed = run(u.cordon_exec(&["--yolo", "--preset", "npm", "--", "env"]));
    unsandboxed.assert_ok();
    assert!(!unsandboxed.stdout.contains(".cordon/cache"), "{}", unsandboxed.stdout);
}

/// Hosted registries keep the token in the URL's path or query (Gemfury, Cloudsmith): such a
/// URL from the user's hidden configuration is not handed to the command.
#[test]
fn a_registry_url_with_a_token_in_its_path_never_reaches_the_command() {
    require_domain_list!();
    let u = user();
    std::fs::create_dir_all(u.home.join(".config/pip")).unwrap();
    std::fs::write(
        u.home.join(".config/pip/pip.conf"),
        "[global]\nindex-url = https://pypi.fury.io/xK3v9Qp2LmN7rT5wYz8aBc/acme/\n",
    )
    .unwrap();
    std::fs::write(
        u.home.join(".npmrc"),
        "registry=https://npm-proxy.fury.io/AbCdEf1234567890/acme/\n",
    )
    .unwrap();
    let script = "env; cat ~/.config/pip/pip.conf ~/.npmrc";
    let out = run(u.cordon(&["--preset", "pip", "--preset", "npm", "--", "sh", "-c", script]));
    for token in ["xK3v9Qp2LmN7rT5wYz8aBc", "AbCdEf1234567890"] {
        assert!(!out.stdout.contains(token), "{token}: {}", out.stdout);
    }
    assert!(out.stderr.contains("to preset_settings_not_secret in your config"), "{}", out.stderr);
    // Named as not secret, a URL that still looks like a token stays out all the same.
    std::fs::create_dir_all(u.home.join(".cordon")).unwrap();
    std::fs::write(
        u.home.join(".cordon/config.toml"),
        "preset_settings_not_secret = [\"pip.index-url\", \"npm.registry\"]\n",
    )
    .unwrap();
    let out = run(u.cordon(&["--preset", "pip", "--preset", "npm", "--", "sh", "-c", script]));
    for token in ["xK3v9Qp2LmN7rT5wYz8aBc", "AbCdEf1234567890"] {
        assert!(!out.stdout.contains(token), "{token}: {}", out.stdout);
    }
    assert!(out.stderr.contains("looks like it holds a token"), "{}", out.stderr);
}

#[test]
fn an_unknown_preset_is_one_line_and_exit_2() {
    let u = user();
    let out = run(u.cordon(&["--preset", "nosuch", "--", "true"]));
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("unknown preset \"nosuch\""), "{}", out.stderr);
    assert!(out.stderr.contains("npm, pip, cargo"), "{}", out.stderr);
    // Nothing was created for it.
    assert!(!u.home.join(".cordon").exists());
}

/// A preset needs a place to write: `--preset` with read-only is an error, while the config's
/// presets are left out of read-only runs; a `$CORDON_HOME` inside a writable root (bound
/// read-only there, caches included) is refused; `cordon doctor` lists every preset.
#[test]
fn presets_say_where_they_cannot_apply_and_doctor_lists_them() {
    require_sandbox!(1);
    let u = user();
    let out = run(u.cordon(&["-s", "read-only", "--preset", "pip", "--", "true"]));
    assert_eq!(out.code, Some(125), "{}", out.stderr);
    assert!(out.stderr.contains("needs -s workspace-write"), "{}", out.stderr);
    std::fs::create_dir_all(u.home.join(".cordon")).unwrap();
    std::fs::write(u.home.join(".cordon/config.toml"), "presets = [\"npm\"]\n").unwrap();
    run(u.cordon(&["-s", "read-only", "--", "true"])).assert_ok();
    assert!(!u.home.join(".cordon/cache").exists());
    let inside = u.ws.join("state");
    let out = run(u.cordon(&["--preset", "npm", "--", "true"]).env("CORDON_HOME", &inside));
    assert_eq!(out.code, Some(125), "{}", out.stderr);
    assert!(out.stderr.contains("lies inside the writable root"), "{}", out.stderr);
    let doctor =
        run(Command::new(CORDON).arg("doctor").env("HOME", &u.home).env_remove("CORDON_HOME"));
    for line in ["presets (", "  npm    registry.npmjs.org:443 (on in the config)", "  cargo  "] {
        assert!(doctor.stdout.contains(line), "{line}: {}", doctor.stdout);
    }
}

/// Every session of an executor started with `--preset` gets the preset's cache, writable, and
/// its variables.
#[test]
fn an_executor_with_a_preset_gives_each_session_the_sandbox_cache() {
    require_domain_list!();
    let mut executor = super::executor::Executor::start(&["--preset", "npm"]);
    let text = executor.text(
        "exec_command",
        serde_json::json!({"cmd": "echo \"$npm_config_cache\"; touch \"$npm_config_cache/x\" && echo wrote"}),
    );
    let cache = workspace_cache(executor.home.path(), executor.work.path(), "npm");
    let output = super::executor::output(&text);
    assert!(output.contains(&format!("{}\nwrote", cache.display())), "{text}");
    assert!(cache.join("x").is_file());
}

/// An approved escalation runs without the sandbox, and so without the preset's variables: the
/// cache a sandbox wrote is never what an unsandboxed client uses.
#[test]
fn an_approved_escalation_gets_no_preset_variables() {
    require_domain_list!();
    let mut executor = super::executor::Executor::start(&["-a", "on-request", "--preset", "npm"]);
    executor.send(&serde_json::json!({
        "type": "call_tool", "requestId": "esc", "toolName": "exec_command", "arguments": {
        "cmd": "echo \"cache=[$npm_config_cache]\"",
        "sandbox_permissions": "require_escalated", "justification": "outside"}}));
    let request =
        executor.wait_for(std::time::Duration::from_secs(10), |v| v["type"] == "approval_request");
    executor.send(&serde_json::json!({"type": "approval_response",
        "requestId": request["requestId"], "decision": "approved"}));
    let response =
        executor.wait_for(std::time::Duration::from_secs(20), |v| v["requestId"] == "esc");
    let text = response["outcome"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.contains("cache=["), "{response}");
    assert!(!text.contains("cache/npm"), "{text}");
}
