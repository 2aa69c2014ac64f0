package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.ExecExit;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.agent.ExecRequest;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.io.InputStream;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Prints the microvm driver's figures next to bare QEMU doing the same thing in the same run.
 *
 * <p>"Berth" goes through {@link MicrovmDriver} (QMP client, agent client, fsync, metadata). "Bare" is a hand-written
 * QEMU command line with the same kernel, initramfs, agent, memory backend and restore command ({@code -incoming
 * defer}, {@code x-ignore-shared}, {@code migrate-incoming "exec:cat FILE"}), driven with raw sockets: the agent HELLO and one EXEC are written
 * as bytes, QMP as JSON lines. Ready = the agent answered HELLO; first exec = EXIT of {@code /bin/true} arrived.
 *
 * <p>Usage: {@code MicrovmBenchmark [rounds=3] [memoryMiB=256] [test|developer]}. Not a test; needs QEMU and the image
 * cache (it builds the test image if needed).
 */
public final class MicrovmBenchmark {

    private final Map<String, List<Double>> berth = new LinkedHashMap<>();
    private final Map<String, List<Double>> bare = new LinkedHashMap<>();
    /** The digest threads the manifest check runs on (warm across rounds, as a driver's are). */
    private final BackgroundTasks tasks = new BackgroundTasks();
    private final Path work;
    private final int memMiB;
    private final GuestImage image;
    private final Accel accel;

    private MicrovmBenchmark(Path work, int memMiB, GuestImage image, Accel accel) {
        this.work = work;
        this.memMiB = memMiB;
        this.image = image;
        this.accel = accel;
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int mem = args.length > 1 ? Integer.parseInt(args[1]) : 256;
        boolean dev = args.length > 2 && args[2].equals("developer");
        ImageBuilder images = ImageBuilder.defaults();
        MicrovmDriver driver = new MicrovmDriver(images, dev ? MicrovmDriver.ImageKind.DEVELOPER : MicrovmDriver.ImageKind.TEST);
        GuestImage image = driver.image();
        Path work = Files.createTempDirectory("berth-bench");
        MicrovmBenchmark b = new MicrovmBenchmark(work, mem, image, driver.accel());
        System.out.printf("microvm benchmark: %d rounds, %d MiB guest, image %s, accelerator %s (%s), %d host cpus, init_on_free=%d%n",
                rounds, mem, image.id(), driver.accel().name(), driver.accel().why(), Runtime.getRuntime().availableProcessors(),
                driver.settings().initOnFree() ? 1 : 0);
        try {
            // Alternate which side goes first, so neither always runs on a host still busy with the other's writes.
            for (int i = 0; i < rounds; i++) {
                if (i % 2 == 0) { b.roundBerth(driver, i); b.roundBare(i); }
                else { b.roundBare(i); b.roundBerth(driver, i); }
            }
            b.print();
        } finally {
            ImageBuilder.deleteTree(work);
        }
    }

    private void add(Map<String, List<Double>> m, String k, double v) { m.computeIfAbsent(k, x -> new ArrayList<>()).add(v); }

    private static double ms(long t0) { return (System.nanoTime() - t0) / 1e6; }

    // ---------------------------------------------------------------- Berth

