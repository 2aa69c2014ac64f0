package dev.berth.engine.image;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Real OCI tooling for tests: a tiny image made with Debian's {@code umoci} from a busybox root tree (two layers,
 * the second deleting a file of the first, so it carries a whiteout), copied with {@code skopeo} into a docker
 * archive or a real registry (Debian's {@code docker-registry}, started on a free loopback port with its storage in
 * a temporary directory). Nothing outside this machine is used.
 */
public final class OciFixture implements AutoCloseable {
    public static final String TAG = "v1";
    public static final String MARKER = "berth-oci-test-image";
    public static final int APP_UID = 1234;
    public static final int APP_GID = 2345;
    private final Path dir;
    private Process registry;
    private int registryPort;

    public OciFixture(Path dir) { this.dir = dir; }

    /** Whether umoci, skopeo and docker-registry are installed (scripts/install-deps.sh installs them). */
    public static String missingTools() {
        List<String> missing = new ArrayList<>();
        for (String t : List.of("umoci", "skopeo", "docker-registry", "busybox")) {
            boolean found = false;
            for (String p : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) found |= Files.isExecutable(Path.of(p, t));
            if (!found) missing.add(t);
        }
        return missing.isEmpty() ? null : "missing " + missing + ": run scripts/install-deps.sh";
    }

    /**
     * An OCI layout at {@code dir/layout} with image {@code :v1}: static busybox as /bin/sh and a few applets,
     * /etc/os-release naming {@link #MARKER}, /srv/app/hello.txt, config Env GREETING and WorkingDir /srv/app.
     */
    /** The image's own /etc/hosts: one entry, no localhost (workspaces get theirs added). */
    public static final String HOSTS = "10.1.2.3\timage-db\n";

    public Path busyboxLayout() throws IOException {
        return busyboxLayout(null);
    }

    /** Like {@link #busyboxLayout()}, with a copy of {@code payload} (a host directory) at /opt/payload in layer 1. */
    public Path busyboxLayout(Path payload) throws IOException {
        return busyboxLayout(payload, "0");
    }

    /**
     * Like {@link #busyboxLayout(Path)}, with config {@code User} = {@code user}; /etc/passwd also names
     * {@code app} (uid {@value #APP_UID}, gid {@value #APP_GID}) and /etc/group {@code app} and {@code staff} (gid 50).
     */
    public Path busyboxLayout(Path payload, String user) throws IOException {
        Path layout = dir.resolve("layout");
        Path bundle = dir.resolve("bundle");
        run("umoci", "init", "--layout", layout.toString());
        run("umoci", "new", "--image", layout + ":" + TAG);
        run("umoci", "unpack", "--image", layout + ":" + TAG, bundle.toString());
        Path root = bundle.resolve("rootfs");
        Files.createDirectories(root.resolve("bin"));
        Files.copy(Path.of("/bin/busybox").toRealPath(), root.resolve("bin/busybox"));
        run("chmod", "0755", root.resolve("bin/busybox").toString());
        for (String applet : List.of("sh", "ls", "cat", "echo", "env", "pwd", "id", "mkdir", "touch", "rm", "test", "grep", "stat", "sleep", "true", "wc", "head", "hostname", "wget")) {
            Files.createSymbolicLink(root.resolve("bin").resolve(applet), Path.of("busybox"));
        }
        Files.createDirectories(root.resolve("etc"));
        Files.writeString(root.resolve("etc/os-release"), "ID=" + MARKER + "\n");
        Files.writeString(root.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\napp:x:" + APP_UID + ":" + APP_GID
                + ":app:/home/app:/bin/sh\n");
        Files.writeString(root.resolve("etc/group"), "root:x:0:\nstaff:x:50:\napp:x:" + APP_GID + ":\n");
        Files.writeString(root.resolve("etc/removed-later"), "lower layer\n");
        Files.writeString(root.resolve("etc/hosts"), HOSTS); // the image's own entry, without localhost
        Files.createDirectories(root.resolve("srv/app"));
        Files.writeString(root.resolve("srv/app/hello.txt"), "hello from the image\n");
        Files.createDirectories(root.resolve("var/lib/tiny"));
        Files.writeString(root.resolve("var/lib/tiny/state"), "seeded\n");
        if (payload != null) {
            Files.createDirectories(root.resolve("opt"));
            run("cp", "-a", payload.toString(), root.resolve("opt/payload").toString());
        }
        run("umoci", "repack", "--refresh-bundle", "--image", layout + ":" + TAG, bundle.toString());
        // a second layer that deletes a file of the first: umoci writes the whiteout
        Files.delete(root.resolve("etc/removed-later"));
        Files.writeString(root.resolve("etc/second-layer"), "upper layer\n");
        run("umoci", "repack", "--image", layout + ":" + TAG, bundle.toString());
        run("umoci", "config", "--image", layout + ":" + TAG, "--config.env", "GREETING=hello from the config",
                "--config.workingdir", "/srv/app", "--config.user", user);
        return layout;
    }

