package dev.berth.mcp.cli;

import dev.berth.engine.ImageUsage;
import dev.berth.engine.image.ImageException;
import dev.berth.engine.image.ImageInfo;
import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.RegistryClient;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code berth image import PATH[:TAG] --name NAME}, {@code berth image pull REF --name NAME}, {@code berth image
 * list}, {@code berth image rm NAME}, {@code berth image gc}: the home's image store, with or without a server
 * running (the store locks itself; in-use checks read the workspace and snapshot records on disk). Exit status: 0
 * done, 1 refused or failed (the reason on stderr), 2 usage.
 */
final class ImageCommand {
    private ImageCommand() {}

    static final class Args {
        Path home;
        String name;
        String user;
        boolean plainHttp;
        Long maxMiB;
        final List<String> positional = new ArrayList<>();
    }

    static int run(List<String> argv, Backend backend, PrintStream out, PrintStream err) throws Options.UsageException {
        if (argv.isEmpty()) throw new Options.UsageException("image needs a subcommand: import, pull, build, list, default, rm or gc");
        String sub = argv.get(0);
        if (sub.equals("build")) return ImageBuildCommand.run(argv.subList(1, argv.size()), backend, out, err);
        Args a = parse(argv.subList(1, argv.size()));
        Path home = (a.home != null ? a.home : Options.defaultHome()).toAbsolutePath();
        ImageStore store = new ImageStore(home);
        ImportLimits limits = a.maxMiB == null ? ImportLimits.DEFAULT : new ImportLimits(ImportLimits.DEFAULT.maxLayerBytes(), a.maxMiB << 20);
        try {
            switch (sub) {
                case "import" -> {
                    String src = one(a, "import needs the path of an OCI image layout (PATH or PATH:TAG) or a docker/podman save archive");
                    ImageRecord r = store.importFrom(src, needName(a), limits, out::println);
                    report(r, out);
                }
                case "pull" -> {
                    String ref = one(a, "pull needs an image reference: HOST[:PORT]/REPOSITORY[:TAG|@DIGEST]");
                    String password = System.getenv("BERTH_REGISTRY_PASSWORD");
                    if (a.user != null && password == null) {
                        throw new Options.UsageException("--user needs the password (or token) in BERTH_REGISTRY_PASSWORD");
                    }
                    ImageRecord r = store.pull(ref, needName(a), limits, new RegistryClient.Credentials(a.user, password),
                            a.plainHttp, out::println);
                    report(r, out);
                }
                case "list" -> {
                    none(a, "list");
                    List<ImageInfo> all = store.list();
                    String dflt = store.defaultName().orElse(null);
                    if (all.isEmpty()) out.println("no images; import one with `berth image import PATH --name NAME`");
                    for (ImageInfo i : all) {
                        out.printf("%-20s %s %8.1f MiB  ext4 %7.1f MiB  %s  %s%s%n", i.name(), i.digest(), i.bytes() / 1048576.0,
                                i.baseDiskBytes() / 1048576.0, i.drivers(), i.origin(), i.name().equals(dflt) ? "  (default)" : "");
                    }
                }
                case "default" -> {
                    String name = one(a, "default needs an image name, or built-in to go back to the levels' own images");
                    store.setDefault(name.equals("built-in") ? null : name);
                    out.println(name.equals("built-in") ? "workspaces that name no image run on the levels' built-in images"
                            : "workspaces that name no image run on " + name + " (on every level; every tenant may open it)");
                }
                case "rm" -> {
                    String name = one(a, "rm needs an image name");
                    var r = store.remove(name, ImageUsage.of(home));
                    out.println("removed " + name + (r.digests().isEmpty() ? " (its content stays: another name points at it)"
                            : "; deleted " + r.digests().get(0) + ", " + (r.bytesFreed() >> 20) + " MiB freed"));
                }
                case "gc" -> {
                    none(a, "gc");
                    var r = store.gc(ImageUsage.of(home));
                    out.println("deleted " + r.digests().size() + " unnamed, unused image(s) " + r.digests() + "; "
                            + (r.bytesFreed() >> 20) + " MiB freed");
                }
                default -> throw new Options.UsageException("unknown image subcommand '" + sub + "'; use import, pull, list, default, rm or gc");
            }
            return 0;
        } catch (ImageException | IOException e) {
            err.println("berth image " + sub + ": " + e.getMessage());
            return 1;
        }
    }

    private static void report(ImageRecord r, PrintStream out) {
        out.println("digest " + r.digest() + "; drivers " + r.drivers() + "; " + r.report().summary());
        for (String l : r.report().dropped()) out.println("  dropped: " + l);
        for (String l : r.report().changed()) out.println("  changed: " + l);
        if (r.user() != null && !r.user().equals("0") && !r.user().equals("root")) {
            out.println("  note: the image's User is '" + r.user() + "': runs are that user on the namespace level, root on microvm and gvisor");
        }
    }

    private static String needName(Args a) throws Options.UsageException {
        if (a.name == null) throw new Options.UsageException("--name NAME is needed: the name open_workspace {image} uses");
        return a.name;
    }

    private static String one(Args a, String what) throws Options.UsageException {
        if (a.positional.size() != 1) throw new Options.UsageException(what);
        return a.positional.get(0);
    }

    private static void none(Args a, String sub) throws Options.UsageException {
        if (!a.positional.isEmpty()) throw new Options.UsageException(sub + " takes no arguments, got " + a.positional);
    }

    private static Args parse(List<String> argv) throws Options.UsageException {
        Args a = new Args();
        for (int i = 0; i < argv.size(); i++) {
            String s = argv.get(i);
            switch (s) {
                case "--home" -> a.home = Path.of(Options.value(argv, ++i, s));
                case "--name" -> a.name = Options.value(argv, ++i, s);
                case "--user" -> a.user = Options.value(argv, ++i, s);
                case "--unsafe-plain-http" -> a.plainHttp = true;
                case "--max-mib" -> {
                    try {
                        a.maxMiB = Long.parseLong(Options.value(argv, ++i, s));
                    } catch (NumberFormatException e) {
                        throw new Options.UsageException("--max-mib needs a number of MiB");
                    }
                    if (a.maxMiB < 1) throw new Options.UsageException("--max-mib must be at least 1");
                }
                default -> {
                    if (s.startsWith("--")) throw new Options.UsageException("unknown option '" + s + "'");
                    a.positional.add(s);
                }
            }
        }
        return a;
    }

}
