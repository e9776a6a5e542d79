#!/usr/bin/env node
// The official TypeScript MCP SDK client (@modelcontextprotocol/sdk, installed next to this
// file by `npm ci`) driving `cordon mcp-server` over stdio.
//
// Usage: node client.mjs CORDON WORKDIR MARKER
//
// Lists the tools, runs a command, makes two calls that must fail (an unknown tool, arguments
// of the wrong type), then two commands holding strings cordon cannot run — half a UTF-16
// surrogate pair, as JavaScript's JSON.stringify writes a lone surrogate, and a NUL — each of
// which would create MARKER if it ran, then one more command. Prints one JSON report on
// stdout; the Rust test (tests/suite/mcp_ts.rs) checks it and the marker from outside.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [cordon, workdir, marker] = process.argv.slice(2);
if (!cordon || !workdir || !marker) {
  console.error("usage: node client.mjs CORDON WORKDIR MARKER");
  process.exit(2);
}

const textOf = (result) =>
  (result.content ?? []).filter((block) => block.type === "text").map((block) => block.text).join("\n");

// A call's outcome: the result (text, isError) or the JSON-RPC error it was refused with.
async function call(client, name, args) {
  try {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 20000 });
    return { is_error: result.isError === true, text: textOf(result) };
  } catch (error) {
    return { rpc_error: { code: error.code ?? null, message: String(error.message ?? error) } };
  }
}

const transport = new StdioClientTransport({
  command: cordon,
  args: ["mcp-server"],
  cwd: workdir,
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "cordon-e2e-ts", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion()?.name ?? null };

const listed = await client.listTools();
out.tools = listed.tools.map((tool) => tool.name).sort();
out.run = await call(client, "exec_command", { cmd: "echo hello from typescript", login: false });
out.unknown_tool = await call(client, "no_such_tool", {});
out.wrong_type = await call(client, "exec_command", { cmd: 42 });
const started = performance.now();
out.surrogate = await call(client, "exec_command", { cmd: `touch ${marker}; echo \ud800`, login: false });
out.nul = await call(client, "exec_command", { cmd: `touch ${marker}; echo a\u0000b`, login: false });
out.seconds = (performance.now() - started) / 1000;
out.after = await call(client, "exec_command", { cmd: "echo still serving", login: false });

await client.close();
console.log(JSON.stringify(out));
