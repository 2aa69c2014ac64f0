package dev.berth.mcp.cli;

import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code berth doctor}: one line per isolation driver, available or not and why, and the public key that signs receipts
 * (created on first use); with {@code --egress FILE}, the egress shaping limits and the named internal hosts that file
 * lets resolve into non-public ranges. Exit 0 if any driver can run.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Say which isolation drivers this machine supports, and why not the others; print the public key that"
                + " signs receipts and audit heads. Exit 0 if any driver can run.")
final class DoctorCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Override
    public Integer call() {
        Options opts = common.options(spec, null, null, null, null);
        int code = run(opts, Cli.of(spec).backend.drivers(opts), Cli.of(spec).out);
        if (opts.egressConfig() != null) {
            try {
                egress(dev.berth.proxy.ConfigLoader.load(opts.egressConfig()), opts.egressConfig().toString(), Cli.of(spec).out);
            } catch (dev.berth.proxy.ConfigException e) {
                Cli.of(spec).out.println("egress " + opts.egressConfig() + ": " + e.getMessage());
                return 1;
            }
        }
        return code;
    }

    /** What an egress config does beyond its allowlist: how it shapes connections and bytes, and its named internal hosts. */
    static void egress(dev.berth.proxy.ProxyConfig cfg, String from, PrintStream out) {
        var s = cfg.shaping();
        out.printf("egress (%s): connection setups %d/s per workspace (burst %d), %d/s per tenant (burst %d); a setup over the rate"
                        + " waits up to %d ms for its turn, then is refused%n", from, cfg.maxConnectsPerSecond(), s.connectBurst(),
                s.maxConnectsPerSecondPerTenant(), s.connectBurstPerTenant(), s.maxDelay().toMillis());
        out.printf("egress bytes: %d per workspace, %d per tenant, refilled over %d s%n", cfg.maxBytesPerWorkspace(), s.maxBytesPerTenant(),
                cfg.quotaWindow().toSeconds());
        var internal = cfg.internalHosts().entries();
        out.println(internal.isEmpty() ? "internal hosts: none (egress internal_hosts: a named host that may resolve into a stated private range)"
                : "internal hosts (may resolve into these non-public ranges; every use is in the decision's reason and the audit):");
        for (var e : internal) out.printf("  %-40s %s  (%s)%n", e.host(), e.ranges(), e.source());
    }

    /** The I/O limits doctor asks each level about: whether they would hold, per direction. */
    static final dev.berth.engine.spi.IoLimits DOCTOR_IO = new dev.berth.engine.spi.IoLimits(10L << 20, 10L << 20, 1000, 1000);

    static int run(Options opts, List<IsolationDriver> drivers, PrintStream out) {
        boolean any = false;
        String chosen = null;
        out.println("Berth home: " + opts.home());
        for (IsolationDriver d : drivers) {
            Availability a = d.probe();
            any |= a.available();
            if (a.available() && chosen == null) chosen = d.name();
            out.printf("%-10s %-13s %s%n", d.name(), a.available() ? "available" : "unavailable", a.reason());
            out.printf("%-10s %-13s boundary: %s; park keeps memory: %s%n", "", "", d.capabilities().boundary(),
                    d.capabilities().parkKeepsMemory() ? "yes" : "no");
            // what a workspace with the default resources would get here, each limit enforced or not, and why; the
            // default asks for no I/O limit, so the I/O lines show what one would get if asked (10 MiB/s, 1000 ops/s)
            for (Limit l : d.limits(Resources.DEFAULT.withIo(DOCTOR_IO))) {
                boolean io = dev.berth.engine.spi.IoLimits.NAMES.contains(l.name());
                out.printf("%-10s %-13s limit %-6s %s %s: %s%n", "", "", l.name(),
                        io ? "(if asked)" : l.value() == 0 ? "-" : l.value() + " " + l.unit(),
                        l.enforced() ? "enforced" : "NOT enforced", l.how());
            }
        }
        // what a workspace that names no image runs on, per level: the developer image where berth setup imported it
        // (the levels that would otherwise share the host's /usr), else the level's own
        java.util.Optional<String> developer;
        try {
            developer = new dev.berth.engine.image.ImageStore(opts.home()).digestOf(dev.berth.engine.image.ImageStore.DEVELOPER);
        } catch (java.io.IOException e) {
            developer = java.util.Optional.empty();
        }
        for (IsolationDriver d : drivers) {
            boolean hostRoot = d.name().equals("namespace") || d.name().equals("gvisor");
            if (hostRoot && developer.isPresent()) {
                out.printf("%-10s built-in image %s %s (the developer image in the store)%n", d.name(),
                        dev.berth.engine.image.ImageStore.DEVELOPER, developer.get());
            } else if (hostRoot) {
                out.printf("%-10s built-in image %s: FALLBACK, the host's /usr read-only with a curated /etc (no '%s' image"
                        + " in the store; `berth setup` imports the developer image)%n", d.name(), d.imageId(),
                        dev.berth.engine.image.ImageStore.DEVELOPER);
            } else if (d.imageId() != null) {
                out.printf("%-10s built-in image %s%n", d.name(), d.imageId());
            }
        }
        try {
            var images = new dev.berth.engine.image.ImageStore(opts.home()).list();
            out.println(images.isEmpty() ? "imported images: none (berth image import PATH --name NAME)" : "imported images (open_workspace {image}):");
            for (var i : images) {
                out.printf("  %-20s %s  %.1f MiB, ext4 base %.1f MiB, levels %s, from %s%n", i.name(), i.digest(),
                        i.bytes() / 1048576.0, i.baseDiskBytes() / 1048576.0, i.drivers(), i.origin());
            }
        } catch (java.io.IOException e) {
            out.println("imported images: unreadable: " + e.getMessage());
        }
        try {
            var key = dev.berth.engine.audit.ServerKey.loadOrCreate(opts.home().resolve("keys"));
            out.println("audit signing key " + key.keyId() + " (Ed25519; receipts and audit heads; give this to whoever checks"
                    + " receipts with `berth audit receipt FILE --public-key FILE`):");
            out.print(key.publicKeyPem());
        } catch (java.io.IOException e) {
            out.println("audit signing key: unavailable: " + e.getMessage());
        }
        // doctor takes no --config: what berth stdio / berth http do when the operator config has no pool section
        var pooled = dev.berth.engine.api.EngineConfig.defaults(opts.home(), drivers)
                .withTemplates(dev.berth.engine.api.TemplateSettings.serverDefault(dev.berth.engine.api.TemplateSettings.DEFAULT_FORK_LIMIT));
        if (opts.isolation() != null) pooled = pooled.withDefaultIsolation(opts.isolation());
        out.println("warm pool (default; the operator config's pool section changes it): " + dev.berth.engine.Engine.poolPlan(pooled));
        out.println(any ? "default isolation: " + (opts.isolation() != null ? opts.isolation() : chosen)
                : "no isolation driver can run here; run `berth setup` (as root) to install what is missing");
        return any ? 0 : 1;
    }
}
