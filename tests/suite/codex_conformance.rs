//! The helper speaks today's Codex protocol, checked against the real Codex CLI that
//! `tests/setup.sh` installs (npm `@openai/codex`, pinned in `tests/helpers/codex/package.json`):
//! `tests/helpers/codex_conformance.py` takes the argv Codex gives its Linux helper for
//! workspace-write, read-only and the network on, replays it with Codex's own helper and with
//! cordon's, runs a probe set under each (writes inside and outside, `.git`, a missing
//! read-only entry, `/tmp`, `$TMPDIR`, a credential file, host loopback, a listener inside) and
//! checks every effect from outside. The two must agree except where the script lists how
//! cordon differs (docs/linux-sandbox.md lists the same).

use std::path::Path;
use std::process::Command;

use super::util::*;

#[test]
fn cordons_helper_enforces_what_codex_0_169_asks_of_its_own() {
    require_sandbox!(1);
    skip_unless!(features().mount_view, "Codex's read-only entries need the mount view here");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let codex = root.join("tests/helpers/codex/node_modules/.bin/codex");
    let run = Run::from(
        Command::new(python())
            .arg(root.join("tests/helpers/codex_conformance.py"))
            .arg("--cordon")
            .arg(CORDON)
            .arg("--codex")
            .arg(&codex)
            .output()
            .unwrap(),
    );
    skip_unless!(run.code != Some(3), "{}", run.stdout.lines().next().unwrap_or_default());
    eprintln!("{}", run.stdout);
    assert!(run.ok(), "cordon's helper differs from Codex's:\n{}\n{}", run.stdout, run.stderr);
}
