package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.TemplateSettings;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.microvm.ImageBuilder;
import dev.berth.engine.microvm.MicrovmDriver;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Templates through the engine, in one run per level: snapshot time and fork -> first exec for an empty workspace
 * and for workspaces holding N files of 2 KB, each as a ratio to the empty case; {@code run("true")} on an open
 * workspace next to them; and a fork of 16 in one {@link Engine#openMany} call against 16 single forks. Needs root
 * for the namespace driver's images (else its layer is a plain directory). Run by {@code bench/run-templates.sh}.
 */
public final class TemplateBenchmark {
    static final Tenant T = Tenant.LOCAL;

    record Row(String level, int files, long flushMs, long snapshotMs, long forkExecMs) {}

    /** The microVM driver's phase lines (DEBUG on berth.microvm: where each snapshot spent its time) go to stderr. */
    private static final java.util.logging.Logger PHASES = java.util.logging.Logger.getLogger("berth.microvm");

    public static void main(String[] args) throws Exception {
        String level = args.length > 0 ? args[0] : "namespace";
        var handler = new java.util.logging.ConsoleHandler();
        handler.setLevel(java.util.logging.Level.FINE);
        PHASES.setLevel(java.util.logging.Level.FINE);
        PHASES.addHandler(handler);
        PHASES.setUseParentHandlers(false);
        int[] sizes = args.length > 1 ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray() : new int[] {0, 5000, 50000};
        int many = args.length > 2 ? Integer.parseInt(args[2]) : 16;
        Path home = Files.createTempDirectory("berth-tpl-bench-");
        IsolationDriver driver = level.equals("microvm")
                ? new MicrovmDriver(new ImageBuilder(Path.of(System.getProperty("berth.images.cache", "sandbox-engine/target/berth-images"))
                        .toAbsolutePath(), ImageBuilder.defaultScriptsDir()), MicrovmDriver.ImageKind.TEST)
                : new NamespaceDriver(home);
        List<Row> rows = new ArrayList<>();
        double runTrue;
        long oneCall;
        long singles;
        double missMs;
        double hitMs;
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(driver)))) {
            measure(engine, 0); // warm-up, not shown: the first snapshot and fork pay one-time costs (the layer pool is made)
            for (int files : sizes) rows.add(measure(engine, files));
            // run("true") round trip on an open workspace, median of 20
            String ws = engine.open(T, OpenRequest.ephemeral()).workspace().id();
            long[] t = new long[20];
            for (int i = 0; i < t.length; i++) {
                long t0 = System.nanoTime();
                engine.run(T, RunRequest.of(ws, "true"), OutputListener.NONE);
                t[i] = System.nanoTime() - t0;
            }
            Arrays.sort(t);
            runTrue = t[t.length / 2] / 1e6;
            missMs = openToFirstExec(engine, 5, false);
            engine.snapshot(T, ws, "many");
            long t0 = System.nanoTime();
            List<OpenResult> forks = engine.openMany(T, new OpenRequest(null, "ephemeral", "many", null, null), many);
            oneCall = (System.nanoTime() - t0) / 1_000_000;
            for (OpenResult f : forks) engine.closeWorkspace(T, f.workspace().id(), true);
            t0 = System.nanoTime();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < many; i++) ids.add(engine.open(T, new OpenRequest(null, "ephemeral", "many", null, null)).workspace().id());
            singles = (System.nanoTime() - t0) / 1_000_000;
            for (String id : ids) engine.closeWorkspace(T, id, true);
            engine.closeWorkspace(T, ws, true);
        }
        try (Engine pooled = Engine.start(EngineConfig.defaults(home, List.of(driver)).withTemplates(new TemplateSettings(16, 1)))) {
            hitMs = openToFirstExec(pooled, 5, true);
        } finally {
            Trees.delete(home);
        }
        Row empty = rows.getFirst();
        System.out.printf("%n%s: snapshot and fork -> first exec by workspace size (2 KB files), ratio to the empty workspace%n", level);
        System.out.printf("(flush: the background write-out the engine starts when the filling run ends, waited for after"
                + " the run's result and before the snapshot; no request waits for it)%n");
        System.out.printf("%-8s %10s %12s %8s %18s %8s%n", "files", "flush ms", "snapshot ms", "ratio", "fork->exec ms", "ratio");
        for (Row r : rows) {
            System.out.printf("%-8d %10d %12d %8.2f %18d %8.2f%n", r.files(), r.flushMs(), r.snapshotMs(), (double) r.snapshotMs() / Math.max(1, empty.snapshotMs()),
                    r.forkExecMs(), (double) r.forkExecMs() / Math.max(1, empty.forkExecMs()));
        }
        System.out.printf("run(\"true\") on an open workspace: %.1f ms (median of 20)%n", runTrue);
        System.out.printf("open -> first exec of a fresh workspace (median of 5): pool hit %.1f ms, pool miss %.1f ms%n", hitMs, missMs);
        System.out.printf("fork of %d: one open_workspace {count: %d} %d ms; %d single forks one after another %d ms%n",
                many, many, oneCall, many, singles);
    }

    /** Median open -> first {@code run("true")} of fresh workspaces; with a pool, each waits until a member is ready. */
    static double openToFirstExec(Engine engine, int n, boolean hit) throws Exception {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            if (hit) Await.within(java.time.Duration.ofSeconds(120), () -> engine.poolReady(engine.defaultIsolation()) > 0);
            long t0 = System.nanoTime();
            OpenResult o = engine.open(T, OpenRequest.ephemeral());
            engine.run(T, RunRequest.of(o.workspace().id(), "true"), OutputListener.NONE);
            t[i] = System.nanoTime() - t0;
            if (hit && !"hit".equals(o.pool())) throw new IllegalStateException("expected a pool hit, got " + o.pool());
            engine.closeWorkspace(T, o.workspace().id(), true);
        }
        Arrays.sort(t);
        return t[n / 2] / 1e6;
    }

    /** A workspace with {@code files} files of 2 KB: snapshot it, then fork it and run {@code true} in the fork. */
    static Row measure(Engine engine, int files) throws EngineException {
        String ws = engine.open(T, OpenRequest.ephemeral()).workspace().id();
        if (files > 0) {
            // 100 directories, the files spread over them, each 2 KB of random bytes (split writes a directory's in one process)
            int per = Math.max(1, files / 100);
            RunResult r = engine.run(T, new RunRequest(ws, "mkdir -p repo && cd repo && for d in $(seq 1 " + Math.min(100, files)
                    + "); do mkdir d$d && if command -v split >/dev/null; then head -c $((2048 * " + per + ")) /dev/urandom | split -b 2048 -a 5 - d$d/f;"
                    // the microVM test image's busybox has no split: awk writes a directory's files from 2 KB of random hex
                    + " else h=$(head -c 1024 /dev/urandom | od -An -tx1 | tr -d ' \\n') && awk -v s=\"$h\" -v n=" + per
                    + " -v d=d$d 'BEGIN{for(i=0;i<n;i++){f=d \"/f\" i; printf \"%s\", substr(s,1,2048-length(i \"\")) i > f; close(f)}}'; fi || exit 1; done",
                    null, java.util.Map.of(), 3600, null, null), OutputListener.NONE);
            if (r.exitCode() != 0) throw new IllegalStateException("filling the workspace failed: " + r.stderr());
        }
        // the engine writes what a run left dirty out in the background when the run ends (as it does for an agent
        // that snapshots seconds later); wait for that here and report how long it took after the run's result
        long f0 = System.nanoTime();
        try {
            engine.flushed(T, ws).get(10, java.util.concurrent.TimeUnit.MINUTES);
        } catch (Exception e) {
            throw new IllegalStateException("waiting for the background flush: " + e, e);
        }
        long flushMs = (System.nanoTime() - f0) / 1_000_000;
        long t0 = System.nanoTime();
        SnapshotInfo snap = engine.snapshot(T, ws, null);
        long snapMs = (System.nanoTime() - t0) / 1_000_000;
        t0 = System.nanoTime();
        String fork = engine.open(T, new OpenRequest(null, "ephemeral", snap.id(), null, null)).workspace().id();
        long openMs = (System.nanoTime() - t0) / 1_000_000;
        engine.run(T, RunRequest.of(fork, "true"), OutputListener.NONE);
        long forkMs = (System.nanoTime() - t0) / 1_000_000;
        System.err.printf("%d files: fork open %d ms, its first run %d ms%n", files, openMs, forkMs - openMs);
        engine.closeWorkspace(T, fork, true);
        engine.closeWorkspace(T, ws, true);
        engine.deleteSnapshot(T, snap.id());
        // btrfs drops the deleted layers in the background for seconds (about 30 s for 50,000 files): the next row
        // measures its own snapshot and fork, not this clean-up
        Path poolDir = engine.home().resolve("pool");
        if (Files.exists(poolDir.resolve("btrfs.img"))) {
            try (var l = dev.berth.engine.host.BtrfsPool.at(poolDir).open()) {
                l.awaitDropped();
            } catch (java.io.IOException e) {
                throw new IllegalStateException("waiting for the pool's deleted layers: " + e.getMessage(), e);
            }
        }
        return new Row(engine.home().toString(), files, flushMs, snapMs, forkMs);
    }
}
