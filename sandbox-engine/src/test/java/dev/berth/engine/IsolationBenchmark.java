package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.gvisor.GvisorDriver;
import dev.berth.engine.microvm.ImageBuilder;
import dev.berth.engine.microvm.MicrovmDriver;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The isolation levels side by side in one run, through the engine (as the MCP tools use it): open to first exec,
 * {@code run("true")}, park, resume (the first run after park), and the host memory an idle workspace costs (RSS of
 * its sandbox's host processes: bwrap and the agent; runsc, Sentry and gofer; QEMU). The microVM runs jailed and,
 * for comparison, unjailed ({@code -Dberth.microvm.unsafeNoJail=true}) and with its runs unconfined in the guest
 * ({@code -Dberth.microvm.unsafeUnconfinedRuns=true}: the cost of confined runs); the namespace level also with
 * unconfined runs ({@code -Dberth.namespace.unsafeUnconfinedRuns=true}). Medians of {@code n} workspaces;
 * needs root.
 *
 * <pre>
 * mvn -q -pl sandbox-engine -am test-compile
 * CP=$(mvn -q -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout):sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.IsolationBenchmark 3 20 [namespace,gvisor,microvm]   # workspaces per level, run("true") per workspace
 * </pre>
 */
public final class IsolationBenchmark {
    record Row(String level, long openMs, double runMs, long parkMs, long resumeMs, long rssMiB, String parkKeeps) {}

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        java.util.Set<String> only = args.length > 2 ? java.util.Set.of(args[2].split(",")) : java.util.Set.of("namespace", "gvisor", "microvm");
        Path cache = Path.of(System.getProperty("berth.images.cache", "sandbox-engine/target/berth-images")).toAbsolutePath();
        List<Row> rows = new ArrayList<>();
        if (only.contains("namespace")) {
            rows.add(measure("namespace", NamespaceDriver::new, n, runs));
            // runs confined below the agent (the default) against the agent running them itself
            System.setProperty("berth.namespace.unsafeUnconfinedRuns", "true");
            try {
                rows.add(measure("namespace (unconfined runs)", NamespaceDriver::new, n, runs));
            } finally {
                System.clearProperty("berth.namespace.unsafeUnconfinedRuns");
            }
        }
        if (only.contains("gvisor")) rows.add(measure("gvisor", GvisorDriver::new, n, runs));
        Supplier<IsolationDriver> vm = () -> new MicrovmDriver(new ImageBuilder(cache, ImageBuilder.defaultScriptsDir()), MicrovmDriver.ImageKind.TEST);
        if (only.contains("microvm")) {
            rows.add(measure("microvm (jailed)", home -> vm.get(), n, runs));
            System.setProperty("berth.microvm.unsafeNoJail", "true");
            try {
                rows.add(measure("microvm (unjailed)", home -> vm.get(), n, runs));
            } finally {
                System.clearProperty("berth.microvm.unsafeNoJail");
            }
            // runs confined below the guest agent (the default) against the agent running them unconfined
            System.setProperty("berth.microvm.unsafeUnconfinedRuns", "true");
            try {
                rows.add(measure("microvm (unconfined runs)", home -> vm.get(), n, runs));
            } finally {
                System.clearProperty("berth.microvm.unsafeUnconfinedRuns");
            }
        }
        System.out.printf("%n%-26s %14s %12s %9s %11s %16s  %s%n", "level", "open->exec ms", "run(true) ms", "park ms",
                "resume ms", "idle RSS MiB/ws", "park keeps");
        for (Row r : rows) {
            System.out.printf("%-26s %14d %12.1f %9d %11d %16d  %s%n", r.level(), r.openMs(), r.runMs(), r.parkMs(), r.resumeMs(),
                    r.rssMiB(), r.parkKeeps());
        }
    }

    interface DriverFactory { IsolationDriver create(Path home); }

    static Row measure(String level, DriverFactory factory, int n, int runs) throws Exception {
        Path home = Files.createTempDirectory("berth-iso-bench-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        List<Long> open = new ArrayList<>();
        List<Double> run = new ArrayList<>();
        List<Long> park = new ArrayList<>();
        List<Long> resume = new ArrayList<>();
        List<Long> rss = new ArrayList<>();
        String keeps = "";
        IsolationDriver driver = factory.create(home);
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(driver)))) {
            // one untimed workspace first: image build, warm base snapshot, agent extraction
            String warm = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
            engine.run(Tenant.LOCAL, RunRequest.of(warm, "true"), OutputListener.NONE);
            engine.closeWorkspace(Tenant.LOCAL, warm, true);
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                String ws = engine.open(Tenant.LOCAL, new OpenRequest("bench-" + i, "persistent", null, null,
                        new Resources(1, 256, 1024, 256))).workspace().id();
                engine.run(Tenant.LOCAL, RunRequest.of(ws, "true"), OutputListener.NONE);
                open.add(ms(t0));
                List<Long> each = new ArrayList<>();
                for (int k = 0; k < runs; k++) {
                    long t = System.nanoTime();
                    engine.run(Tenant.LOCAL, RunRequest.of(ws, "true"), OutputListener.NONE);
                    each.add(System.nanoTime() - t);
                }
                run.add(median(each) / 1e6);
                rss.add(rssKiB(engine.sandboxOf(Tenant.LOCAL, ws).hostPid()) >> 10);
                long tp = System.nanoTime();
                ParkResult pr = engine.park(Tenant.LOCAL, ws);
                park.add(ms(tp));
                keeps = pr.toString().contains("memoryKept=true") ? "memory" : "files";
                long tr = System.nanoTime();
                engine.run(Tenant.LOCAL, RunRequest.of(ws, "true"), OutputListener.NONE);
                resume.add(ms(tr));
                engine.closeWorkspace(Tenant.LOCAL, ws, true);
            }
        } finally {
            Trees.delete(home);
        }
        Row r = new Row(level, median(open), run.stream().sorted().toList().get(run.size() / 2), median(park), median(resume),
                median(rss), keeps);
        System.out.println(r);
        return r;
    }

    static long ms(long t0) { return (System.nanoTime() - t0) / 1_000_000; }

    static long median(List<Long> xs) {
        List<Long> s = xs.stream().sorted().toList();
        return s.get(s.size() / 2);
    }

    /** Resident memory of a process and all its descendants, in KiB. */
    static long rssKiB(long pid) {
        long sum = 0;
        List<ProcessHandle> all = new ArrayList<>();
        ProcessHandle.of(pid).ifPresent(p -> {
            all.add(p);
            p.descendants().forEach(all::add);
        });
        for (ProcessHandle p : all) {
            try {
                for (String l : Files.readAllLines(Path.of("/proc/" + p.pid() + "/status"))) {
                    if (l.startsWith("VmRSS:")) sum += Long.parseLong(l.replaceAll("\\D", ""));
                }
            } catch (Exception e) {
                // ended meanwhile
            }
        }
        return sum;
    }

    private IsolationBenchmark() {}

}
