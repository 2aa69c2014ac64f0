package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The read-only {@code /etc} every namespace workspace sees: a curated copy of what programs need from the host's
 * /etc (library paths, certificates, alternatives symlinks), fresh account files and the names every workspace sees
 * ({@link GuestNames}: hosts, hostname, resolv.conf, nsswitch.conf). Host secrets (shadow, ssh keys, machine-id,
 * sudoers, package-manager credentials) and the host's resolver setup are never copied. Built once per Berth home and
 * {@link #VERSION}, atomically.
 */
public final class BaseEtc {
    public static final int VERSION = 3;
    private static final List<String> COPIED = List.of("alternatives", "ca-certificates", "ca-certificates.conf", "ssl",
            "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "protocols",
            "services", "mime.types", "profile", "profile.d", "bash.bashrc", "inputrc", "debian_version", "os-release",
            "gai.conf", "host.conf", "magic", "magic.mime", "python3", "python3.11", "perl", "login.defs", "environment",
            "manpath.config", "locale.alias",
            // accounts and privilege changes inside (useradd, su, runuser: issue 32); a workspace gets its own writable copy
            "pam.conf", "pam.d", "security", "skel", "adduser.conf", "deluser.conf", "shells");

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
        Files.writeString(tmp.resolve("group"), "root:x:0:\nshadow:x:42:\nusers:x:100:\nnogroup:x:65534:\n");
        // fresh shadow files (never the host's): no password for anyone; root reaches every user without one (pam_rootok)
        Files.writeString(tmp.resolve("shadow"), "root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n");
        Files.writeString(tmp.resolve("gshadow"), "root:*::\nshadow:*::\nusers:*::\nnogroup:*::\n");
        // the names every workspace sees (GuestNames); each workspace's own writable hosts file is bound over this one
        Files.writeString(tmp.resolve("hosts"), GuestNames.DEFAULT_HOSTS);
        Files.writeString(tmp.resolve("hostname"), GuestNames.HOSTNAME_FILE);
        Files.writeString(tmp.resolve("resolv.conf"), GuestNames.RESOLV_CONF);
        Files.writeString(tmp.resolve("nsswitch.conf"), GuestNames.NSSWITCH_CONF);
        HostCommand.exec("chmod", "-R", "a+rX", tmp.toString());
        HostCommand.exec("chmod", "0640", tmp.resolve("shadow").toString(), tmp.resolve("gshadow").toString());
        try {
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            if (!Files.isDirectory(dir)) throw e;
            HostCommand.exec("rm", "-rf", tmp.toString()); // another process won the race
        }
        return dir;
    }
}
