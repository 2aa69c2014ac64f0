// A scripted agent session: what a coding agent does with Berth, step by step, through the official MCP TypeScript
// client. Shows the persistent-vs-ephemeral choice, park/resume, snapshot and fork.
//
//   node examples/agent-session.mjs [path/to/berth.jar] [--home DIR] [--isolation NAME]
//
// Starts `berth stdio` through the launcher on PATH (installed by `berth setup`), as a client config would; given a
// jar, it runs that jar on $JAVA_HOME/bin/java instead.
//
// Exits non-zero if any step does not behave as described (the test suite runs it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const args = process.argv.slice(2);
const jar = args[0] && !args[0].startsWith("--") ? args.shift() : null;
const java = process.env.JAVA_HOME ? `${process.env.JAVA_HOME}/bin/java` : "java";
const transport = jar
  ? new StdioClientTransport({ command: java, args: ["-jar", jar, "stdio", ...args], stderr: "inherit" })
  : new StdioClientTransport({ command: "berth", args: ["stdio", ...args], stderr: "inherit" });
const client = new Client({ name: "berth-agent-session", version: "1.0.0" });

function check(cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

async function tool(name, a, label) {
  const t0 = performance.now();
  const r = await client.callTool({ name, arguments: a });
  const ms = (performance.now() - t0).toFixed(0);
  if (r.isError) {
    console.log(`  ${label ?? name}: error (${ms} ms): ${r.content[0].text}`);
    return r;
  }
  const s = r.structuredContent;
  const brief = name === "run" && s.process && s.running
    ? `process ${s.process} running`
    : name === "run"
    ? `exit ${s.exit_code}${s.resumed ? ", resumed" : ""}: ${JSON.stringify(s.stdout.trim())}`
    : Object.entries(s).filter(([k]) => ["workspace", "state", "lifecycle", "isolation", "memory_kept", "snapshot", "note", "deleted"].includes(k))
        .map(([k, v]) => `${k}=${v}`).join(" ");
  console.log(`  ${label ?? name} (${ms} ms): ${brief}`);
  return s;
}

await client.connect(transport);
const v = client.getServerVersion();
console.log(`connected to ${v.name} ${v.version}`);

console.log("\n1. A project the agent will come back to: persistent, named.");
const proj = await tool("open_workspace", { name: "demo-project", lifecycle: "persistent" });
await tool("run", { workspace: "demo-project", command: "mkdir -p app && printf 'print(\"hi from berth\")\\n' > app/main.py && ls app" });
// a long-lived process is a background run of its own (what a run starts with & ends with that run)
await tool("run", { workspace: "demo-project", background: true,
  command: "while true; do date +%s > /tmp/heartbeat.new; mv /tmp/heartbeat.new /tmp/heartbeat; sleep 1; done" },
  "start a background process");

console.log("\n2. Park it while the agent thinks: compute freed, state kept.");
const parked = await tool("park", { workspace: "demo-project" });
console.log(`     memory kept: ${parked.memory_kept} (${proj.isolation} isolation)`);
const back = await tool("run", {
  workspace: "demo-project",
  command: "cat app/main.py; sleep 1.5; if [ -f /tmp/heartbeat ] && [ $(( $(date +%s) - $(cat /tmp/heartbeat) )) -le 1 ]; "
    + "then echo 'background process still running'; else echo 'background process stopped'; fi",
}, "next run resumes it");
check(back.stdout.includes("hi from berth"), "files survive park");
check(back.resumed === true, "the run after park says it resumed");
check(back.stdout.includes(parked.memory_kept ? "still running" : "stopped"), "memory_kept tells whether processes survived park");

console.log("\n3. Snapshot before a risky change, then fork two independent experiments.");
// snapshot names are unique per server, and snapshots outlive their workspace: name this run's own
const snapName = `before-refactor-${Date.now()}`;
const snap = await tool("snapshot", { workspace: "demo-project", name: snapName });
check(!snap.isError, "snapshot succeeds");
const a = await tool("open_workspace", { from_snapshot: snapName }, "fork A");
const b = await tool("open_workspace", { from_snapshot: snap.snapshot }, "fork B");
await tool("run", { workspace: a.workspace, command: "echo 'experiment A' >> app/main.py && tail -1 app/main.py" }, "change in A");
const inB = await tool("run", { workspace: b.workspace, command: "tail -1 app/main.py" }, "B is untouched");
check(!inB.stdout.includes("experiment A"), "forks are independent");

console.log("\n4. A one-off task: ephemeral, nothing kept.");
const tmp = await tool("open_workspace", {}, "open ephemeral");
await tool("run", { workspace: tmp.workspace, command: "echo $((6*7))" }, "compute");
await tool("close_workspace", { workspace: tmp.workspace }, "close (deleted)");

console.log("\n5. Clean up.");
for (const w of [a.workspace, b.workspace]) await tool("close_workspace", { workspace: w }, `close fork ${w}`);
await tool("snapshot", { delete: snapName }, "delete the snapshot (no fork uses it any more)");
await tool("close_workspace", { workspace: "demo-project" }, "close persistent without delete (refused)");
await tool("close_workspace", { workspace: "demo-project", delete: true }, "close persistent with delete: true");
await client.close();
console.log("\ndone");
