// A template walkthrough: prepare a project once (clone + install), snapshot it, then fork three ephemeral
// workspaces from it in one call and run a different test subset in each, in parallel. Through the official MCP
// TypeScript client.
//
//   node examples/template-walkthrough.mjs [path/to/berth.jar] [--home DIR] [--isolation NAME]
//
// Starts `berth stdio` through the launcher on PATH (installed by `berth setup`); given a jar, it runs that jar on
// $JAVA_HOME/bin/java instead. The "clone" and "install" are local (the example needs no network): a small project
// with three test suites and a vendored dependency directory stand in for them.
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
const client = new Client({ name: "berth-template-walkthrough", version: "1.0.0" });

function check(cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

async function tool(name, a) {
  const t0 = performance.now();
  const r = await client.callTool({ name, arguments: a });
  const ms = (performance.now() - t0).toFixed(0);
  check(!r.isError, `${name} ${JSON.stringify(a)}: ${r.content?.[0]?.text}`);
  return { ...r.structuredContent, ms };
}

await client.connect(transport);

console.log("1. Prepare once: a persistent workspace, the project cloned and its dependencies installed.");
const name = `template-${Date.now()}`;
await tool("open_workspace", { name, lifecycle: "persistent" });
const prep = await tool("run", {
  workspace: name,
  command: [
    "mkdir -p app/tests app/vendor/lib && cd app",
    // the "install": a dependency the tests need, slow to fetch in real life
    "printf 'add() { echo $(( $1 + $2 )); }\\n' > vendor/lib/math.sh",
    "for s in unit integration lint; do printf '. vendor/lib/math.sh\\n[ \"$(add 2 3)\" = 5 ] && echo \"%s: ok\"\\n' $s > tests/$s.sh; done",
    "ls tests",
  ].join(" && "),
});
check(prep.exit_code === 0, "preparing the template");
console.log(`   prepared in ${prep.ms} ms: ${prep.stdout.trim().split("\n").join(", ")}`);

console.log("2. Snapshot it: the template.");
const snap = await tool("snapshot", { workspace: name, name: `${name}-snap` });
console.log(`   snapshot ${snap.snapshot} (${snap.ms} ms)`);

console.log("3. Fork three ephemeral workspaces from it in one call.");
const forks = await tool("open_workspace", { from_snapshot: snap.snapshot, lifecycle: "ephemeral", count: 3 });
check(forks.forks.length === 3, "three forks");
const ids = forks.forks.map((f) => f.workspace);
check(new Set(ids).size === 3, "each fork is its own workspace");
console.log(`   ${ids.join(", ")} (${forks.ms} ms)`);

console.log("4. A different test subset in each, in parallel.");
const suites = ["unit", "integration", "lint"];
const results = await Promise.all(ids.map((id, i) =>
  tool("run", { workspace: id, command: `cd app && sh tests/${suites[i]}.sh && echo ${suites[i]} > /workspace/ran` })));
results.forEach((r, i) => {
  console.log(`   ${ids[i]}: ${r.stdout.trim()} (${r.ms} ms)`);
  check(r.exit_code === 0 && r.stdout.includes(`${suites[i]}: ok`), `suite ${suites[i]} passes in its fork`);
});
// each fork kept only its own change; the template is untouched
for (const [i, id] of ids.entries()) {
  const ran = await tool("run", { workspace: id, command: "cat /workspace/ran" });
  check(ran.stdout.trim() === suites[i], `fork ${id} sees only its own run`);
}
const tpl = await tool("run", { workspace: name, command: "ls /workspace/ran 2>/dev/null || echo untouched" });
check(tpl.stdout.trim() === "untouched", "the template workspace is untouched");

console.log("5. Clean up: forks closed (ephemeral: deleted), then the template and its snapshot.");
for (const id of ids) await tool("close_workspace", { workspace: id });
await tool("close_workspace", { workspace: name, delete: true });
await tool("snapshot", { delete: snap.snapshot });
await client.close();
console.log("done");
