package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.image.HostDebianRoot;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code apt-get update && apt-get install} of {@link AptInstallTest}'s package set (a postinst that adds a system
 * user, a file of another owner) in a namespace workspace on the Debian image, against the same in plain bubblewrap
 * as host root over a copy of the same tree (no user namespace, no overlay: the chroot a packager would use),
 * alternated in one run. Timed around the command only (the workspace's open and the copy are not counted). Needs
 * root.
 *
 * <pre>
 * mvn -q -pl sandbox-engine -am test-compile
 * CP=$(mvn -q -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout):sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.AptBenchmark 5
 * </pre>
 */
public final class AptBenchmark {
    static final String INSTALL = "apt-get -q -o Acquire::Languages=none update >/dev/null"
            + " && DEBIAN_FRONTEND=noninteractive apt-get install -q -y berth-demo-tool >/dev/null 2>&1 && berth-demo-tool";

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        Path home = Files.createTempDirectory("berth-aptbench-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Path tree = home.resolve("scratch/root");
        HostDebianRoot.build(tree, List.of("apt", "adduser"), List.of());
        Files.createDirectories(tree.resolve("workspace"));
        AptInstallTest.repository(home.resolve("scratch/debs"), tree.resolve("srv/repo"));
        Files.writeString(tree.resolve("etc/apt/sources.list.d/local.list"), "deb [trusted=yes] file:/srv/repo ./\n");
        new ImageStore(home).importTree(tree, "debian", "amd64", Map.of("Env", List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                "WorkingDir", "/workspace"), "Debian packages of this host", null, ImportLimits.DEFAULT, l -> { });
        List<Long> ws = new ArrayList<>(), plain = new ArrayList<>();
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))))) {
            for (int i = 0; i < n; i++) {
                String id = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, "namespace", null, null, null, "debian")).workspace().id();
                long t0 = System.nanoTime();
                RunResult r = engine.run(Tenant.LOCAL, new RunRequest(id, INSTALL, null, null, 600, null, null), OutputListener.NONE);
                ws.add((System.nanoTime() - t0) / 1_000_000);
                if (r.exitCode() != 0) throw new IllegalStateException("in the workspace: " + r);
                engine.closeWorkspace(Tenant.LOCAL, id, true);

                Path copy = home.resolve("plain");
                AptInstallTest.sh("rm -rf " + copy + " && cp -a " + tree + " " + copy);
                t0 = System.nanoTime();
                AptInstallTest.sh("bwrap --bind " + copy + " / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run --unshare-pid"
                        + " --clearenv --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin -- sh -c '" + INSTALL + "'");
                plain.add((System.nanoTime() - t0) / 1_000_000);
                System.out.printf("round %d: workspace %d ms, plain bwrap %d ms%n", i + 1, ws.getLast(), plain.getLast());
            }
        } finally {
            Trees.delete(home);
        }
        long a = median(ws), b = median(plain);
        System.out.printf("median of %d: workspace %d ms, plain bwrap as root %d ms, ratio %.2f; load %s%n", n, a, b, (double) a / b,
                Files.readString(Path.of("/proc/loadavg")).strip());
    }

    static long median(List<Long> v) {
        List<Long> s = new ArrayList<>(v);
        s.sort(null);
        return s.get(s.size() / 2);
    }
}
