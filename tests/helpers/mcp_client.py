#!/usr/bin/env python3
"""A real MCP client (the `mcp` package from PyPI) driving `cordon mcp-server` over stdio.

Usage: mcp_client.py SCENARIO --cordon PATH --workdir DIR [options] [-- SERVER_ARGS...]

Prints one JSON document with what it saw on stdout; exits 1 with a message on stderr when
something the scenario checks itself is wrong. The Rust test (tests/suite/mcp.rs) checks the
effects from outside: files on disk, the process list.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager, nullcontext
from types import SimpleNamespace

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def fail(message):
    print(f"mcp_client: {message}", file=sys.stderr)
    sys.exit(1)


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def marker_pids(marker):
    """Processes whose command line contains `marker`, seen from outside any sandbox (`ps`:
    Linux and macOS alike)."""
    listing = subprocess.run(["ps", "-A", "-o", "pid=,args="], capture_output=True, text=True)
    found = []
    for line in listing.stdout.splitlines():
        pid, _, cmdline = line.strip().partition(" ")
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        if marker in cmdline and "mcp_client.py" not in cmdline:
            found.append(int(pid))
    return found


async def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.05)
    return predicate()


def server_params(args):
    server_args = ["mcp-server", *args.server_args]
    if args.status_file:
        # A shell in between records the server's exit status even when this client dies.
        script = '"$0" "$@"; echo $? > "$CORDON_TEST_STATUS_FILE"'
        env = dict(os.environ, CORDON_TEST_STATUS_FILE=args.status_file)
        return StdioServerParameters(
            command="/bin/sh", args=["-c", script, args.cordon, *server_args], cwd=args.workdir, env=env
        )
    return StdioServerParameters(command=args.cordon, args=server_args, cwd=args.workdir, env=dict(os.environ))


async def scenario_tools(session, args, out):
    listed = await session.list_tools()
    tools = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
    names = sorted(tool["name"] for tool in tools)
    if names != ["close_session", "exec_command", "list_sessions", "write_stdin"]:
        fail(f"unexpected tools: {names}")
    for tool in tools:
        schema = tool["inputSchema"]
        Draft202012Validator.check_schema(schema)
        if schema.get("type") != "object":
            fail(f"{tool['name']}: inputSchema type is {schema.get('type')!r}")
        for prop, spec in schema.get("properties", {}).items():
            if spec.get("type") == "array" and spec.get("items", {}).get("type") == "string":
                continue
            if spec.get("type") not in ("string", "integer", "boolean"):
                fail(f"{tool['name']}.{prop}: unexpected type {spec.get('type')!r}")
        hints = tool.get("annotations", {})
        for hint in ("readOnlyHint", "destructiveHint", "openWorldHint"):
            if not isinstance(hints.get(hint), bool):
                fail(f"{tool['name']}: {hint} missing or not a boolean: {hints}")
    exec_schema = Draft202012Validator(next(t for t in tools if t["name"] == "exec_command")["inputSchema"])
    verdicts = {
        "valid": exec_schema.is_valid({"cmd": "true", "tty": True, "yield_time_ms": 500}),
        "cmd_not_a_string": exec_schema.is_valid({"cmd": 1}),
        "unknown_field": exec_schema.is_valid({"cmd": "true", "bogus": 1}),
        "missing_cmd": exec_schema.is_valid({}),
    }
    out["tools"] = tools
    out["schema_verdicts"] = verdicts


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    return {"is_error": bool(result.is_error), "text": text_of(result)}


async def scenario_run(session, args, out):
    out["result"] = await call(session, "exec_command", {"cmd": args.cmd, "login": False})


async def scenario_pty(session, args, out):
    first = await call(
        session,
        "exec_command",
        {"cmd": "read -r line; echo \"got:$line\"", "tty": True, "login": False, "yield_time_ms": 500},
    )
    out["first"] = first
    session_id = None
    for line in first["text"].splitlines():
        if line.startswith("Process running with session ID "):
            session_id = int(line.rsplit(" ", 1)[1])
    if session_id is None:
        fail(f"no session id in {first['text']!r}")
    out["second"] = await call(
        session, "write_stdin", {"session_id": session_id, "chars": "hello\n", "yield_time_ms": 2000}
    )


async def scenario_takeover(session, args, out):
    """A terminal session stays alive while `--cmd` runs on pipes; then a status probe runs in a
    terminal and on pipes."""
    out["alive"] = await call(
        session, "exec_command", {"cmd": "cat", "tty": True, "login": False, "yield_time_ms": 500}
    )
    out["attack"] = await call(session, "exec_command", {"cmd": args.cmd, "login": False})
    probe = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"
    out["later"] = [
        await call(session, "exec_command", {"cmd": probe, "tty": tty, "login": False})
        for tty in (True, False)
    ]


async def scenario_close(session, args, out):
    started = await call(
        session, "exec_command", {"cmd": f"exec sleep {args.marker}", "login": False, "yield_time_ms": 250}
    )
    session_id = next(
        int(line.rsplit(" ", 1)[1])
        for line in started["text"].splitlines()
        if line.startswith("Process running with session ID ")
    )
    out["seen"] = await wait_for(lambda: marker_pids(args.marker), 10)
    out["listed"] = json.loads((await call(session, "list_sessions", {}))["text"])
    out["closed"] = await call(session, "close_session", {"session_id": session_id})
    out["gone"] = await wait_for(lambda: not marker_pids(args.marker), 5)
    out["again"] = await call(session, "close_session", {"session_id": session_id})


async def scenario_escalate(session, args, out):
    out["result"] = await call(
        session,
        "exec_command",
        {
            "cmd": args.cmd,
            "login": False,
            "sandbox_permissions": "require_escalated",
            "justification": "the test needs to write outside the workspace",
        },
    )


async def scenario_cancel(session, args, out):
    marker = args.marker
    outcome = {}

    async def run_call():
        try:
            outcome["result"] = await call(
                session, "exec_command", {"cmd": f"exec sleep {marker}", "login": False, "yield_time_ms": 30000}
            )
        except anyio.get_cancelled_exc_class():
            outcome["cancelled"] = True
            raise

    async with anyio.create_task_group() as group:
        group.start_soon(run_call)
        out["seen"] = await wait_for(lambda: marker_pids(marker), 10)
        group.cancel_scope.cancel()
    out["cancelled"] = outcome.get("cancelled", False)
    out["gone"] = await wait_for(lambda: not marker_pids(marker), 5)
    out["left"] = marker_pids(marker)
    # The server still serves, and the session is gone.
    out["sessions"] = await call(session, "list_sessions", {})


async def scenario_disconnect(session, args, out):
    marker = args.marker
    async with anyio.create_task_group() as group:
        group.start_soon(
            call, session, "exec_command", {"cmd": f"exec sleep {marker}", "login": False, "yield_time_ms": 30000}
        )
        out["seen"] = await wait_for(lambda: marker_pids(marker), 10)
        print(json.dumps(out), flush=True)
        # The client dies mid-call: no cancellation, no goodbye; the server sees EOF.
        os.kill(os.getpid(), signal.SIGKILL)


async def scenario_invalid_strings(session, args, out):
    """A command holding half a surrogate pair (sent as JavaScript's JSON.stringify writes it,
    see `json_module_writer`), one holding a NUL, then a good one: each answered in time."""
    started = time.monotonic()
    with anyio.fail_after(20):
        out["surrogate"] = await call(
            session, "exec_command", {"cmd": f"touch {args.marker}; echo \ud800", "login": False}
        )
        out["nul"] = await call(
            session, "exec_command", {"cmd": f"touch {args.marker}; echo a\u0000b", "login": False}
        )
        out["after"] = await call(session, "exec_command", {"cmd": "echo still serving", "login": False})
    out["seconds"] = time.monotonic() - started


class JsonModuleMessage:
    """A message as Python's json module writes it, for the SDK's stdio writer (which calls
    `model_dump_json`): a lone surrogate becomes a `\\udXXX` escape, as JavaScript's
    JSON.stringify writes it (pydantic refuses to write one at all)."""

    def __init__(self, message):
        self.message = message

    def model_dump_json(self, **options):
        return json.dumps(self.message.model_dump(mode="python", **options))


@asynccontextmanager
async def json_module_writer(write):
    send, receive = anyio.create_memory_object_stream(0)

    async def forward():
        async with receive:
            async for item in receive:
                await write.send(SimpleNamespace(message=JsonModuleMessage(item.message)))

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            yield send
        finally:
            await send.aclose()


SCENARIOS = {
    "invalid-strings": scenario_invalid_strings,
    "tools": scenario_tools,
    "run": scenario_run,
    "pty": scenario_pty,
    "escalate": scenario_escalate,
    "cancel": scenario_cancel,
    "close": scenario_close,
    "disconnect": scenario_disconnect,
    "takeover": scenario_takeover,
}


async def main(args):
    out = {"elicitations": []}

    async def answer(context, params):
        out["elicitations"].append(params.model_dump(by_alias=True, mode="json"))
        return types.ElicitResult(action=args.answer, content={} if args.answer == "accept" else None)

    kwargs = {"elicitation_callback": answer} if args.answer else {}
    async with stdio_client(server_params(args)) as (read, raw_write):
        writer = json_module_writer(raw_write) if args.scenario == "invalid-strings" else nullcontext(raw_write)
        async with writer as write, ClientSession(read, write, **kwargs) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["protocol_version"] = init.protocol_version
            await SCENARIOS[args.scenario](session, args, out)
    print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--cordon", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--cmd", default="echo hello")
    parser.add_argument("--marker", default="")
    parser.add_argument("--answer", choices=["accept", "decline", "cancel"])
    parser.add_argument("--status-file")
    argv = sys.argv[1:]
    server_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parsed = parser.parse_args(own)
    parsed.server_args = server_args
    anyio.run(main, parsed)
