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
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code berth image import PATH[:TAG] --name NAME}, {@code berth image pull REF --name NAME}, {@code berth image
 * list}, {@code berth image rm NAME}, {@code berth image gc}: the home's image store, with or without a server
 * running (the store locks itself; in-use checks read the workspace and snapshot records on disk). Exit status: 0
 * done, 1 refused or failed (the reason on stderr), 2 usage.
 */
@Command(name = "image", mixinStandardHelpOptions = true, description = "The home's image store: images that open_workspace {image} names.",
        subcommands = {ImageCommand.Import.class, ImageCommand.Pull.class, ImageBuildCommand.class, ImageCommand.ListImages.class,
                ImageCommand.Default.class, ImageCommand.Rm.class, ImageCommand.Gc.class})
final class ImageCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw Cli.usage(spec, "image needs a subcommand: import, pull, build, list, default, rm or gc");
    }

    /** What a subcommand was given; unset fields are null. */
    static final class Args {
        @Option(names = "--home", paramLabel = "DIR", description = "the Berth home (default: $BERTH_HOME, /var/lib/berth as root,"
                + " else ~/.local/share/berth)")
        Path home;
        String name;
        String user;
        boolean plainHttp;
        Long maxMiB;
        final List<String> positional = new ArrayList<>();
    }

    /** The subcommands' shared shape: options into {@link Args}, then {@link ImageCommand#run}. */
    abstract static class Sub implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        Args a;

        /** Copies the subcommand's own options into {@link #a}. */
        void fill() throws UsageException {}

        @Override
        public Integer call() {
            try {
                fill();
                return run(spec.name(), a, Cli.of(spec).out, Cli.of(spec).err);
            } catch (UsageException e) {
                throw Cli.usage(spec, e.getMessage());
            }
        }
    }

    /** The import and pull options: the name, and the unpacked size limit. */
    abstract static class Fetch extends Sub {
        @Option(names = "--name", paramLabel = "NAME", description = "the name open_workspace {image} uses (required)")
        String name;
        @Option(names = "--max-mib", paramLabel = "N", description = "unpacked size limit in MiB")
        String maxMiB;
        @Parameters(paramLabel = "SOURCE", arity = "0..*", hidden = true)
        List<String> positional = new ArrayList<>();

        @Override
        void fill() throws UsageException {
            a.name = name;
            a.positional.addAll(positional);
            if (maxMiB != null) {
                try {
                    a.maxMiB = Long.parseLong(maxMiB);
                } catch (NumberFormatException e) {
                    throw new UsageException("--max-mib needs a number of MiB");
                }
                if (a.maxMiB < 1) throw new UsageException("--max-mib must be at least 1");
            }
        }
    }

    @Command(name = "import", mixinStandardHelpOptions = true, customSynopsis = "berth image import PATH[:TAG] --name NAME [--max-mib N] [--home DIR]",
            description = "Import an OCI image layout (PATH or PATH:TAG) or a docker/podman save archive.")
    static final class Import extends Fetch {}

    @Command(name = "pull", mixinStandardHelpOptions = true,
            customSynopsis = {"berth image pull HOST[:PORT]/REPO[:TAG|@DIGEST] --name NAME", "      [--user U] [--unsafe-plain-http] [--max-mib N] [--home DIR]"},
            description = "Pull an image from an OCI registry (password or token in BERTH_REGISTRY_PASSWORD).")
    static final class Pull extends Fetch {
        @Option(names = "--user", paramLabel = "U", description = "registry user (the password or token in BERTH_REGISTRY_PASSWORD)")
        String user;
        @Option(names = "--unsafe-plain-http", description = "talk to the registry over plain HTTP (no TLS)")
        boolean plainHttp;

        @Override
        void fill() throws UsageException {
            super.fill();
            a.user = user;
            a.plainHttp = plainHttp;
        }
    }

    /** A subcommand that takes names or nothing. */
    abstract static class Named extends Sub {
        @Parameters(paramLabel = "NAME", arity = "0..*", hidden = true)
        List<String> positional = new ArrayList<>();

        @Override
        void fill() { a.positional.addAll(positional); }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the named images.")
    static final class ListImages extends Named {}

    @Command(name = "default", mixinStandardHelpOptions = true, customSynopsis = "berth image default NAME|built-in [--home DIR]",
            description = "The image workspaces that name none run on (built-in: the levels' own images).")
    static final class Default extends Named {}

    @Command(name = "rm", mixinStandardHelpOptions = true, customSynopsis = "berth image rm NAME [--home DIR]",
            description = "Remove a name (and its content when no other name points at it); refuses images in use.")
    static final class Rm extends Named {}

    @Command(name = "gc", mixinStandardHelpOptions = true, description = "Delete unnamed, unused images.")
    static final class Gc extends Named {}

    static int run(String sub, Args a, PrintStream out, PrintStream err) throws UsageException {
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
                        throw new UsageException("--user needs the password (or token) in BERTH_REGISTRY_PASSWORD");
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
                default -> throw new UsageException("unknown image subcommand '" + sub + "'; use import, pull, list, default, rm or gc");
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

    private static String needName(Args a) throws UsageException {
        if (a.name == null) throw new UsageException("--name NAME is needed: the name open_workspace {image} uses");
        return a.name;
    }

    private static String one(Args a, String what) throws UsageException {
        if (a.positional.size() != 1) throw new UsageException(what);
        return a.positional.get(0);
    }

    private static void none(Args a, String sub) throws UsageException {
        if (!a.positional.isEmpty()) throw new UsageException(sub + " takes no arguments, got " + a.positional);
    }
}
