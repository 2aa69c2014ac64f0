package dev.berth.engine.namespace;

import dev.berth.engine.spi.SandboxException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A user namespace with a workspace's whole id range mapped (0..count-1 inside = first..first+count-1 on the host),
 * made before bubblewrap starts and entered by it ({@code bwrap --userns FD}). Bubblewrap itself, unprivileged, can
 * map only its own id; the range needs root's write of {@code uid_map}/{@code gid_map} (what {@code newuidmap} does
 * for rootless containers), so the server makes the namespace and bubblewrap joins it.
 *
 * <p>A holder process ({@code unshare --user}) is started as the range's first id, so that id owns the namespace and
 * bubblewrap, running as it, may join it. Once its maps are written the holder execs again (its capabilities in the
 * namespace come with an exec as its root) and sets {@code user.max_user_namespaces} to 0 in it: nothing inside can
 * make a nested user namespace ({@code bwrap --disable-userns}, which cannot be combined with {@code --userns}). The
 * holder is killed once the sandbox holds the namespace. Not thread-safe; one per sandbox start.
 */
final class UserNamespace implements AutoCloseable {
    private static final long READY_SECONDS = 10;
    private final Process holder;

    private UserNamespace(Process holder) { this.holder = holder; }

    /** Makes the namespace: the holder as {@code first}, the maps written, nested user namespaces refused. */
    static UserNamespace create(int first, int count) throws SandboxException {
        List<String> cmd = List.of("setpriv", "--reuid=" + first, "--regid=" + first, "--clear-groups", "--inh-caps=-all",
                "unshare", "--user", "/bin/sh", "-c",
                "echo mapped?; read go; exec /bin/sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && echo ready && exec sleep 2147483647'");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().clear();
        pb.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        pb.directory(new java.io.File("/"));
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new SandboxException("making the workspace's user namespace failed: " + e.getMessage(), e);
        }
        UserNamespace ns = new UserNamespace(p);
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.US_ASCII));
            ns.expect(out, "mapped?");
            Path proc = Path.of("/proc", Long.toString(p.pid()));
            String map = "0 " + first + " " + count + "\n";
            Files.writeString(proc.resolve("uid_map"), map);
            Files.writeString(proc.resolve("gid_map"), map);
            OutputStream in = p.getOutputStream();
            in.write('\n');
            in.flush();
            ns.expect(out, "ready");
            return ns;
        } catch (IOException | SandboxException | RuntimeException e) {
            ns.close();
            throw e instanceof SandboxException se ? se
                    : new SandboxException("mapping the workspace's ids " + first + "+" + count + " failed: " + e.getMessage(), e);
        }
    }

    /** The holder's pid: bubblewrap opens {@code /proc/PID/ns/user} to join the namespace. */
    long pid() { return holder.pid(); }

    private void expect(BufferedReader out, String line) throws SandboxException {
        CompletableFuture<String> read = CompletableFuture.supplyAsync(() -> {
            try {
                return out.readLine();
            } catch (IOException e) {
                return null;
            }
        }, Thread::startVirtualThread);
        String got;
        try {
            got = read.get(READY_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new SandboxException("the workspace's user namespace was not ready within " + READY_SECONDS + " s (waiting for '" + line + "')");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException("interrupted while making the workspace's user namespace");
        } catch (ExecutionException e) {
            got = null;
        }
        if (!line.equals(got)) {
            throw new SandboxException("making the workspace's user namespace failed: the holder said '" + got + "' instead of '" + line + "'"
                    + (holder.isAlive() ? "" : " and exited with " + holder.exitValue()));
        }
    }

    /** Kills the holder; the namespace lives on as long as the sandbox is in it. */
    @Override
    public void close() {
        holder.destroyForcibly();
        try {
            holder.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
