package dev.berth.proxy;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * Base of the test classes that run against one {@link CredentialFixture} (proxy with secret bindings, CA and
 * loopback upstreams), started once per class and closed after it.
 */
abstract class CredentialFixtureTest {
    @TempDir
    static Path tmp;
    static CredentialFixture f;

    @BeforeAll
    static void startFixture() throws Exception {
        f = new CredentialFixture(tmp);
    }

    @AfterAll
    static void stopFixture() {
        f.close();
    }
}
