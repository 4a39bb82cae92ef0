// A real host's MCP client for the tests and the benchmark: the TypeScript
// SDK's Client over its StdioClientTransport (the pair Claude Code, Cursor and
// most hosts embed), pinned by package-lock.json beside this file.
//
//   node client.mjs -- COMMAND [ARG...] < PLAN.json
//
// starts COMMAND as the server, completes the initialize handshake, runs each
// step of PLAN (a JSON array) in turn and prints one JSON object on stdout:
//
//   {"connectMs": N, "server": {...}, "capabilities": {...}, "instructions": "...",
//    "steps": [{"op": ..., "ms": N, "result": {...}} or {"op": ..., "ms": N,
//               "error": {"code": N, "message": "...", "data": ...}}],
//    "stderr": "what the server wrote on stderr"}
//
// A step is {"op": "listTools"}, {"op": "callTool", "name": ..., "arguments": {...}},
// {"op": "listResources"}, {"op": "listResourceTemplates"},
// {"op": "readResource", "uri": ...} or {"op": "listPrompts"}, each with an optional
// "timeoutMs" (default 60000). callTool is the SDK's own: it validates structured
// content against the tool's output schema (listTools caches the schemas), and a
// result that fails is an error here, as it is in a host.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const dash = process.argv.indexOf("--");
if (dash < 0 || dash + 1 >= process.argv.length) {
  process.stderr.write("usage: node client.mjs -- COMMAND [ARG...] < PLAN.json\n");
  process.exit(2);
}
const [command, ...args] = process.argv.slice(dash + 1);
const plan = JSON.parse(readFileSync(0, "utf8"));

const transport = new StdioClientTransport({
  command,
  args,
  env: { ...process.env },
  stderr: "pipe",
});
let stderr = "";
transport.stderr.on("data", (chunk) => {
  stderr += chunk;
});
const client = new Client({ name: "git-capsule-tests", version: "1.0.0" });

const ops = {
  listTools: (step, options) => client.listTools(undefined, options),
  callTool: (step, options) =>
    client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, options),
  listResources: (step, options) => client.listResources(undefined, options),
  listResourceTemplates: (step, options) => client.listResourceTemplates(undefined, options),
  readResource: (step, options) => client.readResource({ uri: step.uri }, options),
  listPrompts: (step, options) => client.listPrompts(undefined, options),
};

const started = performance.now();
await client.connect(transport);
const report = {
  connectMs: performance.now() - started,
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions(),
  steps: [],
};
for (const step of plan) {
  const begun = performance.now();
  const entry = { op: step.op };
  try {
    entry.result = await ops[step.op](step, { timeout: step.timeoutMs ?? 60000 });
  } catch (error) {
    entry.error = { code: error.code ?? null, message: error.message, data: error.data ?? null };
  }
  entry.ms = performance.now() - begun;
  report.steps.push(entry);
}
await client.close();
report.stderr = stderr;
process.stdout.write(JSON.stringify(report) + "\n");