    /** The layout's image as a {@code docker save}-format archive, written by skopeo. */
    public Path dockerArchive(Path layout) throws IOException {
        Path out = dir.resolve("image.tar");
        run("skopeo", "copy", "--quiet", "oci:" + layout + ":" + TAG, "docker-archive:" + out + ":tiny:" + TAG);
        return out;
    }

    /** Starts docker-registry on a free loopback port and returns {@code 127.0.0.1:PORT}; waits until /v2/ answers. */
    public String startRegistry() throws IOException, InterruptedException {
        return startRegistry("");
    }

    /** Like {@link #startRegistry()}, with more of the registry's YAML config (an {@code auth:} section). */
    public String startRegistry(String extraYaml) throws IOException, InterruptedException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            registryPort = s.getLocalPort();
        }
        Path storage = Files.createDirectories(dir.resolve("registry-storage"));
        Path config = dir.resolve("registry.yml");
        Files.writeString(config, "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: " + storage
                + "\nhttp:\n  addr: 127.0.0.1:" + registryPort + "\n" + extraYaml);
        registry = new ProcessBuilder("docker-registry", "serve", config.toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("registry.log").toFile()).start();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            if (!registry.isAlive()) throw new IOException("docker-registry exited: " + Files.readString(dir.resolve("registry.log")));
            try {
                HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + registryPort + "/v2/").toURL().openConnection();
                c.setConnectTimeout(500);
                int code = c.getResponseCode();
                if (code == 200 || code == 401) return "127.0.0.1:" + registryPort; // 401: up, and wants a token
            } catch (IOException notYet) {
                // not listening yet
            }
            registry.waitFor(50, TimeUnit.MILLISECONDS); // returns at once if it dies
        }
        throw new IOException("docker-registry did not answer within 30 s");
    }

    /** Pushes the layout's image to the registry as {@code REPO:v1} with skopeo (plain HTTP, loopback). */
    public String push(Path layout, String registryHost, String repo) throws IOException {
        return push(layout, registryHost, repo, null);
    }

    /** Like {@link #push(Path, String, String)}, logging in as {@code creds} ({@code user:password}). */
    public String push(Path layout, String registryHost, String repo, String creds) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("skopeo", "copy", "--quiet", "--dest-tls-verify=false"));
        if (creds != null) cmd.addAll(List.of("--dest-creds", creds));
        cmd.addAll(List.of("oci:" + layout + ":" + TAG, "docker://" + registryHost + "/" + repo + ":" + TAG));
        run(cmd.toArray(String[]::new));
        return registryHost + "/" + repo + ":" + TAG;
    }

    public static String run(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (p.waitFor() != 0) throw new IOException(String.join(" ", cmd) + " failed: " + out);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        return out;
    }

    @Override
    public void close() {
        if (registry != null) {
            registry.destroy();
            try {
                if (!registry.waitFor(10, TimeUnit.SECONDS)) registry.destroyForcibly();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