    private void roundBerth(MicrovmDriver driver, int i) throws Exception {
        Resources r = new Resources(1, memMiB, 1024, 1024);
        Path ws = work.resolve("berth-" + i);
        StartRequest fresh = new StartRequest("ws-b" + i, ws.resolve("state"), ws.resolve("run"), new StartRequest.Fresh(), r, 0);
        long t0 = System.nanoTime();
        Sandbox sb = driver.start(fresh);
        add(berth, "cold boot to agent ready", ms(t0));
        t0 = System.nanoTime();
        exec(sb.agent());
        add(berth, "first exec after boot", ms(t0));
        if (i == 0) System.out.print("guest: " + output(sb.agent(), "/bin/sh", "-c",
                "uname -r; head -n1 /etc/os-release; for c in python3 node git gcc; do command -v $c >/dev/null && $c --version 2>&1 | head -n1; done; ls /sys/class/net; df -h /workspace | tail -n1"));
        exec(sb.agent(), "/bin/sh", "-c", "dd if=/dev/urandom of=/tmp/blob bs=1M count=16 2>/dev/null");
        // as the engine does when a run ends: the RAM file's dirty pages are written out in the background (no request
        // waits for it); the park below comes after it, as an idle park or one asked for a moment later does
        t0 = System.nanoTime();
        sb.flushInBackground().join();
        add(berth, "RAM write-out after the run (starts 250 ms after it; background), ms", ms(t0));

        Path snap = work.resolve("berth-snap-" + i);
        t0 = System.nanoTime();
        sb.snapshot(snap);
        add(berth, "snapshot (live, incl. RAM+disk copy)", ms(t0));

        t0 = System.nanoTime();
        Sandbox.ParkOutcome p = sb.park();
        double parkMs = ms(t0);
        add(berth, "park (Berth: RAM written out after the last run; fsync, state digest, manifest)", parkMs);
        ((MicrovmSandbox) sb).lastDigests.join();
        add(berth, "park's RAM and disk digests, done this long after park returned (background), ms", ms(t0) - parkMs);
        add(berth, "state on disk after park, MiB", p.stateBytes() / 1048576.0);
        add(berth, "  of which device state file, MiB", Files.size(ws.resolve("state/state")) / 1048576.0);
        add(berth, "park: manifest on the park path (state digest, manifest write), ms", ((MicrovmSandbox) sb).lastManifestMillis);
        ((MicrovmSandbox) sb).lastParkPhases.forEach((k, v) -> add(berth, "  park phase: " + k + ", ms", v));
        t0 = System.nanoTime();
        ParkManifest.verify(tasks, "ws-b" + i, ws.resolve("state"));
        add(berth, "resume: manifest check (also inside resume), ms", ms(t0));

        t0 = System.nanoTime();
        Sandbox back = driver.start(new StartRequest("ws-b" + i, ws.resolve("state"), ws.resolve("run"), new StartRequest.Resume(), r, 0));
        long e0 = System.nanoTime();
        exec(back.agent());
        double firstExec = ms(e0);
        add(berth, "resume to first exec", ms(t0));
        ((MicrovmSandbox) back).startPhases.forEach((k, v) -> add(berth, "  resume phase: " + k + ", ms", v));
        add(berth, "  resume phase: first exec, ms", firstExec);
        // the worst case: a park right after a run that changed memory, before its write-out started
        exec(back.agent(), "/bin/sh", "-c", "dd if=/dev/urandom of=/tmp/blob2 bs=1M count=16 2>/dev/null");
        t0 = System.nanoTime();
        back.park();
        add(berth, "park right after a run (its write-out not started)", ms(t0));
        ((MicrovmSandbox) back).lastParkPhases.forEach((k, v) -> add(berth, "  that park's phase: " + k + ", ms", v));
        ((MicrovmSandbox) back).lastDigests.join();
        back.destroy();

        Path fws = work.resolve("berth-fork-" + i);
        t0 = System.nanoTime();
        Sandbox fork = driver.start(new StartRequest("ws-f" + i, fws.resolve("state"), fws.resolve("run"), new StartRequest.Fork(snap), r, 0));
        exec(fork.agent());
        add(berth, "fork to first exec", ms(t0));
        add(berth, "fork's own state on disk, MiB", SnapshotWriter.allocatedBytes(List.of(fws.resolve("state/data.qcow2"))) / 1048576.0);
        fork.destroy();
        driver.cleanupRuntime(ws.resolve("run"));
    }

    private static String output(AgentClient a, String... argv) throws Exception {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        a.exec(new ExecRequest(List.of(argv), List.of("PATH=/usr/bin:/bin:/usr/sbin:/sbin"), "/", 30_000, false), new ExecListener() {
            @Override public void onStdout(byte[] d) { synchronized (out) { out.writeBytes(d); } }
            @Override public void onStderr(byte[] d) { synchronized (out) { out.writeBytes(d); } }
        }).exit().get(60, TimeUnit.SECONDS);
        synchronized (out) { return out.toString(StandardCharsets.UTF_8).replace("\n", " | ") + "\n"; }
    }

    private static void exec(AgentClient a, String... argv) throws Exception {
        List<String> cmd = argv.length == 0 ? List.of("/bin/true") : List.of(argv);
        ExecExit e = a.exec(new ExecRequest(cmd, List.of("PATH=/usr/bin:/bin"), "/", 0, false), new ExecListener() {
            @Override public void onStdout(byte[] d) { }
            @Override public void onStderr(byte[] d) { }
        }).exit().get(120, TimeUnit.SECONDS);
        if (e.exitCode() != 0) throw new IOException("exec " + cmd + " failed: " + e);
    }

    // ---------------------------------------------------------------- bare QEMU

