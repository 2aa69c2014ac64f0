package dev.berth.engine.terminal;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Output throughput of a background process on a terminal (run {tty}: a pseudo-terminal in the workspace, the agent
 * channel, the screen model fed with every byte) against the same command on pipes, in a namespace workspace, rounds
 * interleaved; and the bare figures on the host: on a terminal of {@code script} (the host's own pseudo-terminal path)
 * and to /dev/null. Median MiB/s.
 *
 * <pre>
 * mvn -q -o -pl sandbox-engine -am test-compile -Djacoco.skip=true
 * CP=$(mvn -q -o -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout):sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.terminal.TerminalBenchmark 3 100      # rounds, MiB
 * </pre>
 */
public final class TerminalBenchmark {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 100;
        String cmd = "yes | head -c " + mib + "M";
        Path home = Files.createTempDirectory("berth-term-bench-");
        List<Double> tty = new ArrayList<>(), pipes = new ArrayList<>(), script = new ArrayList<>(), host = new ArrayList<>();
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))))) {
            String ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("bench")).workspace().id();
            for (int r = 0; r < rounds; r++) {
                tty.add(mib / seconds(engine, ws, new RunRequest(ws, cmd, null, Map.of(), 600, null, null).withTty(80, 24)));
                pipes.add(mib / seconds(engine, ws, new RunRequest(ws, cmd, null, Map.of(), 600, null, null)));
                long t1 = System.nanoTime();
                new ProcessBuilder("script", "-q", "-c", cmd, "/dev/null").redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
                script.add(mib / ((System.nanoTime() - t1) / 1e9));
                long t0 = System.nanoTime();
                new ProcessBuilder("sh", "-c", cmd + " > /dev/null").inheritIO().start().waitFor();
                host.add(mib / ((System.nanoTime() - t0) / 1e9));
            }
        } finally {
            dev.berth.engine.spi.Trees.delete(home);
        }
        System.out.printf("%s, %d rounds, median MiB/s: terminal %.1f, pipes %.1f, host on script's terminal %.1f, host to /dev/null %.1f%n",
                cmd, rounds, median(tty), median(pipes), median(script), median(host));
        System.out.println("terminal " + tty + "\npipes " + pipes + "\nscript " + script + "\nhost " + host);
    }

    /** Seconds from start until the process has ended and its output is all in (the engine read every byte). */
    private static double seconds(Engine engine, String ws, RunRequest req) throws Exception {
        long t0 = System.nanoTime();
        ProcessStatus s = engine.startBackground(Tenant.LOCAL, req);
        while (s.running()) s = engine.process(Tenant.LOCAL, ws, s.process(), null, null, 5, null, 256);
        return (System.nanoTime() - t0) / 1e9;
    }

    private static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        s.sort(null);
        return s.get(s.size() / 2);
    }
}
