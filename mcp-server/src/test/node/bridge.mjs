// A thin, scriptable wrapper around the official MCP TypeScript SDK client, so the Java end-to-end tests can drive
// Berth with the real client while keeping their assertions in Java.
//
// Usage: node bridge.mjs stdio <command> [args...]
//        node bridge.mjs http <url> [bearer-token]     (Streamable HTTP)
//        node bridge.mjs sse <url> [bearer-token]      (legacy HTTP+SSE: GET <url> for the stream, POSTs to its endpoint)
// Reads one JSON request per line on stdin, writes one JSON answer per line on stdout:
//   {"op":"connect"}                         -> {"ok":true,"serverInfo":...,"capabilities":...,"instructions":...,"pid":N}
//   {"op":"list"}                            -> {"ok":true,"tools":[...]}
//   {"op":"call","name":"run","args":{...},"progress":true,"timeoutMs":N}
//                                            -> {"ok":true,"result":{...},"progress":["chunk",...]}
//   {"op":"cancel-call", ...same as call, "cancelAfterMs":N} -> aborts the call after N ms
//   {"op":"parallel","calls":[{"name":..,"args":..},..]} -> {"ok":true,"results":[...]} (all sent at once)
//   {"op":"close"}                           -> closes the transport (the server sees EOF on stdin)
//   {"op":"connect","elicitation":true}      -> as connect, declaring the elicitation capability; the handler answers
//                                               per the last "elicit" op (default: decline)
//   {"op":"elicit","answer":{...}}           -> sets the answer to the next elicitation requests: an ElicitResult
//                                               ({"action":"accept","content":{...}}), or {"hang":true} (never answer),
//                                               or {"error":"message"} (answer with a JSON-RPC error)
//   {"op":"elicitations"}                    -> {"ok":true,"requests":[params,...]} received so far (then cleared)
//   {"op":"connect","roots":["/abs/dir",..]} -> as connect, declaring the roots capability; roots/list answers these
//                                               directories as file: URIs (an empty list declares the capability
//                                               with no roots)
//   {"op":"roots","roots":[...]}             -> replaces the declared roots and sends notifications/roots/list_changed
// A failure is {"ok":false,"error":"message","code":N}. The SDK client validates structuredContent against each
// tool's outputSchema, so a result that breaks its schema shows up here as an error.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { createInterface } from "node:readline";
import { ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { pathToFileURL } from "node:url";

const [mode, target, ...rest] = process.argv.slice(2);
let client = null;
let transport = null;
let elicitAnswer = { action: "decline" };
let elicitRequests = [];
let roots = null;

function makeTransport() {
  if (mode === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, stderr: "inherit" });
  }
  if (mode === "http") {
    const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
    return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  if (mode === "sse") {
    const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
    return new SSEClientTransport(new URL(target), { requestInit: { headers } });
  }
  throw new Error(`unknown mode ${mode}`);
}

// The SDK's close() ends the server's stdin, then sends SIGTERM after 2 s and SIGKILL after 4 s. What these tests
// check is Berth's own clean stop at end of input (and that it leaves nothing behind), which on a loaded 2-core CI
// machine can take longer than that; so the bridge ends stdin itself and waits for the exit (bounded), then lets the
// SDK close what is left. A server that does not exit is still killed by the SDK, and the test's wait says so.
async function closeClient() {
  const p = transport?._process;
  if (mode === "stdio" && p && p.exitCode === null && p.signalCode === null) {
    const exited = new Promise((resolve) => p.once("close", resolve));
    try { p.stdin?.end(); } catch { /* already closed */ }
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 110000).unref())]);
  }
  await client.close();
}

async function handle(req) {
  switch (req.op) {
    case "connect": {
      transport = makeTransport();
      const capabilities = req.elicitation ? { elicitation: { form: {} } } : {};
      if (Array.isArray(req.roots)) {
        roots = req.roots;
        capabilities.roots = { listChanged: true };
      }
      client = new Client({ name: "berth-e2e", version: "1.0.0" }, { capabilities });
      if (roots !== null) {
        client.setRequestHandler(ListRootsRequestSchema, async () =>
          ({ roots: roots.map((p) => ({ uri: pathToFileURL(p).href, name: p })) }));
      }
      if (req.elicitation) {
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          elicitRequests.push(request.params);
          const a = elicitAnswer;
          if (a.hang) return new Promise(() => {});
          if (a.error) throw new Error(a.error);
          return a;
        });
      }
      await client.connect(transport, { timeout: 300000 }); // a loaded CI machine may take over a minute to start a server
      await client.listTools(); // caches output schemas so callTool validates structuredContent
      return {
        serverInfo: client.getServerVersion(),
        capabilities: client.getServerCapabilities(),
        instructions: client.getInstructions(),
        pid: transport.pid ?? null,
      };
    }
    case "list":
      return { tools: (await client.listTools()).tools };
    case "call":
    case "cancel-call": {
      const progress = [];
      const controller = new AbortController();
      const options = { timeout: req.timeoutMs ?? 600000, signal: controller.signal };
      if (req.progress) {
        options.onprogress = (p) => progress.push(p.message ?? "");
        options.resetTimeoutOnProgress = true;
      }
      if (req.op === "cancel-call") setTimeout(() => controller.abort("cancelled by test"), req.cancelAfterMs ?? 1000);
      const result = await client.callTool({ name: req.name, arguments: req.args ?? {} }, undefined, options);
      return { result, progress };
    }
    case "parallel": {
      const results = await Promise.all(req.calls.map((c) =>
        client.callTool({ name: c.name, arguments: c.args ?? {} }, undefined, { timeout: c.timeoutMs ?? 600000 })));
      return { results };
    }
    case "roots":
      roots = req.roots;
      await client.sendRootsListChanged();
      return {};
    case "elicit":
      elicitAnswer = req.answer;
      return {};
    case "elicitations": {
      const requests = elicitRequests;
      elicitRequests = [];
      return { requests };
    }
    case "close":
      await closeClient();
      client = null;
      return {};
    default:
      throw new Error(`unknown op ${req.op}`);
  }
}

const rl = createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on("line", (line) => {
  if (!line.trim()) return;
  queue = queue.then(async () => {
    let answer;
    try {
      answer = { ok: true, ...(await handle(JSON.parse(line))) };
    } catch (e) {
      answer = { ok: false, error: String(e?.message ?? e), code: e?.code ?? null };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  });
});
rl.on("close", () => queue.then(async () => {
  if (client) await closeClient().catch(() => {});
  process.exit(0);
}));
