package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 16, finding 1: a placeholder is substituted only where its binding says the credential goes (default
 * {@code Authorization}, including Basic; other headers only when configured). Anywhere else (a query, a path
 * segment, a Cookie, a custom header) the request is refused with a reason and never reaches the upstream, so an
 * origin that echoes the URL or a header cannot hand the real value back to the workspace.
 */
class CredentialPlacementTest extends CredentialFixtureTest {
    static final String GH_ONLY_AUTH = "credential 'github' is substituted only in header(s) Authorization";

    /** name, binding whose placeholder is used, path (PH = placeholder), header name (or null), header value, reason. */
    static Stream<Arguments> misplaced() {
        return Stream.of(
                Arguments.of("query", "github", "/anything?q=PH", null, null,
                        "credential placeholder in the request target is refused, never swapped: " + GH_ONLY_AUTH),
                Arguments.of("pathSegment", "github", "/repos/PH/echo", null, null,
                        "credential placeholder in the request target is refused, never swapped: " + GH_ONLY_AUTH),
                Arguments.of("cookie", "github", "/echo", "Cookie", "session=PH",
                        "credential placeholder in header 'Cookie' is refused, never swapped: " + GH_ONLY_AUTH),
                Arguments.of("customHeader", "github", "/echo", "X-Debug-Echo", "PH",
                        "credential placeholder in header 'X-Debug-Echo' is refused, never swapped: " + GH_ONLY_AUTH),
                Arguments.of("authorizationOfAHeaderOnlyBinding", "apikey", "/echo", "Authorization", "Bearer PH",
                        "credential placeholder in header 'Authorization' is refused, never swapped: credential 'apikey' is "
                                + "substituted only in header(s) X-Api-Key"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("misplaced")
    void placeholderOutsideItsBindingsHeaders_refused403WithReason_neverReachesUpstream(String name, String binding, String path,
                                                                                       String header, String value, String reason) throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of(binding));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            String ph = g.placeholder(binding);
            String host = binding.equals("apikey") ? "registry.cred.test" : "api.cred.test";
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://" + host + ":" + f.pA + path.replace("PH", ph)));
            if (header != null) b.header(header, value.replace("PH", ph));
            int before = f.seenRaw.size();
            HttpResponse<String> r = c.send(b.build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(403, r.statusCode(), r.body());
            assertEquals(reason, r.headers().firstValue("X-Berth-Denial").orElseThrow());
            Decision d = f.await(f.decisions, x -> !x.allowed() && x.reason().equals(reason));
            assertEquals("https", d.kind());
            assertEquals(before, f.seenRaw.size(), "a refused request reached the upstream: " + f.seenRaw);
            assertEquals(List.of(), g.uses());
        }
    }

    @Test
    void bindingWithConfiguredHeader_substitutedThere() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("apikey"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create("https://registry.cred.test:" + f.pA + "/key"))
                    .header("X-Api-Key", g.placeholder("apikey")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            assertEquals("real", r.headers().firstValue("X-Echo-Api-Key").orElseThrow());
            assertEquals(List.of(new CredentialUse("apikey", "registry.cred.test", 1)), g.uses());
        }
    }
}
