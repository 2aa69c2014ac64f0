package dev.berth.mcp.cli;

import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.audit.AuditVerifier;
import dev.berth.engine.audit.Canonical;
import dev.berth.engine.audit.Receipts;
import dev.berth.engine.audit.ServerKey;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code berth audit verify [--tenant T]}, {@code berth audit receipt FILE [--public-key PEM]},
 * {@code berth audit export --tenant T [--since WHEN] [--type TYPE] [--out FILE]}. Reads the home's audit logs and
 * never writes them. Exit status: 0 intact / valid, 1 broken / invalid, 2 usage.
 */
@Command(name = "audit", mixinStandardHelpOptions = true, description = "Check and export the home's audit logs (never writes them).",
        subcommands = {AuditCommand.Verify.class, AuditCommand.Receipt.class, AuditCommand.Export.class})
final class AuditCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw Cli.usage(spec, "audit needs a subcommand: verify, receipt or export");
    }

    /** What a subcommand was given; unset fields are null. */
    static final class Args {
        @Option(names = "--home", paramLabel = "DIR", description = "the Berth home (default: $BERTH_HOME, /var/lib/berth as root,"
                + " else ~/.local/share/berth)")
        Path home;
        @Option(names = "--public-key", paramLabel = "FILE", description = "the server's public key (PEM); default: the home's")
        Path publicKey;
        String tenant;
        String since;
        String type;
        Path out;
        final List<String> positional = new ArrayList<>();

        Path auditDir() { return (home != null ? home : Options.defaultHome()).toAbsolutePath().resolve("audit"); }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Check the audit chains; name the first broken record. Exit 0 intact, 1 broken.")
    static final class Verify implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        Args a;

        @Option(names = "--tenant", paramLabel = "T", description = "only this tenant's log (default: every log)")
        String tenant;

        @Override
        public Integer call() {
            a.tenant = tenant;
            Path dir = a.auditDir();
            return verify(a, dir, dir.resolveSibling("keys"), Cli.of(spec).out);
        }
    }

    @Command(name = "receipt", mixinStandardHelpOptions = true,
            description = "Check a run receipt's signature, and its chain position when the home's audit log is at hand.")
    static final class Receipt implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        Args a;

        @Parameters(paramLabel = "FILE", arity = "0..*", description = "a receipt, or a run result holding one")
        List<String> files = new ArrayList<>();

        @Override
        public Integer call() {
            a.positional.addAll(files);
            Path dir = a.auditDir();
            try {
                return receipt(a, dir, dir.resolveSibling("keys"), Cli.of(spec).out);
            } catch (UsageException e) {
                throw Cli.usage(spec, e.getMessage());
            }
        }
    }

    @Command(name = "export", mixinStandardHelpOptions = true,
            description = "Verified records of one tenant as JSON Lines (for a SIEM). Exit 0 intact, 1 broken.")
    static final class Export implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        Args a;

        @Option(names = "--tenant", paramLabel = "T", description = "the tenant whose log to export (required)")
        String tenant;
        @Option(names = "--since", paramLabel = "WHEN", description = "only records since: an instant"
                + " (2026-11-30T12:00:00Z), a date (2026-11-30, UTC) or an age (90m, 24h, 7d)")
        String since;
        @Option(names = "--type", paramLabel = "TYPE", description = "only records of this type")
        String type;
        @Option(names = "--out", paramLabel = "FILE", description = "write here instead of stdout")
        Path out;

        @Override
        public Integer call() {
            a.tenant = tenant;
            a.since = since;
            a.type = type;
            a.out = out;
            Path dir = a.auditDir();
            try {
                return export(a, dir, dir.resolveSibling("keys"), Cli.of(spec).out, Cli.of(spec).err);
            } catch (UsageException e) {
                throw Cli.usage(spec, e.getMessage());
            }
        }
    }

    /** The key to check with: the given public key file, else the home's own key (verification only). */
    private static ServerKey key(Args a, Path keyDir) throws IOException {
        if (a.publicKey != null) return ServerKey.publicOnly(a.publicKey);
        Path pub = keyDir.resolve(ServerKey.PUBLIC_FILE);
        if (!Files.exists(pub)) throw new IOException("no public key in " + keyDir + "; give one with --public-key FILE");
        return ServerKey.publicOnly(pub);
    }

    private static List<Path> logs(Args a, Path auditDir) throws IOException {
        if (a.tenant != null) return List.of(AuditTrail.tenantLog(auditDir, a.tenant));
        if (!Files.isDirectory(auditDir)) return List.of();
        try (var s = Files.list(auditDir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".log")).sorted().toList();
        }
    }

    private static int verify(Args a, Path auditDir, Path keyDir, PrintStream out) {
        ServerKey key;
        List<Path> files;
        try {
            key = key(a, keyDir);
            files = logs(a, auditDir);
        } catch (IOException e) {
            out.println("berth: " + e.getMessage());
            return 1;
        }
        if (files.isEmpty()) {
            out.println("no audit logs in " + auditDir);
            return 0;
        }
        boolean allIntact = true;
        for (Path f : files) {
            AuditVerifier.Report r = AuditVerifier.verify(f, key);
            allIntact &= r.intact();
            String status = switch (r.status()) {
                case OK -> "intact";
                case INCOMPLETE_TAIL -> "intact, incomplete tail";
                case BROKEN -> "BROKEN";
                case UNREADABLE -> "UNREADABLE";
            };
            out.printf("%-24s %-24s %d record(s)  %s%n", r.log(), status, r.lastSeq(), r.message());
        }
        return allIntact ? 0 : 1;
    }

    @SuppressWarnings("unchecked")
    private static int receipt(Args a, Path auditDir, Path keyDir, PrintStream out) throws UsageException {
        if (a.positional.size() != 1) throw new UsageException("audit receipt needs one FILE (a receipt, or a run result holding one)");
        Path file = Path.of(a.positional.get(0));
        Map<String, Object> receipt;
        ServerKey key;
        try {
            receipt = Canonical.decodeObject(Files.readAllBytes(file));
            if (receipt.get("receipt") instanceof Map<?, ?> inner) receipt = (Map<String, Object>) inner;
            key = key(a, keyDir);
        } catch (IOException | IllegalArgumentException e) {
            out.println("berth: cannot read " + file + ": " + e.getMessage());
            return 1;
        }
        Receipts.Check sig = Receipts.verify(receipt, key);
        out.println("signature: " + (sig.ok() ? "valid" : "INVALID") + " - " + sig.message());
        if (!sig.ok()) return 1;
        if (!Files.isDirectory(auditDir)) {
            out.println("chain: not checked - no audit log at hand (" + auditDir + ")");
            return 0;
        }
        Receipts.Check chain = Receipts.verifyAgainstLog(receipt, auditDir, key);
        out.println("chain: " + (chain.ok() ? "valid" : "INVALID") + " - " + chain.message());
        return chain.ok() ? 0 : 1;
    }

    private static int export(Args a, Path auditDir, Path keyDir, PrintStream out, PrintStream err) throws UsageException {
        if (a.tenant == null) throw new UsageException("audit export needs --tenant T (one tenant's log per export)");
        Instant since = a.since == null ? Instant.EPOCH : since(a.since);
        ServerKey key;
        try {
            key = key(a, keyDir);
        } catch (IOException e) {
            err.println("berth: " + e.getMessage());
            return 1;
        }
        Path file = AuditTrail.tenantLog(auditDir, a.tenant);
        long[] n = {0};
        AuditVerifier.Report r;
        try (OutputStream o = a.out == null ? out : Files.newOutputStream(a.out)) {
            IOException[] failed = {null};
            r = AuditVerifier.verify(file, key, rec -> {
                if (failed[0] != null) return;
                if (Instant.parse((String) rec.get("time")).isBefore(since)) return;
                if (a.type != null && !a.type.equals(rec.get("type"))) return;
                rec.put("log", "tenant:" + a.tenant);
                try {
                    o.write(Canonical.encode(rec));
                    o.write('\n');
                    n[0]++;
                } catch (IOException e) {
                    failed[0] = e;
                }
            });
            o.flush();
            if (failed[0] != null) throw failed[0];
        } catch (IOException e) {
            err.println("berth: export failed: " + e.getMessage());
            return 1;
        }
        err.println("exported " + n[0] + " record(s) of tenant:" + a.tenant + " (" + r.message() + ")");
        return r.intact() ? 0 : 1;
    }

    /** An instant (2026-11-30T12:00:00Z), a date (2026-11-30, UTC), or an age (90m, 24h, 7d). */
    static Instant since(String s) throws UsageException {
        try {
            if (s.matches("\\d+[smhd]")) {
                long v = Long.parseLong(s.substring(0, s.length() - 1));
                Duration d = switch (s.charAt(s.length() - 1)) {
                    case 's' -> Duration.ofSeconds(v);
                    case 'm' -> Duration.ofMinutes(v);
                    case 'h' -> Duration.ofHours(v);
                    default -> Duration.ofDays(v);
                };
                return Instant.now().minus(d);
            }
            if (s.length() == 10) return LocalDate.parse(s).atStartOfDay(ZoneOffset.UTC).toInstant();
            return Instant.parse(s);
        } catch (DateTimeParseException | ArithmeticException e) {
            throw new UsageException("--since must be an instant (2026-11-30T12:00:00Z), a date (2026-11-30) or an age"
                    + " (90m, 24h, 7d), got '" + s + "'");
        }
    }
}
