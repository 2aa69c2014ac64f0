package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.Presets;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.policy.SecretBinding;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 26, item 5: the registry rules against hostile paths, each case against a real registry on loopback (plain
 * HTTP: the rules check plain-HTTP requests to their hosts like intercepted ones). A fresh npm tarball must be refused
 * however its path is spelled, and no spelling of it may reach the upstream; git pushes are found in every spelling
 * git's backend would decode; a code host's REST writes are covered where a token is bound to its API; PyPI's file
 * host is checked against the index's JSON API; crafted names fail fast with a reason.
 */
class RegistryHardeningTest {
    static HttpServer registry;
    static EgressProxy proxy;
    static EgressProxy.Listener listener;
    static int port;
    static Policy ceiling;
    static final List<Decision> decisions = new CopyOnWriteArrayList<>();
    static final List<String> seen = new CopyOnWriteArrayList<>();
    static final Map<String, String> served = new ConcurrentHashMap<>();
    static final Instant OLD = Instant.parse("2020-01-02T03:04:05Z");
    static final Instant FRESH = Instant.now().minus(2, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS);

    @BeforeAll
    static void start() throws Exception {
        registry = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        registry.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        registry.createContext("/", ex -> {
            String key = ex.getRequestHeaders().getFirst("Host").replaceFirst(":.*", "") + ex.getRequestURI().getRawPath()
                    + (ex.getRequestURI().getRawQuery() == null ? "" : "?" + ex.getRequestURI().getRawQuery());
            seen.add(ex.getRequestMethod() + " " + key);
            ex.getRequestBody().readAllBytes();
            String body = served.get(key.replaceFirst("\\?.*", ""));
            byte[] b = (body == null ? "upstream saw " + key : body).getBytes(StandardCharsets.UTF_8);
            boolean registry = key.startsWith("npm.") || key.startsWith("meta.") || key.startsWith("files.");
            ex.sendResponseHeaders(body == null && registry ? 404 : 200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        registry.start();
        port = registry.getAddress().getPort();
        served.put("npm.h.test/leftish", """
                {"name":"leftish","dist-tags":{"latest":"1.1.0"},
                 "versions":{"1.0.0":{"version":"1.0.0"},"1.1.0":{"version":"1.1.0"}},
                 "time":{"1.0.0":"%s","1.1.0":"%s"}}""".formatted(OLD, FRESH));
        served.put("npm.h.test/leftish/-/leftish-1.0.0.tgz", "old tarball");
        served.put("npm.h.test/leftish/-/leftish-1.1.0.tgz", "FRESH tarball");
        served.put("meta.h.test/pypi/req-lib/json", """
                {"info":{"name":"req-lib","version":"2.1.0"},
                 "releases":{"1.0.0":[{"filename":"req_lib-1.0.0-py3-none-any.whl","upload_time_iso_8601":"%s"}],
                             "2.1.0":[{"filename":"req_lib-2.1.0-py3-none-any.whl","upload_time_iso_8601":"%s"}]}}""".formatted(OLD, FRESH));
        served.put("files.h.test/packages/req_lib-1.0.0-py3-none-any.whl", "old wheel");
        served.put("files.h.test/packages/req_lib-2.1.0-py3-none-any.whl", "FRESH wheel");

        TestResolver resolver = new TestResolver();
        List<String> hosts = List.of("npm.h.test", "meta.h.test", "files.h.test", "git.h.test", "api.h.test", "narrow.h.test", "approve.h.test");
        for (String h : hosts) resolver.map(h, "127.0.0.1");
        ceiling = Policy.of(hosts.stream().filter(h -> !h.startsWith("approve")).map(h -> h + ":" + port).toList());
        Duration week = Duration.ofDays(7);
        ProxyConfig cfg = ProxyConfig.builder()
                .ceiling(ceiling)
                .tlsPorts(Set.of(443, port))
                .unsafeAllowLoopbackUpstreams(true)
                .connectTimeout(Duration.ofSeconds(2))
                .registryRule(RegistryRule.of(RegistryRule.Kind.NPM, List.of("npm.h.test"), null).withMinReleaseAge(week, null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.PYPI, List.of("meta.h.test", "files.h.test"), null).withMinReleaseAge(week, null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.GIT, List.of("git.h.test"), List.of("org/ok")).withApiHosts(List.of("api.h.test")))
                .secret(SecretBinding.of("gh", "GH_TOKEN", List.of("api.h.test"), "not-a-real-token"))
                .approval(new ApprovalSettings(Policy.of(List.of("approve.h.test:" + port)), List.of(Duration.ofHours(1)), Duration.ofSeconds(5)))
                .build();
        proxy = EgressProxy.builder(cfg).resolver(resolver).auditSink(r -> {}).threads(2).start();
        listener = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext("ws-h", "run-h", ceiling, decisions::add, Set.of("gh")));
    }

    @AfterAll
    static void stop() {
        listener.close();
        proxy.close();
        registry.stop(0);
    }

    static Harness.Response request(EgressProxy.Listener l, String method, String host, String target) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(l.address(), 2000);
            s.setSoTimeout(5000); // a hang would fail here, long before the idle timeout
            Harness.write(s, method + " http://" + host + ":" + port + target + " HTTP/1.1\r\nHost: " + host + ":" + port
                    + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            return Harness.Response.read(s.getInputStream());
        }
    }

    static Harness.Response get(String host, String target) throws IOException {
        return request(listener, "GET", host, target);
    }

    @Test
    void freshTarball_canonicalPath_refusedByAge() throws Exception {
        Harness.Response r = get("npm.h.test", "/leftish/-/leftish-1.1.0.tgz");
        assertEquals(403, r.status(), r.body());
        assertTrue(r.header("X-Berth-Denial").contains("leftish@1.1.0 was published " + FRESH + ", less than 7 days ago"), r.header("X-Berth-Denial"));
        assertEquals(200, get("npm.h.test", "/leftish/-/leftish-1.0.0.tgz").status(), "an old version is served");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "/leftish/./-/leftish-1.1.0.tgz       | the path has a dot segment '.'",
            "//leftish/-/leftish-1.1.0.tgz        | the path has an empty segment ('//')",
            "/leftish//-/leftish-1.1.0.tgz        | the path has an empty segment ('//')",
            "/leftish/%2e/-/leftish-1.1.0.tgz     | the path has a dot segment '.'",
            "/leftish/%2E%2e/leftish/-/leftish-1.1.0.tgz | the path has a dot segment '..'",
            "/x/../leftish/-/leftish-1.1.0.tgz    | the path has a dot segment '..'",
            "/leftish%2f-%2fleftish-1.1.0.tgz     | the path has an escaped separator %2F",
            "/leftish/-%5Cleftish-1.1.0.tgz       | the path has an escaped separator %5C",
            "/leftish/-/leftish-1.1.0.tgz%0d%0aX-Evil:%201 | the path has an escaped control character %0D",
            "/leftish/-/leftish-1.1.0%00.tgz      | the path has an escaped control character %00",
            "/leftish/-/leftish-1.1.0.tgz%zz      | the path has a malformed escape at offset 28",
            "/leftish/-/leftish%252D1.1.0.tgz     | the path has a double-encoded escape %252D",
    })
    void nonCanonicalSpellingOfAFreshTarball_refusedWithReason_neverReachesTheUpstream(String target, String why) throws Exception {
        Harness.Response r = get("npm.h.test", target);
        assertEquals(403, r.status(), r.body());
        assertEquals("npm registry rules on 'npm.h.test' refuse a non-canonical request target: " + why
                + " (the rules check exactly what the upstream serves)", r.header("X-Berth-Denial"));
        assertFalse(seen.stream().anyMatch(x -> x.contains("1.1.0.tgz")), "a fresh tarball reached the upstream: " + seen);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"/leftish/-/leftish-1.1.0.tgz/", "/leftish/-/leftish%2D1.1.0.tgz", "/%6Ceftish/-/leftish-1.1.0.tgz"})
    void equivalentSpellingOfAFreshTarball_checkedAsTheTarball(String target) throws Exception {
        Harness.Response r = get("npm.h.test", target);
        assertEquals(403, r.status(), r.body());
        assertTrue(r.header("X-Berth-Denial").contains("leftish@1.1.0 was published"), r.header("X-Berth-Denial"));
        assertFalse(seen.stream().anyMatch(x -> x.contains("1.1.0.tgz")), "a fresh tarball reached the upstream: " + seen);
    }

    @Test
    void escapedUnreservedCharacters_decodedBeforeTheUpstream_soItServesWhatWasChecked() throws Exception {
        assertEquals(200, get("npm.h.test", "/leftish/-/leftish%2D1.0.0.tgz").status());
        assertTrue(seen.contains("GET npm.h.test/leftish/-/leftish-1.0.0.tgz"), seen.toString());
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
            "POST, /org/repo.git/git%2Dreceive%2Dpack",
            "POST, /org/repo.git/git-receive-pack/",
            "POST, /org/repo.git/GIT-RECEIVE-PACK",
            "GET,  /org/repo.git/info/refs?service=git%2Dreceive%2Dpack",
            "GET,  /org/repo.git/info/refs?service=git%252Dreceive%252Dpack",
            "GET,  /org/repo.git/info/refs/?service=git-receive-pack",
            "GET,  /org/repo.git/info/refs?x=1&service=git-receive-pack",
    })
    void gitPush_inAnySpelling_refused(String method, String target) throws Exception {
        Harness.Response r = request(listener, method, "git.h.test", target);
        assertEquals(403, r.status(), r.body());
        assertTrue(r.header("X-Berth-Denial").startsWith("git host 'git.h.test' accepts pushes from workspaces only to org/ok"),
                r.header("X-Berth-Denial"));
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"POST, /org/repo.git/git%252Dreceive%252Dpack", "GET,  /org/repo.git/info%252Frefs?service=git-receive-pack"})
    void gitPush_doubleEncodedPath_refusedAsNonCanonical_neverReachesTheUpstream(String method, String target) throws Exception {
        Harness.Response r = request(listener, method, "git.h.test", target);
        assertEquals(403, r.status(), r.body());
        assertTrue(r.header("X-Berth-Denial").contains("refuse a non-canonical request target: the path has a double-encoded escape %25"),
                r.header("X-Berth-Denial"));
        assertFalse(seen.stream().anyMatch(x -> x.contains("%25")), "a double-encoded path reached the upstream: " + seen);
    }

    @Test
    void gitFetch_andPushToAListedRepository_allowed() throws Exception {
        assertEquals(200, get("git.h.test", "/org/repo.git/info/refs?service=git-upload-pack").status());
        assertEquals(200, request(listener, "POST", "git.h.test", "/org/ok.git/git-receive-pack").status());
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"POST, /repos/org/repo/issues", "PUT, /repos/org/repo/contents/x", "PATCH, /repos/org/repo", "DELETE, /repos/org/repo",
            "POST, /user/repos", "POST, /graphql", "POST, /api/v3/repos/org/repo/pulls"})
    void restWrite_onTheBoundApiHost_outsideThePushRepos_refused(String method, String target) throws Exception {
        Harness.Response r = request(listener, method, "api.h.test", target);
        assertEquals(403, r.status(), r.body());
        assertTrue(r.header("X-Berth-Denial").startsWith("code host API 'api.h.test' takes writes from workspaces only under /repos/ of org/ok"),
                r.header("X-Berth-Denial"));
    }

    @Test
    void restRead_andWriteToAPushRepo_onTheApiHost_allowed() throws Exception {
        assertEquals(200, get("api.h.test", "/repos/org/repo").status());
        assertEquals(200, request(listener, "POST", "api.h.test", "/repos/org/ok/issues").status());
    }

    @Test
    void apiHost_withoutABoundToken_notCoveredByTheRule() {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(List.of("git.h.test", "api.h.test")))
                .registryRule(RegistryRule.of(RegistryRule.Kind.GIT, List.of("git.h.test"), null).withApiHosts(List.of("api.h.test"))).build();
        assertEquals(List.of(), cfg.registryRules().get(0).apiHosts(), "no token is bound to the API host: its writes need none from us");
    }

    @Test
    void pypiFileHost_freshFile_checkedAgainstTheIndexJsonApi() throws Exception {
        Harness.Response fresh = get("files.h.test", "/packages/req_lib-2.1.0-py3-none-any.whl");
        assertEquals(403, fresh.status(), fresh.body());
        assertTrue(fresh.header("X-Berth-Denial").contains("req-lib 2.1.0 was published " + FRESH), fresh.header("X-Berth-Denial"));
        assertTrue(seen.contains("GET meta.h.test/pypi/req-lib/json"), "the side fetch went to the index host: " + seen);
        assertFalse(seen.stream().anyMatch(x -> x.contains("files.h.test/pypi/")), "no JSON API request to the file host: " + seen);
        assertEquals(200, get("files.h.test", "/packages/req_lib-1.0.0-py3-none-any.whl").status());
    }

    @Test
    void craftedPypiFileName_failsFastWithAReason() throws Exception {
        long t0 = System.nanoTime();
        Harness.Response r = get("files.h.test", "/packages/req%0d%0aX:%20y-2.1.0-py3-none-any.whl");
        assertEquals(403, r.status(), r.body());
        assertTrue(r.header("X-Berth-Denial").contains("escaped control character %0D"), r.header("X-Berth-Denial"));
        Harness.Response odd = get("files.h.test", "/packages/req%20lib%22-2.1.0-py3-none-any.whl");
        assertNotEquals(-1, odd.status(), "an odd but printable name is answered, not hung");
    }

    @Test
    void presetHosts_coveredByTheRuleOfTheirKind() {
        for (String[] kp : new String[][] {{"NPM", "npm"}, {"PYPI", "pypi"}, {"MAVEN", "maven"}}) {
            List<String> rule = RegistryRule.of(RegistryRule.Kind.valueOf(kp[0]), null, null).hosts();
            for (Policy.Entry e : Presets.get(kp[1])) assertTrue(rule.contains(e.host().toString()), kp[1] + " rule misses " + e.host() + ": " + rule);
        }
        RegistryRule pypi = RegistryRule.of(RegistryRule.Kind.PYPI, null, null);
        String index = Presets.get("pypi").get(0).host().toString();
        for (Policy.Entry e : Presets.get("pypi")) assertEquals(index, pypi.metadataHost(e.host().toString()));
    }

    @Test
    void approvalGrant_neverWidensARunThatNarrowedItsEgress() throws Exception {
        Approvals a = proxy.approvals();
        Approvals.Check c = a.check("approve.h.test", port);
        assertTrue(c.approvable(), c.reason());
        a.grant("ws-h", null, c, Duration.ofHours(1), "test");
        Policy ws = ceiling;
        try (EgressProxy.Listener wide = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext("ws-h", "run-wide", ws, decisions::add, Set.of(), null, null));
             EgressProxy.Listener narrow = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                     new EgressContext("ws-h", "run-narrow", ws.narrow(Policy.of(List.of("narrow.h.test:" + port))), decisions::add, Set.of(), null,
                             Policy.of(List.of("narrow.h.test:" + port))))) {
            assertEquals(200, request(wide, "GET", "approve.h.test", "/x").status(), "the grant widens the workspace");
            Harness.Response r = request(narrow, "GET", "approve.h.test", "/x");
            assertEquals(403, r.status());
            assertTrue(r.header("X-Berth-Denial").endsWith("an approval grant does not apply: the run narrowed its egress and approve.h.test:" + port
                    + " is not in its narrowing"), r.header("X-Berth-Denial"));
            assertEquals(200, request(narrow, "GET", "narrow.h.test", "/x").status());
        }
    }
}
