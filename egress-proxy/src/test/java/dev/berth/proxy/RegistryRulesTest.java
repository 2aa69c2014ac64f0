package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 16, "Then" 1 (first part): package-aware registry rules. Registry and git hosts with a rule are intercepted
 * (no secret needed) and read-only for workspaces: publish, unpublish, login, token, owner and dist-tag endpoints
 * (npm), uploads (PyPI), deploys (Maven) and pushes to unlisted repositories (git) are refused with a reason and never
 * reach the origin; reads, npm audit and pushes to listed repositories go through.
 */
class RegistryRulesTest extends CredentialFixtureTest {
    static final String NPM = "npm registry 'npmreg.cred.test' is read-only for workspaces: ";
    static final String GIT = "git host 'git.cred.test' accepts pushes from workspaces only to org/allowed (registryRules.git.pushRepos): ";

    static Stream<Arguments> requests() {
        return Stream.of(
                Arguments.of("npm packument", "npmreg.cred.test", "GET", "/left-pad", 200, null),
                Arguments.of("npm tarball", "npmreg.cred.test", "GET", "/left-pad/-/left-pad-1.3.0.tgz", 200, null),
                Arguments.of("npm audit", "npmreg.cred.test", "POST", "/-/npm/v1/security/advisories/bulk", 200, null),
                Arguments.of("npm publish", "npmreg.cred.test", "PUT", "/left-pad", 403, NPM + "PUT /left-pad (publish) refused"),
                Arguments.of("npm unpublish", "npmreg.cred.test", "DELETE", "/left-pad/-rev/3-abc", 403,
                        NPM + "DELETE /left-pad/-rev/3-abc (unpublish or owner change) refused"),
                Arguments.of("npm login", "npmreg.cred.test", "PUT", "/-/user/org.couchdb.user:eve", 403,
                        NPM + "PUT /-/user/org.couchdb.user:eve (login) refused"),
                Arguments.of("npm token", "npmreg.cred.test", "POST", "/-/npm/v1/tokens", 403, NPM + "POST /-/npm/v1/tokens (token) refused"),
                Arguments.of("npm dist-tag", "npmreg.cred.test", "PUT", "/-/package/left-pad/dist-tags/latest", 403,
                        NPM + "PUT /-/package/left-pad/dist-tags/latest (dist-tag) refused"),
                Arguments.of("pypi upload", "pypi.cred.test", "POST", "/legacy/", 403,
                        "pypi registry 'pypi.cred.test' is read-only for workspaces: POST /legacy/ (upload) refused"),
                Arguments.of("pypi simple index", "pypi.cred.test", "GET", "/simple/requests/", 200, null),
                Arguments.of("maven deploy", "maven.cred.test", "PUT", "/com/x/y/1.0/y-1.0.jar", 403,
                        "maven registry 'maven.cred.test' is read-only for workspaces: PUT /com/x/y/1.0/y-1.0.jar (deploy) refused"),
                Arguments.of("git fetch refs", "git.cred.test", "GET", "/org/repo.git/info/refs?service=git-upload-pack", 200, null),
                Arguments.of("git push refs", "git.cred.test", "GET", "/org/repo.git/info/refs?service=git-receive-pack", 403,
                        GIT + "GET /org/repo.git/info/refs refused"),
                Arguments.of("git push pack", "git.cred.test", "POST", "/org/repo.git/git-receive-pack", 403,
                        GIT + "POST /org/repo.git/git-receive-pack refused"),
                Arguments.of("git push to listed repo", "git.cred.test", "POST", "/org/allowed.git/git-receive-pack", 200, null));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("requests")
    void registryRequest_decidedByItsRule(String name, String host, String method, String path, int status, String reason) throws Exception {
        try (HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            int before = f.seenRaw.size();
            HttpRequest.BodyPublisher body = method.equals("GET") ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString("{}");
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create("https://" + host + ":" + f.pA + path)).method(method, body).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(status, r.statusCode(), r.body());
            if (reason != null) {
                assertEquals(reason, r.headers().firstValue("X-Berth-Denial").orElseThrow());
                assertEquals(before, f.seenRaw.size(), "a refused request reached the registry");
                Decision d = f.await(f.decisions, x -> !x.allowed() && x.reason().equals(reason));
                assertEquals("https", d.kind());
            } else {
                assertEquals(before + 1, f.seenRaw.size());
            }
        }
    }
}
