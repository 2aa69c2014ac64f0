package dev.berth.mcp;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/**
 * Generators of malformed and adversarial JSON-RPC for {@link JsonRpcFuzzE2eTest}: broken bytes and encodings, JSON
 * that is not a message, messages with every member missing, mistyped or duplicated, deep nesting, oversize
 * messages, truncations and mutations of valid ones. Methods are harmless ones (or unknown): a generated message may
 * be valid, but never opens a workspace or runs a command. Ids never start with "probe", which the test's own
 * requests use.
 */
final class AdversarialJsonRpc {
    private AdversarialJsonRpc() {}

    private static final List<String> METHODS = List.of("ping", "tools/list", "initialize", "tools/call", "shutdown", "exit",
            "resources/list", "prompts/get", "logging/setLevel", "completion/complete", "notifications/initialized",
            "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed", "$/cancelRequest", "");
    private static final List<String> TOOLS = List.of("list_workspaces", "read_file", "close_workspace", "park", "nope", "");

    /** One message as the bytes of one line (without the newline). */
    static Arbitrary<byte[]> message() {
        return Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(24, structured().map(AdversarialJsonRpc::utf8)),
                net.jqwik.api.Tuple.of(12, mutated()),
                net.jqwik.api.Tuple.of(8, Arbitraries.strings().all().ofMaxLength(200).map(AdversarialJsonRpc::utf8)),
                net.jqwik.api.Tuple.of(8, Arbitraries.bytes().array(byte[].class).ofMaxSize(64)),
                net.jqwik.api.Tuple.of(4, nested()),
                net.jqwik.api.Tuple.of(4, Arbitraries.of("{}", "[]", "null", "true", "0", "\"x\"", "[{}]", "{\"jsonrpc\":\"2.0\"}", "{\"jsonrpc\":\"2.0\",\"id\":1}",
                        "\uFEFF{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":\"bom\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r",
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", "{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"ping\"}",
                        "{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775809,\"method\":\"ping\"}").map(AdversarialJsonRpc::utf8)),
                net.jqwik.api.Tuple.of(1, oversize()));
    }

