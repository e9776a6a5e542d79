#!/usr/bin/env bash
# What the test suite needs beyond cargo, on a Debian/Ubuntu machine: the README's test command
# names this script, and .ci/run runs it first. Safe to run again (it installs only what is
# missing). #
#   bash tests/setup.sh
#
# Without it, the tests that need one of these skip with a printed reason (a failure under
# CORDON_TEST_REQUIRE_SANDBOX=1).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  # python3, python3-pip: probes in the e2e suite (and pyte, below); attr: setfattr/getfattr;
  # util-linux: setpriv, unshare; bsdutils: script(1) for terminal tests; keyutils: keyctl;
  # gcc/libc6-dev: the int 0x80 probe; bubblewrap + hyperfine: the benchmark's comparison;
  # python3-venv: the venv holding the MCP client the mcp-server tests drive;
  # openssh-server + openssh-client: the remote-executor tests start a throwaway sshd on a
  # loopback port (tests/suite/remote.rs), and bench/remote.py uses it too; strace: the
  # executor's execve/connect trace (tests/suite/self_protection.rs) and the rules oracle's
  # second witness (tests/oracle); busybox: the oracle's multi-call spellings.
  as_root apt-get install -y -qq --no-install-recommends \
    python3 python3-pip python3-venv attr util-linux bsdutils keyutils gcc libc6-dev git procps findutils \
    bubblewrap hyperfine openssh-server openssh-client strace busybox >/dev/null
fi
# pyte: the VT emulator the approval-prompt tests rebuild the screen with, for the interpreter
# the suite runs (/usr/bin/python3 when present).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import pyte' 2>/dev/null; then
  as_root "$py" -m pip install -q pyte 2>/dev/null \
    || as_root "$py" -m pip install -q --break-system-packages pyte
fi
# mcp (PyPI): the real MCP client the `cordon mcp-server` tests drive (tests/helpers/mcp_client.py),
# in a venv of its own; the suite finds it through CORDON_TEST_MCP_PYTHON.
# Made from the system interpreter ($py): the kernel matrix's VMs see the host's /usr but not
# /root, where a pyenv interpreter would live.
if [ ! -x .ci/venv/bin/python3 ]; then
  "$py" -m venv .ci/venv
fi
if ! .ci/venv/bin/python3 -c 'import mcp.client.stdio, jsonschema' 2>/dev/null; then
  .ci/venv/bin/python3 -m pip install -q 'mcp>=2,<3' jsonschema
fi
# node + npm (also the npm preset's test), and the official TypeScript MCP SDK pinned by tests/helpers/mcp-ts/package-lock.json:
# the mcp-server test driven by the TypeScript client (tests/suite/mcp_ts.rs) and the Node client
# of the loopback-forwarding tests (tests/suite/proxy/loopback.rs).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  as_root apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
(cd tests/helpers/mcp-ts && npm ci --no-audit --no-fund --silent)
# The real OpenAI Codex CLI, pinned by tests/helpers/codex/package-lock.json: the helper-protocol
# conformance test (tests/suite/codex_conformance.rs) replays the argv it gives its own Linux
# helper with cordon's (it runs the system bwrap, installed above). Where the npm registry is
# unreachable the test skips with the reason.
(cd tests/helpers/codex && npm ci --no-audit --no-fund --silent) \
  || echo "tests/setup.sh: could not install @openai/codex (registry unreachable?); the Codex conformance test will say so"
echo "tests/setup.sh: done (the suite finds the MCP client in .ci/venv by itself)"