    private List<String> bareArgs(Path dir, Path ram, boolean share, Path disk) {
        List<String> a = new ArrayList<>(List.of("qemu-system-x86_64", "-machine", "microvm,memory-backend=mem",
                "-accel", accel.kvm() ? "kvm" : "tcg,tb-size=256", "-cpu", accel.kvm() ? "host" : "max", "-smp", "1",
                "-m", memMiB + "M", "-object", "memory-backend-file,id=mem,size=" + memMiB + "M,mem-path=" + ram + ",share=" + (share ? "on" : "off"),
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                "-kernel", image.kernel().toString(), "-initrd", image.initramfs().toString(),
                "-append", "console=ttyS0 quiet panic=-1 init_on_free=" + (MicrovmSettings.fromSystem().initOnFree() ? 1 : 0) + (accel.kvm() ? "" : " tsc_early_khz=" + accel.tscKhz()) + " berth.proxy_port=0",
                "-serial", "null"));
        if (image.baseDisk() != null) {
            a.addAll(List.of("-drive", "file=" + image.baseDisk() + ",if=none,id=base,format=raw,readonly=on",
                    "-device", "virtio-blk-device,drive=base,serial=berth-base"));
        }
        a.addAll(List.of("-drive", "file=" + disk + ",if=none,id=data,format=qcow2",
                "-device", "virtio-blk-device,drive=data,serial=berth-data",
                "-device", "virtio-serial-device,max_ports=2",
                "-chardev", "socket,id=agent,path=" + dir.resolve("a.sock") + ",server=on,wait=off",
                "-device", "virtserialport,chardev=agent,name=berth.agent",
                "-qmp", "unix:" + dir.resolve("q.sock") + ",server=on,wait=off"));
        return a;
    }

