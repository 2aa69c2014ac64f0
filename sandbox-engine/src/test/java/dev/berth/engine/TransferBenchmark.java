package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.ExportResult;
import dev.berth.engine.api.ImportRequest;
import dev.berth.engine.api.ImportResult;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
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
 * open_workspace {from_directory} through the engine beside the bare host tools, same run, same repository: a git
 * repository of N files of 2 KB (one commit) imported into a fresh workspace (open, then the copy; both shown),
 * against {@code git clone --local} and {@code cp -a --reflink=auto} of it on the host; then export of a patch and
 * of a branch after changing 10 and 1,000 files. Median of 3 rounds each. Run by {@code bench/run-transfer.sh}.
 */
public final class TransferBenchmark {
    static final Tenant T = Tenant.LOCAL;

    public static void main(String[] args) throws Exception {
        String level = args.length > 0 ? args[0] : "namespace";
        int[] sizes = args.length > 1 ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray() : new int[] {5000};
        int rounds = 3;
        Path home = Files.createTempDirectory("berth-transfer-bench-");
        Path work = Files.createTempDirectory("berth-transfer-bench-src-").toRealPath();
        IsolationDriver driver = level.equals("microvm")
                ? new MicrovmDriver(new ImageBuilder(Path.of(System.getProperty("berth.images.cache", "sandbox-engine/target/berth-images"))
                        .toAbsolutePath(), ImageBuilder.defaultScriptsDir()), MicrovmDriver.ImageKind.TEST)
                : new NamespaceDriver(home);
        List<String> lines = new ArrayList<>();
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(driver)))) {
            for (int n : sizes) {
                Path repo = work.resolve("repo-" + n);
                makeRepo(repo, n);
                long[] open = new long[rounds], copy = new long[rounds], clone = new long[rounds], cp = new long[rounds];
                for (int r = 0; r < rounds; r++) {
                    Path c1 = work.resolve("clone-" + n + "-" + r), c2 = work.resolve("cp-" + n + "-" + r);
                    long t0 = System.nanoTime();
                    sh("git", "clone", "-q", "--local", repo.toString(), c1.toString());
                    clone[r] = System.nanoTime() - t0;
                    t0 = System.nanoTime();
                    sh("cp", "-a", "--reflink=auto", repo.toString(), c2.toString());
                    cp[r] = System.nanoTime() - t0;
                    Trees.delete(c1);
                    Trees.delete(c2);
                    String ws = "b" + n + "-" + r;
                    t0 = System.nanoTime();
                    var prepared = engine.transfers().prepare(new ImportRequest(repo, List.of(work), false));
                    engine.open(T, new OpenRequest(ws, "ephemeral", null, null, null));
                    long t1 = System.nanoTime();
                    ImportResult ir = engine.transfers().importInto(T, ws, prepared);
                    copy[r] = System.nanoTime() - t1;
                    open[r] = System.nanoTime() - t0;
                    if (r == 0) lines.add(String.format("  import %d files: %d entries, %d bytes", n, ir.files(), ir.bytes()));
                    boolean gitInside = ir.notes().stream().noneMatch(x -> x.startsWith("git is not installed"));
                    if (r == 0 && !gitInside) lines.add("  (no git in this level's image: exports not measured)");
                    if (r == rounds - 1 && gitInside) {
                        for (int changed : new int[] {10, 1000}) {
                            if (changed > n) continue;
                            engine.run(T, RunRequest.of(ws, "cd /workspace && for f in $(find d* -name '*.txt' | sort | tail -n " + changed
                                    + "); do echo changed-" + changed + " >> $f; done"), OutputListener.NONE);
                            long e0 = System.nanoTime();
                            ExportResult p = engine.transfers().export(T, ws, null, null, List.of(work));
                            long patchMs = (System.nanoTime() - e0) / 1_000_000;
                            e0 = System.nanoTime();
                            ExportResult b = engine.transfers().export(T, ws, "branch", "bench/" + ws + "-" + changed, List.of(work));
                            long branchMs = (System.nanoTime() - e0) / 1_000_000;
                            lines.add(String.format("  export after changing %4d files: patch %5d ms (%d bytes, %d changes), branch %5d ms (%d bundle bytes)",
                                    changed, patchMs, p.patchBytes(), p.changeCount(), branchMs, b.bytes()));
                        }
                    }
                    engine.closeWorkspace(T, ws, true);
                }
                double o = median(open), c = median(copy), gl = median(clone), ca = median(cp);
                lines.add(String.format("%s, %d files: open+import %.0f ms (copy alone %.0f ms) | git clone --local %.0f ms | cp -a --reflink=auto %.0f ms"
                        + " | ratio open+import / clone %.1fx, / cp %.1fx; copy alone / cp %.1fx", level, n, o, c, gl, ca, o / gl, o / ca, c / ca));
            }
        } finally {
            Trees.delete(home);
            Trees.delete(work);
        }
        lines.forEach(System.out::println);
    }

    static double median(long[] ns) {
        long[] s = ns.clone();
        Arrays.sort(s);
        return s[s.length / 2] / 1e6;
    }

    static void makeRepo(Path repo, int n) throws Exception {
        byte[] body = new byte[2048];
        java.util.Arrays.fill(body, (byte) 'x');
        int perDir = 500;
        for (int i = 0; i < n; i++) {
            Path d = repo.resolve("d" + (i / perDir));
            Files.createDirectories(d);
            body[0] = (byte) ('a' + i % 26);
            Files.write(d.resolve("f" + i + ".txt"), body);
        }
        sh("git", "-C", repo.toString(), "init", "-q");
        sh("git", "-C", repo.toString(), "add", "-A");
        sh("git", "-C", repo.toString(), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "files");
    }

    static void sh(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) throw new IllegalStateException(String.join(" ", cmd) + ": " + out);
    }
}
