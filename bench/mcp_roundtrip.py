#!/usr/bin/env python3
"""MCP round trip vs the executor protocol:

  200 sequential `exec_command {"cmd": "true", "login": false}` calls, each timed from the
  request written to the result read, over
    (a) the executor's JSON lines (`cordon executor`),
    (b) MCP JSON-RPC lines (`cordon mcp-server`), the same loop speaking the other framing,
    (c) MCP through the official Python client (`mcp` from PyPI), when it is importable:
        what a Python MCP host pays, SDK included.
  p50 and p95 of each, in milliseconds. Both servers run the same sandboxed command through
  the same SessionManager; (b) - (a) is what rmcp and MCP framing add.

(Not named mcp.py: that would shadow the `mcp` package it imports.)

Usage: python3 bench/mcp_roundtrip.py [path/to/cordon]   (default: target/release/cordon)
       .ci/venv/bin/python3 bench/mcp_roundtrip.py ...      for (c)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CORDON = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/cordon")
CALLS = 200
ARGUMENTS = {"cmd": "true", "login": False}


def dirs():
    # CORDON_HOME must not lie inside a writable root (/tmp is one).
    home = tempfile.mkdtemp(prefix="cordon-bench-home-", dir="/var/tmp")
    work = tempfile.mkdtemp(prefix="cordon-bench-work-", dir="/var/tmp")
    return home, work


def summary(name, times):
    times = sorted(times)
    p95 = times[int(len(times) * 0.95) - 1]
    print(f"{name}: p50 {statistics.median(times):.2f} ms, p95 {p95:.2f} ms, "
          f"max {times[-1]:.2f} ms ({len(times)} calls)")
    return statistics.median(times), p95


class Server:
    def __init__(self, subcommand):
        home, work = dirs()
        self.proc = subprocess.Popen(
            [CORDON, subcommand, "-C", work],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ, CORDON_HOME=home),
        )

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self):
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def executor_protocol():
    server = Server("executor")
    times = []
    for i in range(CALLS + 5):
        rid = f"b{i}"
        start = time.perf_counter()
        server.send({"type": "call_tool", "requestId": rid, "toolName": "exec_command", "arguments": ARGUMENTS})
        while True:
            message = server.read()
            if message.get("requestId") == rid:
                break
        elapsed = (time.perf_counter() - start) * 1000
        assert message["outcome"]["status"] == "success", message
        assert "Process exited with code 0" in message["outcome"]["content"][0]["text"], message
        if i >= 5:  # warm-up
            times.append(elapsed)
    server.close()
    return times


def mcp_lines():
    server = Server("mcp-server")
    server.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    server.read()
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    times = []
    for i in range(1, CALLS + 6):
        start = time.perf_counter()
        server.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                     "params": {"name": "exec_command", "arguments": ARGUMENTS}})
        while True:
            message = server.read()
            if message.get("id") == i:
                break
        elapsed = (time.perf_counter() - start) * 1000
        assert "Process exited with code 0" in message["result"]["content"][0]["text"], message
        if i > 5:
            times.append(elapsed)
    server.close()
    return times


def mcp_sdk():
    try:
        import anyio
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
    except ImportError:
        return None
    home, work = dirs()
    times = []

    async def run():
        params = StdioServerParameters(command=CORDON, args=["mcp-server", "-C", work],
                                       env=dict(os.environ, CORDON_HOME=home))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                for i in range(CALLS + 5):
                    start = time.perf_counter()
                    result = await session.call_tool("exec_command", ARGUMENTS)
                    elapsed = (time.perf_counter() - start) * 1000
                    assert not result.is_error, result
                    if i >= 5:
                        times.append(elapsed)

    anyio.run(run)
    return times


def main():
    print(f"cordon: {CORDON}")
    executor = summary("(a) executor protocol, exec_command true", executor_protocol())
    mcp = summary("(b) MCP JSON-RPC lines,   exec_command true", mcp_lines())
    print(f"    MCP - executor: p50 {mcp[0] - executor[0]:+.2f} ms, p95 {mcp[1] - executor[1]:+.2f} ms")
    sdk = mcp_sdk()
    if sdk is None:
        print("(c) skipped: the Python `mcp` package is not importable by this interpreter")
    else:
        summary("(c) MCP via the Python SDK, exec_command true", sdk)


if __name__ == "__main__":
    main()
