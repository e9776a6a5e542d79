//! macOS only: the real `cordon` binary under the real Seatbelt with the tools the
//! profile must let work — git, python3, cargo with a build script, curl — and what differs
//! from Linux: `cordon sandbox macos`, TIOCSTI refused by the profile (no seccomp), `/dev/ttys*`
//! terminals. Each effect is checked from outside the sandbox: the file on disk, the listener
//! that got no connection, the terminal that got no keystrokes. The rest of the suite runs here
//! too, with macOS expectations where the platforms differ.
//!
//! Runs in the GitHub Actions macOS jobs (`.github/workflows/ci.yml`) with
//! `CORDON_TEST_REQUIRE_SANDBOX=1`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tempfile::TempDir;

use super::util::{CORDON, require_sandbox, skip_unless};

/// A directory under the real home: outside every default writable root (the workspace,
/// `/tmp` and `$TMPDIR`, which is where `tempfile` would put it).
fn home_dir() -> TempDir {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    tempfile::Builder::new().prefix("cordon-e2e-").tempdir_in(home).unwrap()
}

/// `cordon ARGS` in `cwd`, with `home` as `$HOME` and cordon's state under it.
fn cordon(args: &[&str], cwd: &Path, home: &Path) -> Output {
    Command::new(CORDON)
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("CORDON_HOME", home.join(".cordon"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn sh(script: &str) -> [&str; 3] {
    ["/bin/sh", "-c", script]
}

#[test]
fn writes_land_in_the_workspace_and_nowhere_else() {
    require_sandbox!(1);
    let (home, work, other) = (home_dir(), home_dir(), home_dir());
    let leak = other.path().join("leak");
    let script = format!("echo in > inside; echo out > '{}'", leak.display());
    let mut args = vec!["exec", "-a", "never", "-s", "workspace-write", "--"];
    args.extend(sh(&script));
    let out = cordon(&args, work.path(), home.path());
    assert!(work.path().join("inside").exists(), "{}", text(&out));
    assert!(!leak.exists(), "{}", text(&out));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn cordon_sandbox_macos_read_only_writes_nothing() {
    require_sandbox!(1);
    let (home, work) = (home_dir(), home_dir());
    let out = cordon(
        &["sandbox", "macos", "-s", "read-only", "--", "/usr/bin/touch", "file"],
        work.path(),
        home.path(),
    );
    assert!(!work.path().join("file").exists(), "{}", text(&out));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_hidden_credential_cannot_be_read_and_a_protected_hook_cannot_be_written() {
    require_sandbox!(1);
    let (home, work) = (home_dir(), home_dir());
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "SECRET-KEY").unwrap();
    std::fs::create_dir_all(work.path().join(".git/hooks")).unwrap();
    let script = "cat \"$HOME/.ssh/id_ed25519\"; echo planted > .git/hooks/pre-commit";
    let mut args = vec!["exec", "-a", "never", "--"];
    args.extend(sh(script));
    let out = cordon(&args, work.path(), home.path());
    assert!(!text(&out).contains("SECRET-KEY"), "{}", text(&out));
    assert!(!work.path().join(".git/hooks/pre-commit").exists(), "{}", text(&out));
    // The control: the same read outside the sandbox works.
    let outside = Command::new("/bin/cat").arg(home.path().join(".ssh/id_ed25519")).output();
    assert!(String::from_utf8_lossy(&outside.unwrap().stdout).contains("SECRET-KEY"));
}

/// A listener on the host's loopback that answers HTTP and counts its connections.
fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut stream) = stream {
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
            }
        }
    });
    (port, count)
}

