package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The read-only {@code /etc} every namespace workspace sees: a curated copy of what programs need from the host's
 * /etc (library paths, certificates, alternatives symlinks) and fresh account files. Host secrets (shadow, ssh keys,
 * machine-id, sudoers, package-manager credentials) are never copied. Built once per Berth home, atomically.
 */
public final class BaseEtc {
    public static final int VERSION = 1;
    private static final List<String> COPIED = List.of("alternatives", "ca-certificates", "ca-certificates.conf", "ssl",
            "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf", "protocols",
            "services", "mime.types", "profile", "profile.d", "bash.bashrc", "inputrc", "debian_version", "os-release",
            "gai.conf", "host.conf", "magic", "magic.mime", "python3", "python3.11", "perl", "login.defs", "environment",
            "manpath.config", "locale.alias");

    private BaseEtc() {}

    public static synchronized Path prepare(Path images) throws IOException {
        Files.createDirectories(images);
        Files.setPosixFilePermissions(images, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Path dir = images.resolve("namespace-etc-v" + VERSION);
        if (Files.isDirectory(dir)) return dir;
        Path tmp = images.resolve(".namespace-etc-" + ProcessHandle.current().pid());
        Files.createDirectories(tmp);
        for (String name : COPIED) {
            Path src = Path.of("/etc", name);
            if (Files.exists(src, LinkOption.NOFOLLOW_LINKS)) {
                HostCommand.exec("cp", "-a", src.toString(), tmp.resolve(name).toString());
            }
        }
        Files.writeString(tmp.resolve("passwd"), "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
        Files.writeString(tmp.resolve("group"), "root:x:0:\nnogroup:x:65534:\n");
        Files.writeString(tmp.resolve("hosts"), "127.0.0.1 localhost workspace\n::1 localhost ip6-localhost ip6-loopback\n");
        Files.writeString(tmp.resolve("hostname"), "workspace\n");
        // no resolv.conf: there is no DNS inside a workspace; names are resolved by the egress proxy
        HostCommand.exec("chmod", "-R", "a+rX", tmp.toString());
        try {
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            if (!Files.isDirectory(dir)) throw e;
            HostCommand.exec("rm", "-rf", tmp.toString()); // another process won the race
        }
        return dir;
    }
}
