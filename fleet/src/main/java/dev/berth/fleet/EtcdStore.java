package dev.berth.fleet;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A {@link FleetStore} on etcd 3.4+ through etcd's own JSON gateway ({@code /v3/kv/*}, {@code /v3/lease/*},
 * {@code /v3/watch}, {@code /v3/auth/authenticate}) over the JDK's {@link HttpClient}: no grpc and no second Netty in
 * the process (docs/fleet.md, "Why the JSON gateway"). Keys and values travel base64-encoded, as the gateway wants.
 *
 * <p>Implementation notes: one endpoint is current; a request that cannot reach it (connect refused, timeout, etcd's
 * "unavailable") moves to the next endpoint and retries there, each endpoint once per request, so a dead member costs
 * one timeout and a cluster that has lost quorum fails within {@code endpoints x timeout}. An auth token (username and
 * password) is fetched lazily and fetched again when etcd says it expired. Thread-safe: the HttpClient is shared.
 */
public final class EtcdStore implements FleetStore {
    static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder UNB64 = Base64.getDecoder();

    private final EtcdSettings settings;
    private final HttpClient http;
    private final AtomicInteger current = new AtomicInteger();
    private volatile String token;

    public EtcdStore(EtcdSettings settings) {
        if (settings.endpoints().isEmpty()) throw new IllegalArgumentException("no etcd endpoints");
        this.settings = settings;
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(settings.timeout()).version(HttpClient.Version.HTTP_1_1);
        if (settings.caFile() != null) b.sslContext(Tls.trusting(settings.caFile()));
        this.http = b.build();
    }

    @Override
    public String describe() {
        return "etcd at " + String.join(", ", settings.endpoints().stream().map(URI::toString).toList());
    }

    @Override
    public Optional<KeyValue> get(String key) {
        ObjectNode req = JSON.createObjectNode().put("key", b64(key));
        JsonNode kvs = call("/v3/kv/range", req).path("kvs");
        return kvs.isEmpty() ? Optional.empty() : Optional.of(kv(kvs.get(0)));
    }

    @Override
    public List<KeyValue> range(String prefix) {
        ObjectNode req = JSON.createObjectNode().put("key", b64(prefix)).put("range_end", B64.encodeToString(prefixEnd(prefix)));
        List<KeyValue> out = new ArrayList<>();
        for (JsonNode n : call("/v3/kv/range", req).path("kvs")) out.add(kv(n));
        return out;
    }

    @Override
    public long put(String key, byte[] value, long lease) {
        return call("/v3/kv/put", putNode(key, value, lease)).path("header").path("revision").asLong();
    }

    @Override
    public boolean delete(String key) {
        return call("/v3/kv/deleterange", JSON.createObjectNode().put("key", b64(key))).path("deleted").asLong() > 0;
    }

    @Override
    public TxnResult txn(Txn txn) {
        ObjectNode req = JSON.createObjectNode();
        ArrayNode compares = req.putArray("compare");
        for (Txn.Compare c : txn.compares()) {
            ObjectNode n = compares.addObject().put("key", b64(c.key())).put("result", "EQUAL");
            switch (c) {
                case Txn.Absent a -> n.put("target", "CREATE").put("create_revision", "0");
                case Txn.ModRevision m -> n.put("target", "MOD").put("mod_revision", Long.toString(m.revision()));
                case Txn.Lease l -> n.put("target", "LEASE").put("lease", Long.toString(l.lease()));
            }
        }
        ops(req.putArray("success"), txn.success());
        ops(req.putArray("failure"), txn.failure());
        JsonNode res = call("/v3/kv/txn", req);
        boolean ok = res.path("succeeded").asBoolean(false);
        List<Optional<KeyValue>> gets = new ArrayList<>();
        for (JsonNode r : res.path("responses")) {
            if (r.has("response_range")) {
                JsonNode kvs = r.path("response_range").path("kvs");
                gets.add(kvs.isEmpty() ? Optional.empty() : Optional.of(kv(kvs.get(0))));
            }
        }
        return new TxnResult(ok, res.path("header").path("revision").asLong(), gets);
    }