    private static Process spawn(List<String> args) throws IOException {
        return new ProcessBuilder(args).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    private void roundBare(int i) throws Exception {
        Path dir = work.resolve("bare-" + i);
        Files.createDirectories(dir);
        Path disk = dir.resolve("data.qcow2");
        ColdBoot.createDataDisk(disk, 1024);
        Path ram = dir.resolve("ram");
        long t0 = System.nanoTime();
        Process q = spawn(bareArgs(dir, ram, true, disk));
        SocketChannel agent = connect(dir.resolve("a.sock"));
        hello(agent);
        add(bare, "cold boot to agent ready", ms(t0));
        t0 = System.nanoTime();
        execTrue(agent, 1);
        add(bare, "first exec after boot", ms(t0));
        agent.close();

        // snapshot: stop, save, copy RAM + disk, cont (same steps as Berth, by hand)
        Path snap = dir.resolve("snap");
        Files.createDirectories(snap);
        SocketChannel qmp = connect(dir.resolve("q.sock"));
        qmpLine(qmp); // greeting
        qmpCmd(qmp, "{\"execute\":\"qmp_capabilities\"}");
        qmpCmd(qmp, IGNORE_SHARED);
        t0 = System.nanoTime();
        qmpCmd(qmp, "{\"execute\":\"stop\"}");
        qmpCmd(qmp, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat > " + snap.resolve("state") + "\"}}");
        awaitMigrated(qmp);
        new ProcessBuilder("cp", "--sparse=always", ram.toString(), snap.resolve("ram").toString()).start().waitFor();
        new ProcessBuilder("cp", "--sparse=always", disk.toString(), snap.resolve("data.qcow2").toString()).start().waitFor();
        qmpCmd(qmp, "{\"execute\":\"cont\"}");
        add(bare, "snapshot (live, incl. RAM+disk copy)", ms(t0));

        // park: stop, save, quit (no fsync)
        Path state = dir.resolve("state");
        t0 = System.nanoTime();
        qmpCmd(qmp, "{\"execute\":\"stop\"}");
        qmpCmd(qmp, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat > " + state + "\"}}");
        awaitMigrated(qmp);
        qmpSend(qmp, "{\"execute\":\"quit\"}");
        q.waitFor(30, TimeUnit.SECONDS);
        add(bare, "park (Berth: RAM written out after the last run; fsync, digests)", ms(t0));
        qmp.close();
        add(bare, "state on disk after park, MiB", SnapshotWriter.allocatedBytes(List.of(state, ram, disk)) / 1048576.0);
        add(bare, "  of which device state file, MiB", Files.size(state) / 1048576.0);

        // resume: same command line + -incoming defer, then migrate-incoming "exec:cat FILE"
        t0 = System.nanoTime();
        List<String> ra = bareArgs(dir, ram, true, disk);
        ra.addAll(List.of("-S", "-incoming", "defer"));
        q = spawn(ra);
        Map<String, Double> phases = incoming(dir.resolve("q.sock"), state);
        long a0 = System.nanoTime();
        agent = connect(dir.resolve("a.sock"));
        hello(agent);
        double helloMs = ms(a0);
        a0 = System.nanoTime();
        execTrue(agent, 1);
        double execMs = ms(a0);
        add(bare, "resume to first exec", ms(t0));
        phases.forEach((k, v) -> add(bare, "  resume phase: " + k + ", ms", v));
        add(bare, "  resume phase: agent HELLO, ms", helloMs);
        add(bare, "  resume phase: first exec, ms", execMs);
        agent.close();
        q.destroyForcibly().waitFor();

        // fork: qcow2 overlay on the snapshot disk, snapshot RAM mapped share=off
        Path fdir = dir.resolve("fork");
        Files.createDirectories(fdir);
        t0 = System.nanoTime();
        new ProcessBuilder("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", snap.resolve("data.qcow2").toString(),
                fdir.resolve("data.qcow2").toString()).start().waitFor();
        List<String> fa = bareArgs(fdir, snap.resolve("ram"), false, fdir.resolve("data.qcow2"));
        fa.addAll(List.of("-S", "-incoming", "defer"));
        q = spawn(fa);
        incoming(fdir.resolve("q.sock"), snap.resolve("state")); // phases of the resume only
        agent = connect(fdir.resolve("a.sock"));
        hello(agent);
        execTrue(agent, 1);
        add(bare, "fork to first exec", ms(t0));
        add(bare, "fork's own state on disk, MiB", SnapshotWriter.allocatedBytes(List.of(fdir.resolve("data.qcow2"))) / 1048576.0);
        agent.close();
        q.destroyForcibly().waitFor();

        // reference: a classic full migration (RAM in the stream, no memory file)
        if (i == 0) {
            List<String> ca = new ArrayList<>(bareArgs(dir, ram, true, disk));
            int o = ca.indexOf("-object");
            ca.set(o + 1, "memory-backend-ram,id=mem,size=" + memMiB + "M");
            Path cdisk = dir.resolve("c.qcow2");
            ColdBoot.createDataDisk(cdisk, 1024);
            ca.set(ca.indexOf("file=" + disk + ",if=none,id=data,format=qcow2"), "file=" + cdisk + ",if=none,id=data,format=qcow2");
            q = spawn(ca);
            agent = connect(dir.resolve("a.sock"));
            hello(agent);
            execTrue(agent, 1);
            agent.close();
            qmp = connect(dir.resolve("q.sock"));
            qmpLine(qmp);
            qmpCmd(qmp, "{\"execute\":\"qmp_capabilities\"}");
            t0 = System.nanoTime();
            qmpCmd(qmp, "{\"execute\":\"stop\"}");
            qmpCmd(qmp, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat > " + dir.resolve("full") + "\"}}");
            awaitMigrated(qmp);
            add(bare, "reference: classic full-RAM save, ms", ms(t0));
            add(bare, "reference: classic full-RAM state file, MiB", Files.size(dir.resolve("full")) / 1048576.0);
            qmpSend(qmp, "{\"execute\":\"quit\"}");
            q.waitFor(30, TimeUnit.SECONDS);
            qmp.close();
        }
        ImageBuilder.deleteTree(dir);
    }

    static final String IGNORE_SHARED = "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
            + "[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}";

    /** The restore command: capability, then {@code migrate-incoming "exec:cat FILE"}; QEMU starts the guest when done. */
    private static Map<String, Double> incoming(Path qmpSock, Path state) throws IOException {
        Map<String, Double> phases = new LinkedHashMap<>();
        long t = System.nanoTime();
        try (SocketChannel qmp = connect(qmpSock)) {
            qmpLine(qmp);
            phases.put("QEMU start to QMP", ms(t));
            t = System.nanoTime();
            qmpCmd(qmp, "{\"execute\":\"qmp_capabilities\"}");
            qmpCmd(qmp, IGNORE_SHARED);
            phases.put("QMP set-up", ms(t));
            t = System.nanoTime();
            qmpCmd(qmp, "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"exec:cat " + state + "\"}}");
            // Connect to the agent only once the device state is loaded: a connection made earlier is overwritten
            // by the saved "host disconnected" port state and the guest never learns that a host is there.
            awaitMigrated(qmp);
            phases.put("load device state", ms(t));
            t = System.nanoTime();
            qmpCmd(qmp, "{\"execute\":\"cont\"}");
            phases.put("cont", ms(t));
        }
        return phases;
    }

    private static SocketChannel connect(Path sock) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return SocketChannel.open(UnixDomainSocketAddress.of(sock));
            } catch (IOException e) {
                if (System.nanoTime() > deadline) throw e;
                QmpClient.pollPause(2);
            }
        }
    }

    private static void frame(SocketChannel ch, int type, int chan, byte[] payload) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(9 + payload.length);
        b.putInt(5 + payload.length).put((byte) type).putInt(chan).put(payload).flip();
        while (b.hasRemaining()) ch.write(b);
    }

    /** Reads frames until one of {@code type} on {@code chan}; returns its payload. */
    private static byte[] await(SocketChannel ch, int type, int chan) throws IOException {
        InputStream in = Channels.newInputStream(ch);
        while (true) {
            byte[] h = in.readNBytes(9);
            if (h.length < 9) throw new IOException("agent closed");
            ByteBuffer hb = ByteBuffer.wrap(h);
            int len = hb.getInt();
            if (len < 5 || len > 5 + (1 << 20)) throw new IOException("bad frame length " + len);
            int t = hb.get() & 0xff;
            int c = hb.getInt();
            byte[] p = in.readNBytes(len - 5);
            if (t == type && c == chan) return p;
        }
    }

    private static byte[] str(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + b.length).putInt(b.length).put(b).array();
    }

    private static void hello(SocketChannel ch) throws IOException {
        byte[] name = str("bench");
        frame(ch, 0x01, 0, ByteBuffer.allocate(6 + name.length).putShort((short) 1).putInt(0xF).put(name).array());
        await(ch, 0x01, 0);
    }

    private static void execTrue(SocketChannel ch, int chan) throws IOException {
        byte[] cwd = str("/");
        byte[] arg = str("/bin/true");
        ByteBuffer p = ByteBuffer.allocate(8 + cwd.length + 4 + arg.length + 4);
        p.putInt(0).putInt(0).put(cwd).putInt(1).put(arg).putInt(0);
        frame(ch, 0x10, chan, p.array());
        await(ch, 0x16, chan);
    }

    private static void qmpSend(SocketChannel ch, String json) throws IOException {
        ByteBuffer b = ByteBuffer.wrap((json + "\n").getBytes(StandardCharsets.UTF_8));
        while (b.hasRemaining()) ch.write(b);
    }

    private static String qmpLine(SocketChannel ch) throws IOException {
        StringBuilder sb = new StringBuilder();
        ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            one.clear();
            if (ch.read(one) < 0) throw new IOException("QMP closed");
            char c = (char) one.get(0);
            if (c == '\n') return sb.toString();
            sb.append(c);
        }
    }

    /** Sends a command and skips events until its answer. */
    private static String qmpCmd(SocketChannel ch, String json) throws IOException {
        qmpSend(ch, json);
        while (true) {
            String l = qmpLine(ch);
            if (l.contains("\"error\"")) throw new IOException("QMP: " + l);
            if (l.contains("\"return\"")) return l;
        }
    }

    private static void awaitMigrated(SocketChannel qmp) throws IOException {
        long sleep = 1;
        while (true) {
            String r = qmpCmd(qmp, "{\"execute\":\"query-migrate\"}");
            if (r.contains("\"completed\"")) return;
            if (r.contains("\"failed\"")) throw new IOException("migration failed: " + r);
            QmpClient.pollPause(sleep);
            sleep = Math.min(sleep * 2, 20);
        }
    }

    // ---------------------------------------------------------------- report

    private static double median(List<Double> v) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(a);
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    private void print() {
        System.out.printf("%n%-44s %14s %14s %8s%n", "median (ms unless MiB)", "Berth", "bare QEMU", "ratio");
        List<String> keys = new ArrayList<>(berth.keySet());
        for (String k : bare.keySet()) if (!keys.contains(k)) keys.add(k);
        for (String k : keys) {
            List<Double> b = berth.get(k);
            List<Double> q = bare.get(k);
            String bs = b == null ? "-" : String.format("%.1f", median(b));
            String qs = q == null ? "-" : String.format("%.1f", median(q));
            String ratio = b == null || q == null || median(q) == 0 ? "" : String.format("%.2f", median(b) / median(q));
            System.out.printf("%-44s %14s %14s %8s%n", k, bs, qs, ratio);
        }
        System.out.println("\nall samples: Berth " + berth + "\n             bare  " + bare);
    }
}