    /** A batch of 1 to 4 messages sent back to back. */
    static Arbitrary<List<byte[]>> batch() {
        return message().list().ofMinSize(1).ofMaxSize(4);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static Arbitrary<Object> anyValue() {
        return Arbitraries.oneOf(Arbitraries.integers().map(i -> (Object) i), Arbitraries.strings().ofMaxLength(20).map(s -> (Object) s),
                Arbitraries.just((Object) Map.of()), Arbitraries.just((Object) List.of(1, "a")), Arbitraries.just((Object) true),
                Arbitraries.just((Object) 1.5), Arbitraries.just(Absent.NULL));
    }

    /** A JSON-RPC-shaped object whose members are each right, wrong or absent. */
    static Arbitrary<String> structured() {
        Arbitrary<Object> jsonrpc = Arbitraries.oneOf(Arbitraries.just((Object) "2.0"), Arbitraries.just((Object) "2.0"), Arbitraries.just((Object) "2.0"), Arbitraries.just((Object) "1.0"), Arbitraries.just((Object) 2.0), Arbitraries.just(Absent.ABSENT), anyValue());
        Arbitrary<Object> id = Arbitraries.oneOf(Arbitraries.integers().between(-5, 1_000_000).map(i -> (Object) i),
                Arbitraries.strings().alpha().ofMaxLength(8).map(s -> (Object) ("g" + s)), Arbitraries.just(Absent.ABSENT),
                Arbitraries.just(Absent.ABSENT), anyValue());
        Arbitrary<Object> method = Arbitraries.oneOf(Arbitraries.of(METHODS).map(m -> (Object) m), Arbitraries.of(METHODS).map(m -> (Object) m),
                Arbitraries.just(Absent.ABSENT), anyValue());
        Arbitrary<Object> params = Arbitraries.oneOf(Arbitraries.just(Absent.ABSENT), params(), params(), anyValue());
        Arbitrary<Object> extra = Arbitraries.oneOf(Arbitraries.just(Absent.ABSENT), Arbitraries.just(Absent.ABSENT), anyValue());
        return Combinators.combine(jsonrpc, id, method, params, extra, extra).as((j, i, m, p, result, error) -> {
            Map<String, Object> msg = new LinkedHashMap<>();
            put(msg, "jsonrpc", j);
            put(msg, "id", i);
            put(msg, "method", m);
            put(msg, "params", p);
            put(msg, "result", result);
            put(msg, "error", error);
            return McpBridge.JSON.writeValueAsString(msg);
        });
    }

    private static Arbitrary<Object> params() {
        Arbitrary<Object> name = Arbitraries.oneOf(Arbitraries.of(TOOLS).map(t -> (Object) t), anyValue(), Arbitraries.just(Absent.ABSENT));
        Arbitrary<Object> args = Arbitraries.oneOf(Arbitraries.just((Object) Map.of()), Arbitraries.just((Object) Map.of("workspace", "ws-none", "path", "x")),
                anyValue(), Arbitraries.just(Absent.ABSENT));
        Arbitrary<Object> any = Arbitraries.oneOf(anyValue(), Arbitraries.just(Absent.ABSENT));
        return Combinators.combine(name, args, any, any, any).as((n, a, version, requestId, meta) -> {
            Map<String, Object> p = new LinkedHashMap<>();
            put(p, "name", n);
            put(p, "arguments", a);
            put(p, "protocolVersion", version);
            put(p, "requestId", requestId);
            put(p, "_meta", meta);
            put(p, "clientInfo", version == Absent.ABSENT ? Absent.ABSENT : Map.of("name", "fuzz", "version", "1"));
            return p;
        });
    }

    private enum Absent { ABSENT, NULL }

    private static void put(Map<String, Object> m, String k, Object v) {
        if (v == Absent.ABSENT) return;
        m.put(k, v == Absent.NULL ? null : v);
    }

    /** A valid message cut short, or with a byte replaced or inserted. */
    static Arbitrary<byte[]> mutated() {
        Arbitrary<String> valid = Arbitraries.of("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":\"t\",\"method\":\"tools/call\",\"params\":{\"name\":\"list_workspaces\",\"arguments\":{}}}",
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7,\"reason\":\"x\"}}");
        return Combinators.combine(valid, Arbitraries.integers().between(0, 200), Arbitraries.integers().between(0, 2),
                Arbitraries.bytes()).as((v, at, op, b) -> {
            byte[] s = utf8(v);
            int i = Math.min(at, s.length - 1);
            return switch (op) {
                case 0 -> java.util.Arrays.copyOf(s, i);
                case 1 -> {
                    byte[] c = s.clone();
                    c[i] = b == '\n' ? 0 : b;
                    yield c;
                }
                default -> {
                    byte[] c = new byte[s.length + 1];
                    System.arraycopy(s, 0, c, 0, i);
                    c[i] = b == '\n' ? (byte) '{' : b;
                    System.arraycopy(s, i, c, i + 1, s.length - i);
                    yield c;
                }
            };
        });
    }

    /** Arrays and objects nested 1 to 100,000 deep, closed or not, alone or as params. */
    static Arbitrary<byte[]> nested() {
        return Combinators.combine(Arbitraries.integers().between(1, 100_000).withDistribution(net.jqwik.api.RandomDistribution.biased()),
                Arbitraries.of("[", "{\"a\":"), Arbitraries.of(true, false), Arbitraries.of(true, false)).as((depth, open, closed, asParams) -> {
            StringBuilder b = new StringBuilder();
            if (asParams) b.append("{\"jsonrpc\":\"2.0\",\"id\":\"n\",\"method\":\"ping\",\"params\":{\"x\":");
            b.append(open.repeat(depth)).append("1");
            if (closed) b.append((open.equals("[") ? "]" : "}").repeat(depth));
            if (asParams) b.append("}}");
            return utf8(b.toString());
        });
    }

    /** A message just over the 4 MiB limit (rare: they cost time). */
    static Arbitrary<byte[]> oversize() {
        return Arbitraries.of(false, true).map(json -> {
            int n = dev.berth.mcp.jsonrpc.WireLimits.MAX_MESSAGE_BYTES + 1;
            return json ? utf8("{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"content\":\""
                    + "a".repeat(n) + "\"}}}") : utf8("z".repeat(n));
        });
    }

    static List<byte[]> lines(List<byte[]> batch) {
        return new ArrayList<>(batch);
    }
}
