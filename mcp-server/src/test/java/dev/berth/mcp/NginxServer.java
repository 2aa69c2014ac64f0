package dev.berth.mcp;

import dev.berth.engine.Await;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A real nginx (Debian's, installed by scripts/install-deps.sh) on 127.0.0.1 with a configuration of the test's own:
 * TLS with a certificate from the test CA, static trees (a PyPI Simple index, a Maven repository) or
 * {@code git http-backend} behind fcgiwrap. Runs in the foreground as a child of the test (its own prefix, logs and
 * pid file under {@code dir}); {@link #close} stops it and the fcgiwrap it started.
 */
final class NginxServer implements AutoCloseable {
    static final Path NGINX = Path.of("/usr/sbin/nginx");
    static final Path FCGIWRAP = Path.of("/usr/sbin/fcgiwrap");

    final Path dir;
    final int port;
    private final Process nginx;
    private final Process fcgiwrap;

    private NginxServer(Path dir, int port, Process nginx, Process fcgiwrap) {
        this.dir = dir;
        this.port = port;
        this.nginx = nginx;
        this.fcgiwrap = fcgiwrap;
    }

    /** Whether something accepts connections on loopback {@code port} (a server started in the background is up). */
    static boolean listening(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }

    static void requireInstalled() {
        if (!Files.isExecutable(NGINX) || !Files.isExecutable(FCGIWRAP)) {
            throw new IllegalStateException("nginx and fcgiwrap are needed (Debian packages nginx-light, fcgiwrap): run scripts/install-deps.sh");
        }
    }

    /**
     * Starts nginx serving {@code locations} (nginx syntax, inside one TLS server block for {@code localhost}) with
     * {@code cert}/{@code key}. {@code withFcgi}: also starts fcgiwrap on {@code dir/fcgiwrap.sock}.
     */
    static NginxServer start(Path dir, Path cert, Path key, String locations, boolean withFcgi) throws Exception {
        requireInstalled();
        Files.createDirectories(dir.resolve("logs"));
        Files.createDirectories(dir.resolve("tmp"));
        Process fcgi = null;
        if (withFcgi) {
            fcgi = new ProcessBuilder(FCGIWRAP.toString(), "-c", "4", "-s", "unix:" + dir.resolve("fcgiwrap.sock"))
                    .redirectErrorStream(true).redirectOutput(dir.resolve("logs/fcgiwrap.log").toFile()).start();
            Process f = fcgi;
            Path sock = dir.resolve("fcgiwrap.sock");
            if (!Await.within(Duration.ofSeconds(10), () -> Files.exists(sock) || !f.isAlive()) || !Files.exists(sock)) {
                throw new IOException("fcgiwrap did not create its socket: " + Files.readString(dir.resolve("logs/fcgiwrap.log")));
            }
        }
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        boolean root = "root".equals(System.getProperty("user.name"));
        String conf = """
                %s
                worker_processes 1;
                pid %s;
                error_log %s warn;
                events { worker_connections 256; }
                http {
                  access_log %s;
                  client_body_temp_path %s/body; proxy_temp_path %s/proxy; fastcgi_temp_path %s/fastcgi;
                  uwsgi_temp_path %s/uwsgi; scgi_temp_path %s/scgi;
                  types { application/json json; application/xml xml pom; application/octet-stream tgz whl gz jar; text/html html; }
                  default_type application/octet-stream;
                  server {
                    listen 127.0.0.1:%d ssl;
                    server_name localhost;
                    ssl_certificate %s;
                    ssl_certificate_key %s;
                    client_max_body_size 0;
                %s
                  }
                }
                """.formatted(root ? "user root root;" : "", dir.resolve("nginx.pid"), dir.resolve("logs/error.log"),
                dir.resolve("logs/access.log"), dir.resolve("tmp"), dir.resolve("tmp"), dir.resolve("tmp"), dir.resolve("tmp"),
                dir.resolve("tmp"), port, cert, key, locations);
        Path confFile = dir.resolve("nginx.conf");
        Files.writeString(confFile, conf);
        List<String> cmd = new ArrayList<>(List.of(NGINX.toString(), "-p", dir.toString(), "-c", confFile.toString(),
                "-e", dir.resolve("logs/error.log").toString(), "-g", "daemon off;"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("logs/nginx.out").toFile()).start();
        if (!Await.within(Duration.ofSeconds(20), () -> listening(port) || !p.isAlive()) || !p.isAlive()) {
            p.destroyForcibly();
            if (fcgi != null) fcgi.destroyForcibly();
            throw new IOException("nginx did not start: " + Files.readString(dir.resolve("logs/nginx.out"))
                    + (Files.exists(dir.resolve("logs/error.log")) ? Files.readString(dir.resolve("logs/error.log")) : ""));
        }
        return new NginxServer(dir, port, p, fcgi);
    }

    /** The access log so far (each request nginx served). */
    String accessLog() throws IOException {
        Path log = dir.resolve("logs/access.log");
        return Files.exists(log) ? Files.readString(log) : "";
    }

    @Override
    public void close() {
        // nginx's master stops its worker on TERM; both are ours (children of this test)
        nginx.descendants().forEach(ProcessHandle::destroy);
        nginx.destroy();
        if (fcgiwrap != null) {
            fcgiwrap.descendants().forEach(ProcessHandle::destroy);
            fcgiwrap.destroy();
        }
        try {
            nginx.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