    private static void ops(ArrayNode into, List<Txn.Op> ops) {
        for (Txn.Op op : ops) {
            switch (op) {
                case Txn.Put p -> into.addObject().set("request_put", putNode(p.key(), p.value(), p.lease()));
                case Txn.Delete d -> into.addObject().putObject("request_delete_range").put("key", b64(d.key()));
                case Txn.Get g -> into.addObject().putObject("request_range").put("key", b64(g.key()));
            }
        }
    }

    private static ObjectNode putNode(String key, byte[] value, long lease) {
        ObjectNode n = JSON.createObjectNode().put("key", b64(key)).put("value", B64.encodeToString(value));
        if (lease != 0) n.put("lease", Long.toString(lease));
        return n;
    }

    @Override
    public long grantLease(long ttlSeconds) {
        return call("/v3/lease/grant", JSON.createObjectNode().put("TTL", Long.toString(ttlSeconds))).path("ID").asLong();
    }

    @Override
    public long keepAlive(long lease) {
        // a stream in gRPC; through the gateway one request body gives one answer, which is all a periodic renewal needs
        return call("/v3/lease/keepalive", JSON.createObjectNode().put("ID", Long.toString(lease))).path("result").path("TTL").asLong(0);
    }

    @Override
    public void revoke(long lease) {
        try {
            call("/v3/lease/revoke", JSON.createObjectNode().put("ID", Long.toString(lease)));
        } catch (FleetStoreException e) {
            if (!e.getMessage().contains("lease not found")) throw e;
        }
    }

