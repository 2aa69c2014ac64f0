package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import dev.berth.engine.EgressFixture;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.RecipeBuild;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.image.ImageException;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.OciFixture;
import dev.berth.engine.image.Recipe;
import dev.berth.engine.spi.Resources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A recipe build is held to the egress rules: its steps reach a loopback HTTP server through the real egress proxy
 * only when the recipe's {@code allow} (under the operator's ceiling) names it; a refused fetch stops the build with
 * the proxy's reason. busybox {@code wget} in the busybox test image, going through the workspace's proxy.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RecipeEgressTest {
    private static final Resources SMALL = new Resources(1, 256, 64, 256);
    private HttpServer upstream;
    private int port;
    private Path home;
    private Engine engine;
    private OciFixture oci;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        upstream = EgressFixture.upstream(path -> "echo fetched " + path + " through the proxy\n");
        port = upstream.getAddress().getPort();
        home = Files.createTempDirectory("berth-recipe-egress-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        NamespaceDriver d = new NamespaceDriver(home);
        assumeTrue(d.probe().available(), () -> d.probe().reason());
        // the operator's ceiling allows both hosts; each recipe narrows it to what it names
        engine = Engine.start(EngineConfig.defaults(home, List.of(d))
                .withEgress(EgressFixture.proxy(List.of("pkgs.test:" + port, "other.test:" + port))));
        oci = new OciFixture(home.resolve("oci"));
        engine.images().importFrom(oci.busyboxLayout() + ":" + OciFixture.TAG, "tiny", ImportLimits.DEFAULT, l -> { });
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (oci != null) oci.close();
        if (upstream != null) upstream.stop(0);
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    private Recipe recipe(String allow) throws ImageException {
        return Recipe.parse("""
                {"berth_recipe": 1, "base": "tiny", "allow": ["%s"],
                 "steps": [{"name": "fetch", "run": "busybox wget -q -O /bin/fetched http://pkgs.test:%d/tool && busybox chmod 755 /bin/fetched"}]}
                """.formatted(allow, port), "inline");
    }

    @Test
    void allowedFetch_landsInTheImage() throws Exception {
        new RecipeBuild(engine, Tenant.LOCAL, SMALL, 120).build(recipe("pkgs.test:" + port), "fetched", "recipe:inline",
                ImportLimits.DEFAULT, l -> { });
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, "fetched")).workspace().id();
        var r = engine.run(Tenant.LOCAL, new RunRequest(ws, "fetched", null, Map.of(), 60, null, null), OutputListener.NONE);
        assertEquals("fetched /tool through the proxy", r.stdout().strip(), r.toString());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
    }

    @Test
    void fetchOutsideTheRecipesAllowlist_stopsTheBuild_withTheProxysReason() throws Exception {
        var e = assertThrows(ImageException.class, () -> new RecipeBuild(engine, Tenant.LOCAL, SMALL, 120)
                .build(recipe("other.test:" + port), "not-fetched", "recipe:inline", ImportLimits.DEFAULT, l -> { }));
        assertTrue(e.getMessage().contains("step 1/1 'fetch' failed") && e.getMessage().contains("egress denied: pkgs.test:" + port),
                e.getMessage());
        assertTrue(engine.images().digestOf("not-fetched").isEmpty());
    }
}
