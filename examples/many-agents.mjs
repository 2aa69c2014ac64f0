// Many agents, many branches: import a repository once, snapshot it, fork three workspaces from the snapshot, let
// each "agent" change something, and hand each one's work back as its own branch of the repository. The user's
// working tree, index and current branch are never touched; merge the branches you like.
//
//   node examples/many-agents.mjs <repository> [path/to/berth.jar] [--home DIR] [--isolation NAME]
//
// The client declares the repository as its root (roots/list), which is what allows the server to read it and to
// write branches into it. Starts `berth stdio` through the launcher on PATH unless a jar is given (then it runs the
// jar on $JAVA_HOME/bin/java). Exits non-zero if any step does not behave as described (the test suite runs it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const args = process.argv.slice(2);
if (!args[0] || args[0].startsWith("--")) {
  console.error("usage: node many-agents.mjs <repository> [berth.jar] [--home DIR] [--isolation NAME]");
  process.exit(2);
}
const repository = resolve(args.shift());
const jar = args[0] && !args[0].startsWith("--") ? args.shift() : null;
const java = process.env.JAVA_HOME ? `${process.env.JAVA_HOME}/bin/java` : "java";
const iso = args.indexOf("--isolation");
const isolation = iso >= 0 ? args[iso + 1] : undefined;
const serverArgs = args.filter((_, i) => i !== iso && i !== iso + 1);
const transport = jar
  ? new StdioClientTransport({ command: java, args: ["-jar", jar, "stdio", ...serverArgs], stderr: "inherit" })
  : new StdioClientTransport({ command: "berth", args: ["stdio", ...serverArgs], stderr: "inherit" });
const client = new Client({ name: "berth-many-agents", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({
  roots: [{ uri: pathToFileURL(repository).href, name: "the project" }],
}));

function check(cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

async function tool(name, a) {
  const t0 = performance.now();
  const r = await client.callTool({ name, arguments: a }, undefined, { timeout: 600000 });
  check(!r.isError, `${name} ${JSON.stringify(a)}: ${r.content?.[0]?.text}`);
  return { s: r.structuredContent, ms: (performance.now() - t0).toFixed(0) };
}

await client.connect(transport);
console.log(`connected to ${client.getServerVersion().name}; root: ${repository}`);

console.log("\n1. Import the repository once.");
const opened = await tool("open_workspace", { name: "project", from_directory: repository, ...(isolation ? { isolation } : {}) });
const imp = opened.s.import;
check(imp && imp.git, "the repository arrives as a git repository");
console.log(`  open_workspace from_directory (${opened.ms} ms): ${imp.entries} entries, ${imp.bytes} bytes, branch ${imp.branch}, `
  + `commit ${imp.commit?.slice(0, 12)}, ${imp.ignored} ignored, ${imp.skipped_count} skipped`);

console.log("\n2. Snapshot it, and fork three workspaces from the snapshot.");
const snap = await tool("snapshot", { workspace: "project", name: "imported" });
console.log(`  snapshot (${snap.ms} ms): ${snap.s.snapshot}`);
const forks = await tool("open_workspace", { from_snapshot: "imported", count: 3, lifecycle: "ephemeral" });
const ids = forks.s.forks.map((f) => f.workspace);
check(ids.length === 3, "three forks");
console.log(`  forked (${forks.ms} ms): ${ids.join(", ")}`);

console.log("\n3. Each agent works in its own fork, then hands its work back as its own branch.");
const branches = [];
for (const [i, ws] of ids.entries()) {
  const agent = `agent-${i + 1}`;
  await tool("run", { workspace: ws, command:
    `printf '%s was here\\n' ${agent} > ${agent}.txt && git -c user.name=${agent} -c user.email=${agent}@example `
    + `-c safe.directory='*' add ${agent}.txt && git -c user.name=${agent} -c user.email=${agent}@example `
    + `-c safe.directory='*' commit -q -m "${agent}: a committed change" && echo 'and some uncommitted work' >> ${agent}.txt` });
  const out = await tool("export_changes", { workspace: ws, to: "branch", branch: `agents/${agent}` });
  check(out.s.branch === `agents/${agent}` && /^[0-9a-f]{40}$/.test(out.s.commit), `a branch for ${agent}`);
  check(out.s.changes.some((c) => c.endsWith(`${agent}.txt`)), `${agent}'s change is on its branch: ${out.s.changes}`);
  branches.push(out.s.branch);
  console.log(`  ${ws} -> branch ${out.s.branch} at ${out.s.commit.slice(0, 12)} (${out.ms} ms, ${out.s.bytes} bundle bytes): ${out.s.changes.join(", ")}`);
}

console.log("\n4. The same work as a patch, and an existing branch is never overwritten.");
const patch = await tool("export_changes", { workspace: ids[0] });
check(patch.s.patch.includes("agent-1.txt"), "the patch names the change");
console.log(`  patch (${patch.ms} ms): ${patch.s.patch_bytes} bytes, ${patch.s.change_count} change(s)`);
const again = await client.callTool({ name: "export_changes", arguments: { workspace: ids[0], to: "branch", branch: "agents/agent-1" } });
check(again.isError && again.content[0].text.includes("never overwritten"), "an existing branch is refused");
console.log(`  again into agents/agent-1: refused (${again.content[0].text.split(";")[0]})`);

for (const ws of [...ids, "project"]) await tool("close_workspace", { workspace: ws, delete: true });
await client.close();
console.log(`\nbranches: ${branches.join(" ")}`);
console.log("done");
