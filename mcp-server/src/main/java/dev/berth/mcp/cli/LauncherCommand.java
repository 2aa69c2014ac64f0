package dev.berth.mcp.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code berth launcher}: installs the {@code berth} command, a small shell script that runs this jar on a Java 25+
 * runtime whatever {@code java} is first on PATH (see {@code berth-launcher.sh}), so that client configs say
 * {@code berth stdio}. Into {@code --bin-dir}, else /usr/local/bin as root, else ~/.local/bin. {@code berth setup}
 * does this first. Written to a temporary file and renamed, so a running launcher is never half-written.
 */
@Command(name = "launcher", mixinStandardHelpOptions = true,
        description = "Install only the berth launcher (a script that runs this jar on Java 25+).")
public final class LauncherCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--bin-dir", paramLabel = "DIR", description = "where to install the berth launcher (default"
            + " /usr/local/bin as root, else ~/.local/bin)")
    Path binDir;

    @Override
    public Integer call() throws Exception {
        return run(common.options(spec, null, null, null, binDir), Cli.of(spec).out);
    }

    static int run(Options opts, PrintStream out) throws IOException {
        Path jar = runningJar();
        if (jar == null) {
            out.println("berth launcher: not running from berth.jar (run `java -jar mcp-server/target/berth.jar launcher`)");
            return 1;
        }
        Path dir = opts.binDir() != null ? opts.binDir() : defaultBinDir();
        Path target = install(jar, dir);
        out.println("installed " + target + " -> " + jar);
        String path = System.getenv("PATH");
        if (path == null || !java.util.Arrays.asList(path.split(":")).contains(dir.toString())) {
            out.println("note: " + dir + " is not on PATH; add it, or name " + target + " in client configs");
        }
        return 0;
    }

    /** Writes the launcher for {@code jar} to {@code dir/berth}; returns its path. */
    static Path install(Path jar, Path dir) throws IOException {
        String template;
        try (InputStream in = LauncherCommand.class.getResourceAsStream("berth-launcher.sh")) {
            if (in == null) throw new IOException("berth-launcher.sh is missing from the jar");
            template = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (jar.toString().contains("'")) throw new IOException("the jar path must not contain a single quote: " + jar);
        Files.createDirectories(dir);
        Path target = dir.resolve("berth");
        Path tmp = Files.createTempFile(dir, ".berth-", ".tmp");
        Files.writeString(tmp, template.replace("@JAR@", jar.toString()));
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return target;
    }

    static Path defaultBinDir() {
        if ("root".equals(System.getProperty("user.name"))) return Path.of("/usr/local/bin");
        return Path.of(System.getProperty("user.home"), ".local", "bin");
    }

    /** The jar this class was loaded from, or null when it runs from classes (tests, IDE). */
    public static Path runningJar() {
        try {
            var src = LauncherCommand.class.getProtectionDomain().getCodeSource();
            if (src == null) return null;
            Path p = Path.of(src.getLocation().toURI()).toAbsolutePath();
            return p.toString().endsWith(".jar") && Files.isRegularFile(p) ? p : null;
        } catch (URISyntaxException | RuntimeException e) {
            return null;
        }
    }
}