#[test]
fn curl_reaches_a_listener_only_with_the_network_on() {
    require_sandbox!(1);
    let (home, work) = (home_dir(), home_dir());
    let (port, count) = counting_listener();
    let url = format!("http://127.0.0.1:{port}/");
    let curl = ["/usr/bin/curl", "-sS", "-m", "10", url.as_str()];

    let mut off = vec!["exec", "-a", "never", "-s", "workspace-write", "--"];
    off.extend(curl);
    let out = cordon(&off, work.path(), home.path());
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(count.load(Ordering::SeqCst), 0, "network off, yet connected: {}", text(&out));

    let mut on = vec!["exec", "-a", "never", "-s", "workspace-write", "--network", "--"];
    on.extend(curl);
    let out = cordon(&on, work.path(), home.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok"), "{}", text(&out));
    assert!(count.load(Ordering::SeqCst) >= 1);
}

#[test]
fn git_init_and_commit_work_in_the_workspace() {
    require_sandbox!(1);
    let (home, work) = (home_dir(), home_dir());
    let script = "git init -q . && echo hello > file && git add file && \
                  git -c user.name=t -c user.email=t@example.invalid commit -qm first && \
                  git log --format=%s";
    let mut args = vec!["exec", "-a", "never", "--"];
    args.extend(sh(script));
    let out = cordon(&args, work.path(), home.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("first"), "{}", text(&out));
    assert!(work.path().join(".git/HEAD").exists());
}

#[test]
fn python_runs_with_multiprocessing_locks_and_interface_names_with_the_network_off() {
    require_sandbox!(1);
    let (home, work) = (home_dir(), home_dir());
    // A semaphore (multiprocessing's lock) and the interface list (getifaddrs reads the
    // routing tables through a sysctl), both with the network off.
    let code = "import multiprocessing, socket; multiprocessing.Lock(); \
                print('interfaces', len(socket.if_nameindex()))";
    let out = cordon(
        &["exec", "-a", "never", "--", "/usr/bin/python3", "-c", code],
        work.path(),
        home.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("interfaces"), "{}", text(&out));
}

#[test]
fn cargo_builds_a_crate_whose_build_script_copies_a_file() {
    require_sandbox!(1);
    let cargo = std::env::var_os("CARGO");
    skip_unless!(cargo.is_some(), "CARGO is not set (not run by cargo test)");
    let cargo = cargo.unwrap();
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().unwrap();
    let rustc = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim()).join("bin/rustc");
    let (home, work) = (home_dir(), home_dir());
    let krate = work.path();
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(krate.join("data.txt"), "copied by build.rs").unwrap();
    // std::fs::copy is clonefile(2) on APFS: the profile must allow it in writable roots.
    std::fs::write(
        krate.join("build.rs"),
        "fn main() { let out = std::env::var(\"OUT_DIR\").unwrap(); \
         std::fs::copy(\"data.txt\", format!(\"{out}/data.txt\")).unwrap(); }",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/main.rs"),
        "fn main() { print!(\"{}\", include_str!(concat!(env!(\"OUT_DIR\"), \"/data.txt\"))); }",
    )
    .unwrap();
    let out = Command::new(CORDON)
        .args(["exec", "-a", "never", "--"])
        .arg(&cargo)
        .args(["run", "--offline", "-q"])
        .current_dir(krate)
        .env("HOME", home.path())
        .env("CORDON_HOME", home.path().join(".cordon"))
        .env("CARGO_HOME", krate.join(".cargo-home"))
        .env("CARGO_TARGET_DIR", krate.join("target"))
        .env("RUSTC", &rustc)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "copied by build.rs", "{}", text(&out));
}

/// Sends `requests` to `cordon executor` in `cwd`, closes its stdin, returns its stdout.
fn executor(requests: &[serde_json::Value], cwd: &Path, home: &Path) -> String {
    let mut child = Command::new(CORDON)
        .arg("executor")
        .current_dir(cwd)
        .env("HOME", home)
        .env("CORDON_HOME", home.join(".cordon"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_executor_runs_pipe_and_pty_sessions_in_the_sandbox() {
    require_sandbox!(1);
    let (home, work, other) = (home_dir(), home_dir(), home_dir());
    let leak = other.path().join("leak");
    let call = |id: &str, cmd: String, tty: bool| {
        serde_json::json!({"type": "call_tool", "requestId": id, "toolName": "exec_command",
            "arguments": {"cmd": cmd, "login": false, "tty": tty, "yield_time_ms": 5000}})
    };
    let answers = executor(
        &[
            call("1", format!("echo in > from-executor; echo out > '{}'", leak.display()), false),
            call("2", "tty; echo pty-ok".to_owned(), true),
        ],
        work.path(),
        home.path(),
    );
    assert!(work.path().join("from-executor").exists(), "{answers}");
    assert!(!leak.exists(), "{answers}");
    assert!(answers.contains("/dev/ttys"), "{answers}");
    assert!(answers.contains("pty-ok"), "{answers}");
}
