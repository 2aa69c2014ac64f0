package dev.berth.engine.gvisor;

import dev.berth.engine.host.GuestNames;
import dev.berth.engine.host.Layout;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * The OCI bundle runsc starts a workspace from: an empty read-only root with mount points (or an imported image's
 * root tree, read-only), and {@code config.json} describing the same filesystem view as the namespace driver
 * (read-only host {@code /usr} and the curated {@code /etc}, or the image's own; the workspace's writable layer, a size-capped {@code /tmp}, the agent and its socket), the agent as
 * the only process, with CAP_SYS_ADMIN to confine runs and root's ordinary capabilities for them, and the cgroup limits. Stateless.
 */
final class OciBundle {
    /** Memory the sentry and gofer need on top of the workspace's own (the cgroup covers the whole sandbox). */
    static final int OVERHEAD_MIB = 64;
    /**
     * Host tasks the sandbox needs besides the guest's. Under the ptrace platform they are not proportional to the
     * guest's tasks: the Sentry (~30 Go threads) and gofer (~30) plus one stub process per address space, pooled and
     * reused after the guest process is gone, each with a stub thread for every Sentry thread that ran in it. The
     * escape suite's shared workspace reached 188 host tasks with fewer than ten guest processes; with the earlier
     * budget of 128 (pids.max 192) the Sentry panicked in ordinary cases ("error initializing first thread: resource
     * temporarily unavailable", creating a stub): the suite's intermittent deaths.
     */
    static final int OVERHEAD_TASKS = 512;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private OciBundle() {}

    /**
     * @param cgroup the sandbox's cgroup name under {@code berth-gvisor/}: new for every start, so a sandbox that died
     *               (its memory still charged, its tasks still exiting) never shares its limits with the next one
     */
    static Path write(Path bundle, Layout layout, Path etc, Path agent, StartRequest req, String cgroup) throws IOException {
        Path rootfs = bundle.resolve("rootfs");
        for (String d : List.of("proc", "dev", "sys", "tmp", "usr", "etc", "home", "workspace", "root", "var", "run/berth")) {
            Files.createDirectories(rootfs.resolve(d));
        }
        Files.createDirectories(rootfs.resolve("usr/local"));
        if (!Files.exists(rootfs.resolve("run/berth-agent"))) Files.createFile(rootfs.resolve("run/berth-agent"));
        for (String l : List.of("bin", "lib", "lib64", "sbin")) {
            Path link = rootfs.resolve(l);
            if (!Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS) && Files.exists(Path.of("/usr", l))) {
                Files.createSymbolicLink(link, Path.of("usr", l));
            }
        }
        Path s = layout.layer();
        boolean image = layout.usesImage();
        List<Object> mounts = new ArrayList<>();
        mounts.add(mount("/proc", "proc", "proc", List.of()));
        if (req.image() == null) {
            mounts.add(mount("/usr", "bind", "/usr", List.of("rbind", "ro")));
        }
        // the workspace's own writable /etc and /home in its layer (WritableRoot): seeded from the built-in /etc or
        // the image's, with the names every workspace sees (GuestNames) and its own hosts file in it
        mounts.add(mount("/etc", "bind", s.resolve(dev.berth.engine.host.WritableRoot.ETC).toString(), List.of("rbind")));
        if (dev.berth.engine.host.WritableRoot.canMountHome(req.image())) {
            mounts.add(mount("/home", "bind", s.resolve(dev.berth.engine.host.WritableRoot.HOMES).toString(), List.of("rbind")));
        }
        mounts.add(mount("/tmp", "tmpfs", "tmpfs", List.of("size=" + Math.min(req.resources().memoryMiB(), 1024) + "m")));
        mounts.add(mount("/workspace", "bind", s.resolve("workspace").toString(), List.of("rbind")));
        mounts.add(mount("/root", "bind", s.resolve("home").toString(), List.of("rbind")));
        mounts.add(mount("/usr/local", "bind", s.resolve("usr-local").toString(), List.of("rbind")));
        mounts.add(mount("/var", "bind", s.resolve("var").toString(), List.of("rbind")));
        // /run is a small writable tmpfs, as a normal machine's (lock and pid files: adduser's /run/adduser), with
        // the agent's mount points made in it (an imported image's /run is read-only and may lack them)
        mounts.add(mount("/run", "tmpfs", "tmpfs", List.of("size=" + Math.min(req.resources().memoryMiB(), 64) + "m", "mode=755")));
        mounts.add(mount("/run/berth-agent", "bind", image ? s.resolve(".berth/berth-agent").toString() : agent.toString(), List.of("bind", "ro")));
        mounts.add(mount("/run/berth", "bind", layout.socketDir().toString(), List.of("rbind")));