    @Override
    public AutoCloseable watch(String prefix, long afterRevision, Consumer<List<Event>> listener, Consumer<Exception> onError) {
        ObjectNode create = JSON.createObjectNode();
        create.putObject("create_request").put("key", b64(prefix)).put("range_end", B64.encodeToString(prefixEnd(prefix)))
                .put("start_revision", Long.toString(afterRevision + 1));
        URI endpoint = settings.endpoints().get(Math.floorMod(current.get(), settings.endpoints().size()));
        HttpRequest.Builder rb = HttpRequest.newBuilder(endpoint.resolve("/v3/watch"))
                .POST(HttpRequest.BodyPublishers.ofString(create.toString()));
        if (token != null) rb.header("Authorization", token);
        Stream<String>[] lines = newStreamArray();
        Thread t = Thread.ofVirtual().name("berth-fleet-watch").start(() -> {
            try {
                HttpResponse<Stream<String>> r = http.send(rb.build(), HttpResponse.BodyHandlers.ofLines());
                lines[0] = r.body();
                r.body().forEach(line -> {
                    JsonNode result = JSON.readTree(line).path("result");
                    if (result.path("canceled").asBoolean(false)) {
                        throw new FleetStoreException("watch of " + prefix + " canceled by " + endpoint + ": "
                                + result.path("cancel_reason").asString(""), false, null);
                    }
                    List<Event> events = new ArrayList<>();
                    for (JsonNode e : result.path("events")) events.add(new Event("DELETE".equals(e.path("type").asString("")), kv(e.path("kv"))));
                    if (!events.isEmpty()) listener.accept(events);
                });
                if (!Thread.currentThread().isInterrupted()) onError.accept(new FleetStoreException("watch of " + prefix + " ended by " + endpoint, true, null));
            } catch (IOException | RuntimeException e) {
                if (!Thread.currentThread().isInterrupted()) onError.accept(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return () -> {
            t.interrupt();
            if (lines[0] != null) lines[0].close();
        };
    }

    @SuppressWarnings("unchecked")
    private static Stream<String>[] newStreamArray() { return (Stream<String>[]) new Stream[1]; }

    @Override
    public void close() {
        http.close();
    }

    /** Posts one gateway request, moving over the endpoints as the class comment says. */
    private JsonNode call(String path, ObjectNode body) {
        int n = settings.endpoints().size();
        FleetStoreException last = null;
        for (int i = 0; i < n; i++) {
            int at = current.get();
            URI endpoint = settings.endpoints().get(Math.floorMod(at, n));
            try {
                return callOnce(endpoint, path, body, true);
            } catch (FleetStoreException e) {
                if (!e.unavailable()) throw e;
                last = e;
                current.compareAndSet(at, at + 1);
            }
        }
        throw new FleetStoreException((n > 1 ? "no etcd endpoint answered (" + describe() + "); last: " : "") + last.getMessage(), true, last);
    }

    private JsonNode callOnce(URI endpoint, String path, ObjectNode body, boolean mayAuth) {
        if (settings.username() != null && token == null && !path.equals("/v3/auth/authenticate")) authenticate(endpoint);
        HttpRequest.Builder rb = HttpRequest.newBuilder(endpoint.resolve(path)).timeout(settings.timeout())
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (token != null && !path.equals("/v3/auth/authenticate")) rb.header("Authorization", token);
        HttpResponse<String> r;
        try {
            r = http.send(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new FleetStoreException("etcd at " + endpoint + " cannot be reached: " + describe(e), true, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FleetStoreException("interrupted while calling etcd at " + endpoint, true, e);
        }
        JsonNode res;
        try {
            res = JSON.readTree(r.body());
        } catch (RuntimeException e) {
            throw new FleetStoreException("etcd at " + endpoint + " answered " + path + " with HTTP " + r.statusCode()
                    + " and no JSON (is this an etcd client URL?)", false, e);
        }
        if (res.has("error") || r.statusCode() != 200) {
            String msg = res.path("message").asString(res.path("error").asString("HTTP " + r.statusCode()));
            int code = res.path("code").asInt(0);
            if (mayAuth && settings.username() != null && msg.contains("invalid auth token")) {
                token = null;
                return callOnce(endpoint, path, body, false);
            }
            // 14 = gRPC UNAVAILABLE, 4 = DEADLINE_EXCEEDED: this member cannot serve (no leader, no quorum)
            boolean unavailable = code == 14 || code == 4 || msg.contains("no leader") || msg.contains("timed out");
            throw new FleetStoreException("etcd at " + endpoint + " refused " + path + ": " + msg, unavailable, null);
        }
        return res;
    }

    private void authenticate(URI endpoint) {
        ObjectNode req = JSON.createObjectNode().put("name", settings.username()).put("password", settings.password());
        JsonNode res = callOnce(endpoint, "/v3/auth/authenticate", req, false);
        token = res.path("token").asString(null);
        if (token == null) throw new FleetStoreException("etcd at " + endpoint + " gave no auth token for user " + settings.username(), false, null);
    }

    private static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getMessage() == null) root = root.getCause();
        return root.getClass().getSimpleName() + (root.getMessage() == null ? "" : ": " + root.getMessage());
    }

    private static KeyValue kv(JsonNode n) {
        byte[] value = n.has("value") ? UNB64.decode(n.path("value").asString()) : new byte[0];
        return new KeyValue(new String(UNB64.decode(n.path("key").asString()), StandardCharsets.UTF_8), value,
                n.path("create_revision").asLong(), n.path("mod_revision").asLong(), n.path("version").asLong(), n.path("lease").asLong());
    }

    private static String b64(String s) { return B64.encodeToString(s.getBytes(StandardCharsets.UTF_8)); }

    /** The first key after every key with this prefix (etcd's range_end for a prefix). */
    private static byte[] prefixEnd(String prefix) {
        byte[] b = prefix.getBytes(StandardCharsets.UTF_8);
        for (int i = b.length - 1; i >= 0; i--) {
            if (b[i] != (byte) 0xff) {
                b[i]++;
                return java.util.Arrays.copyOf(b, i + 1);
            }
        }
        return new byte[] {0};
    }
}
