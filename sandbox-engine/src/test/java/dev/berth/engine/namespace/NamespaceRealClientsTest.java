package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Await;
import dev.berth.engine.Engine;
import dev.berth.engine.TestPki;
import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.PortExposure;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.contract.PortClient;
import dev.berth.engine.namespace.HostClients.Exec;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.ProxyConfig;
import dev.berth.proxy.net.Resolver;
import dev.berth.proxy.policy.InternalHosts;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.RegistryRule;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Issue 26 items 4 and 6 on the namespace level, through the engine and the egress proxy it embeds: the real package
 * managers of this machine install the acceptance corpus' projects ({@link Corpus}) from the real registries it
 * reaches, inside one workspace, and each project's own tests pass there; the same commands on the bare host give the
 * baseline each workspace time is set against (printed as {@code [real-clients]} lines; nothing asserts a time).
 *
 * <ul>
 *   <li>pnpm and yarn (installed in the workspace by npm, from the registry) install {@code node-app} (Express) from
 *   the npm registry this machine's npm is configured for, through the proxy's npm rule (intercepted, read-only: a
 *   publish with a token the workspace holds is refused with the reason); its {@code node --test} suite passes over
 *   {@code localhost}, and the app started as a dev server is reached through an exposed port.</li>
 *   <li>{@code mvn test} of {@code java-app} resolves its plugins and dependencies from the Maven repository this
 *   machine's Maven is configured for, through the proxy (a tunnel), and its JUnit test passes.</li>
 *   <li>{@code pip install} of {@code py-app}'s requirements from a PEP 503 index the test builds (wheels built by
 *   {@code pip wheel} from tiny source packages) served from a network namespace the test creates, under a named host
 *   listed in {@code internal_hosts} with the PyPI rule applied to it (a minimum release age hides the fresh
 *   release); its {@code unittest} suite passes.</li>
 *   <li>{@code go test} of {@code go-app} (Debian's golang, the dependency vendored, no module proxy).</li>
 * </ul>
 *
 * <p>No registry host is written here: the npm registry and CA file come from {@code npm config get}, the Maven
 * repository from Maven's settings (or its super POM), and each host is allowed with exactly the addresses it resolves
 * to on this machine (on these machines they resolve into a documentation range, which only {@code internal_hosts}
 * opens). Skipped, with the reason, where the host lacks a client or does not reach the registry.
 *
 * <p>Cost: one engine, one proxy, one workspace for the class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NamespaceRealClientsTest {
    static final String PNPM = "pnpm@9.15.9";
    static final String YARN = "yarn@1.22.22";
    /**
     * Installs pnpm and yarn with npm, then the app with each (fresh stores and caches), printing each step's time.
     * The same script runs in the workspace and on the host: {@code $1} is the base folder, {@code $REG} the registry,
     * {@code $NPM_CONFIG_CAFILE} the trust, and a proxy only where {@code $HTTPS_PROXY} names one.
     */
    static final String NODE_SCRIPT = """
            set -e
            B=$1
            ms() { echo $(( $(date +%s%N) / 1000000 )); }
            printf 'registry=%s\\nupdate-notifier=false\\n' "$REG" > "$B/.npmrc"
            t=$(ms); npm install --prefix "$B/tools" --no-audit --no-fund --loglevel=error PNPM YARN >/dev/null; echo "tools_ms=$(( $(ms) - t ))"
            cd "$B/pn"; t=$(ms); "$B/tools/node_modules/.bin/pnpm" install --store-dir "$B/pnpm-store" --reporter=silent; echo "pnpm_ms=$(( $(ms) - t ))"
            cd "$B/yn"; printf 'registry "%s"\\ncafile "%s"\\n' "$REG" "$NPM_CONFIG_CAFILE" > .yarnrc
            if [ -n "$HTTPS_PROXY" ]; then printf 'https-proxy "%s"\\n' "$HTTPS_PROXY" >> .yarnrc; fi
            t=$(ms); "$B/tools/node_modules/.bin/yarn" install --cache-folder "$B/yarn-cache" --non-interactive --no-progress --silent; echo "yarn_ms=$(( $(ms) - t ))"
            cd "$B/pn"; t=$(ms); node --test 2>&1 | tail -8; echo "test_ms=$(( $(ms) - t ))"
            echo "pnpm_express=$(node -p "require('$B/pn/node_modules/express/package.json').version")"
            echo "yarn_express=$(node -p "require('$B/yn/node_modules/express/package.json').version")"
            echo "yarn_packages=$(ls "$B/yn/node_modules" | wc -l)"
            """.replace("PNPM", PNPM).replace("YARN", YARN);
    /** The index's host name: the proxy's resolver maps it to the network namespace's address. */
    static final String INDEX_HOST = "pypi.berth-index.test";
    static final java.time.Instant OLD = java.time.Instant.parse("2020-03-04T05:06:07Z");
    static final java.time.Instant FRESH = java.time.Instant.now().minus(Duration.ofHours(2)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);

    Path dir;
    Path home;
    Engine engine;
    String ws;
    String registry;
    String npmHost;
    String cafile;
    String mavenRepo;
    Path mavenHome;
    NetnsHttpServer index;

    @BeforeAll
    void start() throws Exception {
        String why = NetnsHttpServer.missing();
        skipUnless(why == null, why);
        dir = Files.createTempDirectory("berth-real-clients-");
        // workspace sandboxes run as their own uid and must traverse it to their state
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        registry = HostClients.npmConfig("registry");
        skipUnless(registry != null, "no npm on the host, or no registry configured");
        if (!registry.endsWith("/")) registry += "/";
        npmHost = HostClients.host(registry);
        String ca = HostClients.npmConfig("cafile");
        cafile = ca != null && Files.isRegularFile(Path.of(ca)) ? ca : "/etc/ssl/certs/ca-certificates.crt";
        mavenHome = HostClients.mavenHome();
        skipUnless(mavenHome != null, "no mvn on the host");
        mavenRepo = HostClients.mavenRepository(mavenHome);
        skipUnless(mavenRepo != null && mavenRepo.startsWith("https://"), "Maven's settings name no https repository for central: " + mavenRepo);

        Path www = Files.createDirectories(dir.resolve("www"));
        PypiIndex.build(dir.resolve("pysrc"), www, OLD, FRESH);
        TestPki pki = TestPki.create();
        Path indexCa = pki.writeCaPem(dir.resolve("index-ca.pem"));
        pki.writeServerPem(dir.resolve("index.crt"), dir.resolve("index.key"), INDEX_HOST);
        index = NetnsHttpServer.start(www, dir.resolve("index.crt"), dir.resolve("index.key"), dir.resolve("index.log"));

        List<InternalHosts.Entry> internal = new ArrayList<>();
        List<String> allow = new ArrayList<>();
        for (String h : new java.util.LinkedHashSet<>(List.of(npmHost, HostClients.host(mavenRepo)))) {
            List<InternalHosts.Range> ranges = new ArrayList<>();
            for (InetAddress a : InetAddress.getAllByName(h)) {
                InternalHosts.Range r = InternalHosts.Range.parse(a.getHostAddress() + (a instanceof Inet4Address ? "/32" : "/128"));
                if (!ranges.contains(r)) ranges.add(r);
            }
            internal.add(new InternalHosts.Entry(h, ranges, "internal_hosts[" + internal.size() + "]"));
            allow.add(h + ":443");
        }
        internal.add(new InternalHosts.Entry(INDEX_HOST, List.of(InternalHosts.Range.parse(index.range)), "internal_hosts[" + internal.size() + "]"));
        allow.add(INDEX_HOST + ":" + NetnsHttpServer.PORT);
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(allow)).internalHosts(InternalHosts.of(internal))
                .upstreamTrustFiles(List.of(Path.of(cafile), indexCa)).tlsPorts(java.util.Set.of(443, NetnsHttpServer.PORT))
                .registryRule(RegistryRule.of(RegistryRule.Kind.NPM, List.of(npmHost), null))
                .registryRule(RegistryRule.of(RegistryRule.Kind.PYPI, List.of(INDEX_HOST), null).withMinReleaseAge(Duration.ofDays(7), null))
                .headerTimeout(Duration.ofSeconds(60))
                .build();
        InetAddress indexAddress = InetAddress.getByName(index.address);
        Resolver system = Resolver.system();
        EgressProxy proxy = EgressProxy.builder(cfg).caDirectory(Files.createDirectories(dir.resolve("ca")))
                .resolver(h -> h.equals(INDEX_HOST) ? List.of(indexAddress) : system.resolve(h)).start();
        home = Files.createDirectories(dir.resolve("home"));
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withEgress(new EgressSettings(proxy, cfg.ceiling())));
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("real-clients")).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        try {
            if (engine != null) engine.close();
        } finally {
            if (index != null) index.close();
            if (dir != null) dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    /** An assumption whose reason is also printed (an aborted class lifecycle shows no reason in Surefire's report). */
    static void skipUnless(boolean holds, String why) {
        if (!holds) System.out.println("[real-clients] skipped: " + why);
        assumeTrue(holds, why);
    }

    RunResult sh(String cmd, Map<String, String> env, int timeoutS) throws Exception {
        return engine.run(Tenant.LOCAL, new RunRequest(ws, cmd, null, env, timeoutS, null, null), OutputListener.NONE);
    }

    void write(String path, String content) throws Exception {
        engine.writeFile(Tenant.LOCAL, ws, path, content.getBytes(StandardCharsets.UTF_8), false, null);
    }

    static long figure(String out, String key) {
        return out.lines().filter(l -> l.startsWith(key + "=")).mapToLong(l -> Long.parseLong(l.substring(key.length() + 1).strip()))
                .findFirst().orElse(-1);
    }

    static void report(String what, long wsMs, long hostMs) {
        System.out.printf("[real-clients] %s: workspace %d ms, bare host %d ms, ratio %.2f%n", what, wsMs, hostMs, (double) wsMs / hostMs);
    }

    @Test
    @Order(1)
    void pnpmAndYarn_installFromTheMachinesNpmRegistry_throughTheNpmRule_appTestsPass() throws Exception {
        // the bare host first, fresh caches, no proxy
        Path hostBase = Files.createDirectories(dir.resolve("host-node"));
        for (String p : List.of("pn", "yn")) Corpus.copy("node-app", hostBase.resolve(p));
        Exec host = HostClients.exec(hostBase, 900, Map.of("REG", registry, "NPM_CONFIG_CAFILE", cafile, "HOME", hostBase.toString()),
                "sh", "-c", NODE_SCRIPT, "sh", hostBase.toString());
        skipUnless(host.rc() == 0, "pnpm/yarn installs on the bare host failed, so the registry is not usable from here: " + host.out());

        for (String p : List.of("pn", "yn")) Corpus.upload(engine, ws, "node-app", "/workspace/node/" + p);
        RunResult r = sh("sh -c '" + NODE_SCRIPT.replace("'", "'\\''") + "' sh /workspace/node",
                Map.of("REG", registry, "HOME", "/workspace/node"), 900);
        String out = r.stdout();
        assertEquals(0, r.exitCode(), r.toString());
        assertTrue(out.contains("pnpm_express=4.17.1") && out.contains("yarn_express=4.17.1"), r.toString());
        assertTrue(out.contains("# pass 2") && out.contains("# fail 0"), "the app's test suite over localhost: " + r);
        assertTrue(r.egressDenied().isEmpty(), "nothing refused (no connection-rate or quota refusal): " + r.egressDenied());
        for (String step : List.of("tools", "pnpm", "yarn", "test")) {
            report(step.equals("tools") ? "npm install " + PNPM + " " + YARN : step.equals("test") ? "node --test (the app's suite)"
                    : step + " install of express 4.17.1 (" + figure(out, "yarn_packages") + " packages)", figure(out, step + "_ms"), figure(host.out(), step + "_ms"));
        }

        // the npm rule holds for pnpm too: a publish with a token the workspace holds never reaches the registry
        RunResult publish = sh("cd /workspace/node/pn && printf '//%s/:_authToken=stolen\\n' \"$(echo \"$REG\" | sed 's|^https://||; s|/$||')\" >> .npmrc"
                + " && /workspace/node/tools/node_modules/.bin/pnpm publish --no-git-checks 2>&1; echo exit=$?",
                Map.of("REG", registry, "HOME", "/workspace/node"), 300);
        assertTrue(publish.stdout().trim().endsWith("exit=1"), publish.toString());
        assertTrue(publish.egressDenied().stream().anyMatch(d -> d.host().equals(npmHost)
                && d.reason().startsWith("npm registry '" + npmHost + "' is read-only for workspaces: PUT /real-app")), publish.toString());
    }

    @Test
    @Order(2)
    void devServer_startedInTheWorkspace_reachedThroughAnExposedPort() throws Exception {
        RunResult has = sh("test -d /workspace/node/pn/node_modules/express && echo ok", Map.of(), 60);
        skipUnless(has.stdout().contains("ok"), "the pnpm install did not run");
        engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "cd /workspace/node/pn && PORT=3000 exec node server.js", null, null, 600, null, null));
        RunResult up = sh("for i in $(seq 1 600); do node -e \"require('http').get('http://localhost:3000/health', r => process.exit(r.statusCode === 200 ? 0 : 1))"
                + ".on('error', () => process.exit(1))\" && echo up && exit 0; sleep 0.1; done; exit 1", Map.of(), 120);
        assertEquals("up\n", up.stdout(), up.toString());
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, 3000, "link", 600L);
        String page = PortClient.get(engine, e, "localhost:3000", "/health");
        assertTrue(page.startsWith("HTTP/1.") && page.contains(" 200 ") && page.endsWith("{\"ok\":true,\"express\":\"4.17.1\"}"), page);
        engine.ports().unexpose(Tenant.LOCAL, ws, 3000);
    }

    @Test
    @Order(3)
    void mvnTest_resolvesFromTheMachinesMavenRepository_throughTheProxy_moduleTestsPass() throws Exception {
        String javaHome = System.getProperty("java.home");
        Path trust = Path.of("/etc/ssl/certs/java/cacerts");
        String opts = "--sun-misc-unsafe-memory-access=allow" + (Files.isRegularFile(trust) ? " -Djavax.net.ssl.trustStore=TRUST" : "");
        String mvn = " -B -ntp -Dstyle.color=never -s ../settings.xml test";
        // the bare host: the same module, an empty local repository, no proxy
        Path hostApp = dir.resolve("host-mvn/app");
        Corpus.copy("java-app", hostApp);
        Files.writeString(hostApp.getParent().resolve("settings.xml"), MavenSettings.settings(hostApp.getParent().resolve("m2").toString(), null, mavenRepo));
        Exec host = HostClients.exec(hostApp, 900, Map.of("JAVA_HOME", javaHome, "MAVEN_OPTS", opts.replace("TRUST", trust.toString())),
                "sh", "-c", "mvn" + mvn);
        skipUnless(host.rc() == 0, "mvn test on the bare host failed, so the repository is not usable from here: " + host.out());

        Corpus.upload(engine, ws, "java-app", "/workspace/mvn/app");
        URI p = URI.create(sh("printf %s \"$HTTPS_PROXY\"", Map.of(), 60).stdout());
        write("/workspace/mvn/settings.xml", MavenSettings.settings("/workspace/mvn/m2", p.getHost() + ":" + p.getPort(), mavenRepo));
        if (Files.isRegularFile(trust)) engine.writeFile(Tenant.LOCAL, ws, "/workspace/mvn/cacerts", Files.readAllBytes(trust), false, null);
        // Debian's Maven keeps bin/m2.conf and conf/ as links into /etc/maven, which the workspace's /etc does not have:
        // a MAVEN_HOME with the same binaries and the packaged configuration
        write("/workspace/mvn/maven/bin/m2.conf", Files.readString(mavenHome.resolve("bin/m2.conf")));
        write("/workspace/mvn/maven/conf/logging/simplelogger.properties", Files.readString(mavenHome.resolve("conf/logging/simplelogger.properties")));
        RunResult r = sh("cp " + mavenHome + "/bin/mvn /workspace/mvn/maven/bin/ && ln -sf " + mavenHome + "/boot " + mavenHome + "/lib /workspace/mvn/maven/"
                        + " && cd /workspace/mvn/app && s=$(date +%s%N); /workspace/mvn/maven/bin/mvn" + mvn + " > ../mvn.log 2>&1; rc=$?; e=$(date +%s%N);"
                        + " grep -E 'Tests run:|BUILD|ERROR' ../mvn.log | tail -20; echo \"mvn_ms=$(( (e - s) / 1000000 ))\";"
                        + " $JAVA_HOME/bin/java -cp target/classes:$(find /workspace/mvn/m2 -name 'commons-lang3-*.jar' | head -1) demo.Main; exit $rc",
                Map.of("JAVA_HOME", javaHome, "MAVEN_OPTS", opts.replace("TRUST", "/workspace/mvn/cacerts")), 900);
        assertEquals(0, r.exitCode(), r.toString());
        assertTrue(r.stdout().contains("Tests run: 1, Failures: 0, Errors: 0, Skipped: 0") && r.stdout().contains("BUILD SUCCESS"), r.toString());
        assertTrue(r.stdout().trim().endsWith("Hello from Berth"), r.toString());
        assertTrue(r.egressDenied().isEmpty(), r.egressDenied().toString());
        report("mvn test of java-app (plugins, commons-lang3 and JUnit from an empty local repository)", figure(r.stdout(), "mvn_ms"), host.ms());
    }

    @Test
    @Order(4)
    void pipInstall_fromALocalIndexOnAnInternalHost_throughThePypiRule_packageTestsPass() throws Exception {
        String pip = "/usr/bin/python3 -m pip install -q --no-cache-dir --disable-pip-version-check --target site -r requirements.txt";
        String unittest = "PYTHONPATH=site:. /usr/bin/python3 -m unittest discover -s tests -t . 2>&1 | tail -3";
        Path hostApp = dir.resolve("host-py");
        Corpus.copy("py-app", hostApp);
        Exec host = HostClients.exec(hostApp, 300, Map.of("PIP_BREAK_SYSTEM_PACKAGES", "1"), "sh", "-c", pip
                + " --index-url https://" + index.address + ":" + NetnsHttpServer.PORT + "/simple/ --trusted-host " + index.address);
        assertEquals(0, host.rc(), host.out());
        Exec hostTests = HostClients.exec(hostApp, 300, Map.of(), "sh", "-c", unittest);

        Corpus.upload(engine, ws, "py-app", "/workspace/py");
        RunResult r = sh("cd /workspace/py && s=$(date +%s%N); " + pip + " --index-url https://" + INDEX_HOST + ":" + NetnsHttpServer.PORT
                        + "/simple/ 2>&1; e=$(date +%s%N); echo \"pip_ms=$(( (e - s) / 1000000 ))\";"
                        + " s=$(date +%s%N); " + unittest + "; e=$(date +%s%N); echo \"unittest_ms=$(( (e - s) / 1000000 ))\";"
                        + " PYTHONPATH=site /usr/bin/python3 -c 'import berth_greet; print(berth_greet.greet())'",
                Map.of("PIP_BREAK_SYSTEM_PACKAGES", "1"), 300);
        assertEquals(0, r.exitCode(), r.toString());
        assertTrue(r.stdout().contains("Ran 2 tests") && r.stdout().contains("\nOK\n"), "py-app's unittest suite: " + r);
        assertTrue(r.stdout().trim().endsWith("hello from berth-greet 1.0.0 with berth-util 1.0.0"), r.toString());
        assertTrue(r.egressFiltered().toString().contains("berth-greet 2.0.0 was published " + FRESH + ", less than 7 days ago"), r.toString());
        report("pip install of py-app's requirements (2 wheels) from a local index", figure(r.stdout(), "pip_ms"), host.ms());
        report("python3 -m unittest (py-app's suite)", figure(r.stdout(), "unittest_ms"), hostTests.ms());
    }

    @Test
    @Order(5)
    void goTest_vendoredModule_buildsAndPassesOffline() throws Exception {
        skipUnless(Files.isExecutable(Path.of("/usr/bin/go")), "no Debian golang on the host (/usr/bin/go)");
        String go = "go test -count=1 ./... 2>&1 | tail -5";
        Path hostApp = dir.resolve("host-go/app");
        Corpus.copy("go-app", hostApp);
        Path hostGo = hostApp.getParent();
        Exec host = HostClients.exec(hostApp, 600, Map.of("GOFLAGS", "-mod=vendor", "GOPROXY", "off", "GOCACHE", hostGo.resolve("cache").toString(),
                "GOPATH", hostGo.resolve("path").toString(), "HOME", hostGo.toString()), "sh", "-c", go);
        assertEquals(0, host.rc(), host.out());

        Corpus.upload(engine, ws, "go-app", "/workspace/go/app");
        RunResult r = sh("cd /workspace/go/app && s=$(date +%s%N); " + go + "; e=$(date +%s%N); echo \"go_ms=$(( (e - s) / 1000000 ))\"",
                Map.of("GOFLAGS", "-mod=vendor", "GOPROXY", "off", "GOCACHE", "/workspace/go/cache", "GOPATH", "/workspace/go/path",
                        "HOME", "/workspace/go"), 600);
        assertEquals(0, r.exitCode(), r.toString());
        assertTrue(r.stdout().startsWith("ok  \texample.org/berth/goapp"), r.toString());
        report("go test of go-app (vendored; an empty build cache)", figure(r.stdout(), "go_ms"), host.ms());
    }
}