        List<String> args = new ArrayList<>(List.of("/run/berth-agent", "--connect", "unix:/run/berth/agent.sock", "--isolate-runs"));
        if (req.proxyPort() > 0) args.addAll(List.of("--proxy-port", String.valueOf(req.proxyPort())));
        var runAs = req.image() == null ? null : req.image().runAs();
        // the agent keeps CAP_SYS_ADMIN to confine runs, and root's ordinary capabilities, which it hands on to them
        // (the Sentry is the boundary; what is withheld and why: RUN_CAPS in confine.c)
        List<String> caps = new ArrayList<>(List.of("CAP_SYS_ADMIN"));
        caps.addAll(dev.berth.engine.host.AgentBinary.RUN_CAPS);
        if (runAs != null) {
            // the image's User: the agent switches each run to it (and gives it /workspace, /root and what it writes)
            args.addAll(List.of("--run-as", Integer.toUnsignedString(runAs.uid()) + ":" + Integer.toUnsignedString(runAs.gid())));
        }
        Map<String, Object> process = new LinkedHashMap<>();
        process.put("terminal", false);
        process.put("user", Map.of("uid", 0, "gid", 0));
        process.put("args", args);
        process.put("env", List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
        process.put("cwd", "/workspace");
        process.put("capabilities", Map.of("bounding", caps, "effective", caps, "permitted", caps));
        // the Sentry enforces RLIMIT_NPROC for runs (they have no capabilities): the pids cgroup alone would let a
        // fork bomb exhaust the host tasks the Sentry itself needs, and the Sentry panics then (measured)
        process.put("rlimits", List.of(Map.of("type", "RLIMIT_NOFILE", "hard", 65536, "soft", 1024),
                Map.of("type", "RLIMIT_NPROC", "hard", req.resources().maxPids(), "soft", req.resources().maxPids())));

        var r = req.resources();
        Map<String, Object> linux = new LinkedHashMap<>();
        linux.put("namespaces", List.of(Map.of("type", "pid"), Map.of("type", "network"), Map.of("type", "ipc"),
                Map.of("type", "uts"), Map.of("type", "mount")));
        linux.put("cgroupsPath", "/berth-gvisor/" + cgroup);
        Map<String, Object> resources = new LinkedHashMap<>(Map.of(
                "memory", Map.of("limit", (long) (r.memoryMiB() + OVERHEAD_MIB) << 20),
                "cpu", Map.of("quota", r.vcpus() * 100_000L, "period", 100_000L),
                "pids", Map.of("limit", r.maxPids() + OVERHEAD_TASKS)));
        String ioDevice = image ? dev.berth.engine.host.BlockIoLimits.deviceOf(layout.mountPoint()) : null;
        if (ioDevice != null && r.io().any()) resources.put("blockIO", blockIo(ioDevice, r.io()));
        linux.put("resources", resources);

        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("ociVersion", "1.0.2");
        spec.put("process", process);
        // the imported image's root tree (read-only, never written), else the empty root made above
        // an imported image's root: the workspace's own writable overlay of it when the server mounted one
        // (RootOverlay: its changes in the layer, the image never written), else its tree read-only
        Path merged = dev.berth.engine.host.RootOverlay.merged(layout.runtime());
        boolean overlay = req.image() != null && dev.berth.engine.host.DiskImage.isMounted(merged);
        spec.put("root", Map.of("path", overlay ? merged.toString() : req.image() != null ? req.image().rootTree().toString() : "rootfs",
                "readonly", !overlay));
        spec.put("hostname", GuestNames.HOSTNAME);
        spec.put("mounts", mounts);
        spec.put("linux", linux);
        Files.writeString(bundle.resolve("config.json"), JSON.writeValueAsString(spec));
        return bundle;
    }

    /** OCI {@code blockIO} throttles on the device behind the workspace's disk image; runsc writes them to its blkio group. */
    private static Map<String, Object> blockIo(String device, dev.berth.engine.spi.IoLimits io) {
        String[] mm = device.split(":");
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, String> keys = Map.of("io_read_bps", "throttleReadBpsDevice", "io_write_bps", "throttleWriteBpsDevice",
                "io_read_iops", "throttleReadIOPSDevice", "io_write_iops", "throttleWriteIOPSDevice");
        for (String n : dev.berth.engine.spi.IoLimits.NAMES) {
            if (io.value(n) > 0) {
                out.put(keys.get(n), List.of(Map.of("major", Long.parseLong(mm[0]), "minor", Long.parseLong(mm[1]), "rate", io.value(n))));
            }
        }
        return out;
    }

    private static Map<String, Object> mount(String dest, String type, String source, List<String> options) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("destination", dest);
        m.put("type", type);
        m.put("source", source);
        if (!options.isEmpty()) m.put("options", options);
        return m;
    }
}
