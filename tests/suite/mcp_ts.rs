//! `cordon mcp-server` driven by the official TypeScript MCP SDK client
//! (`@modelcontextprotocol/sdk`, `tests/helpers/mcp-ts/client.mjs`): listing the tools, a
//! call, the calls that must fail, and strings a JavaScript client can send but no command can
//! hold (half a surrogate pair, a NUL), each answered at once as a tool error while nothing
//! runs — checked from outside by a marker file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::mcp::Dirs;
use super::util::*;

/// The directory holding `client.mjs` with the SDK installed beside it (`npm ci`):
/// `$CORDON_TEST_MCP_TS` (which `.ci/run` sets), else `tests/helpers/mcp-ts` when `npm ci` has
/// run there. `None` without node or the SDK.
fn sdk_dir() -> Option<PathBuf> {
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/helpers/mcp-ts");
    let dir = std::env::var_os("CORDON_TEST_MCP_TS").map(PathBuf::from).unwrap_or(default);
    let installed = dir.join("node_modules/@modelcontextprotocol/sdk/package.json").is_file()
        && dir.join("client.mjs").is_file();
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (installed && node).then_some(dir)
}

#[test]
fn the_typescript_sdk_lists_calls_and_gets_tool_errors_for_surrogates_and_nul_at_once() {
    require_sandbox!(1);
    let Some(dir) = sdk_dir() else {
        skip_unless!(
            false,
            "needs node and the TypeScript MCP SDK: `npm ci` in tests/helpers/mcp-ts (or \
             CORDON_TEST_MCP_TS naming such a directory; .ci/run does both)"
        );
        return;
    };
    let dirs = Dirs::new();
    let marker = dirs.outside.path().join("ran");
    let out = Command::new("node")
        .arg(dir.join("client.mjs"))
        .arg(CORDON)
        .arg(dirs.work.path())
        .arg(&marker)
        .env("CORDON_HOME", dirs.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "cordon panicked: {stderr}");
    assert!(out.status.success(), "client failed: {}\n{stdout}\n{stderr}", out.status);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no report ({e}):\n{stdout}\n{stderr}"));

    assert_eq!(report["server"], "cordon", "{report}");
    let tools: Vec<&str> =
        report["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(tools, ["close_session", "exec_command", "list_sessions", "write_stdin"]);

    let run = &report["run"];
    assert_eq!(run["is_error"], false, "{report}");
    let text = run["text"].as_str().unwrap();
    assert!(
        text.contains("Process exited with code 0\nOutput:\nhello from typescript\n"),
        "{text}"
    );

    // An unknown tool is a JSON-RPC error; arguments of the wrong type, a tool error.
    assert_eq!(report["unknown_tool"]["rpc_error"]["code"], -32602, "{report}");
    assert!(
        report["unknown_tool"]["rpc_error"]["message"].as_str().unwrap().contains("tool not found")
    );
    assert_eq!(report["wrong_type"]["is_error"], true, "{report}");
    assert!(report["wrong_type"]["text"].as_str().unwrap().contains("expected a string"));

    for (case, says) in [("surrogate", "surrogate pair"), ("nul", "NUL byte")] {
        let answer = &report[case];
        assert_eq!(answer["is_error"], true, "{case}: {report}");
        let text = answer["text"].as_str().unwrap();
        assert!(text.contains(says), "{case}: {text}");
        assert!(text.contains("nothing was run"), "{case}: {text}");
        assert_eq!(text.lines().count(), 1, "{case}: {text}");
    }
    assert!(report["seconds"].as_f64().unwrap() < 15.0, "{report}");
    assert_eq!(report["after"]["is_error"], false, "{report}");
    assert!(report["after"]["text"].as_str().unwrap().contains("still serving"), "{report}");
    assert!(!marker.exists(), "a command with an invalid string ran");
}
