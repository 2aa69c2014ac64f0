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

/**
 * {@code berth audit verify [--tenant T]}, {@code berth audit receipt FILE [--public-key PEM]},
 * {@code berth audit export --tenant T [--since WHEN] [--type TYPE] [--out FILE]}. Reads the home's audit logs and
 * never writes them. Exit status: 0 intact / valid, 1 broken / invalid, 2 usage.
 */
final class AuditCommand {
    private AuditCommand() {}

    static final class Args {
        Path home;
        String tenant;
        String since;
        String type;
        Path out;
        Path publicKey;
        final List<String> positional = new ArrayList<>();
    }

    static int run(List<String> argv, PrintStream out, PrintStream err) throws Options.UsageException {
        if (argv.isEmpty()) throw new Options.UsageException("audit needs a subcommand: verify, receipt or export");
        String sub = argv.get(0);
        Args a = parse(argv.subList(1, argv.size()));
        Path auditDir = (a.home != null ? a.home : Options.defaultHome()).toAbsolutePath().resolve("audit");
        Path keyDir = auditDir.resolveSibling("keys");
        return switch (sub) {
            case "verify" -> verify(a, auditDir, keyDir, out);
            case "receipt" -> receipt(a, auditDir, keyDir, out);
            case "export" -> export(a, auditDir, keyDir, out, err);
            default -> throw new Options.UsageException("unknown audit subcommand '" + sub + "'; use verify, receipt or export");
        };
    }

    private static Args parse(List<String> argv) throws Options.UsageException {
        Args a = new Args();
        for (int i = 0; i < argv.size(); i++) {
            String s = argv.get(i);
            switch (s) {
                case "--home" -> a.home = Path.of(Options.value(argv, ++i, s));
                case "--tenant" -> a.tenant = Options.value(argv, ++i, s);
                case "--since" -> a.since = Options.value(argv, ++i, s);
                case "--type" -> a.type = Options.value(argv, ++i, s);
                case "--out" -> a.out = Path.of(Options.value(argv, ++i, s));
                case "--public-key" -> a.publicKey = Path.of(Options.value(argv, ++i, s));
                default -> {
                    if (s.startsWith("--")) throw new Options.UsageException("unknown audit option '" + s + "'");
                    a.positional.add(s);
                }
            }
        }
        return a;
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
    private static int receipt(Args a, Path auditDir, Path keyDir, PrintStream out) throws Options.UsageException {
        if (a.positional.size() != 1) throw new Options.UsageException("audit receipt needs one FILE (a receipt, or a run result holding one)");
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

    private static int export(Args a, Path auditDir, Path keyDir, PrintStream out, PrintStream err) throws Options.UsageException {
        if (a.tenant == null) throw new Options.UsageException("audit export needs --tenant T (one tenant's log per export)");
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
    static Instant since(String s) throws Options.UsageException {
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
            throw new Options.UsageException("--since must be an instant (2026-11-30T12:00:00Z), a date (2026-11-30) or an age"
                    + " (90m, 24h, 7d), got '" + s + "'");
        }
    }
}
