package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 16, finding 2: a placeholder is honoured only on connections of the run it was minted for. The engine
 * attributes each connection to the run whose process tree opened it ({@link EgressContext#runId()}, null when no
 * run could be determined); a placeholder read out of another run's environment is refused with a reason.
 */
class RunIsolationTest extends CredentialFixtureTest {
    static Stream<Arguments> otherConnections() {
        return Stream.of(
                Arguments.of("sameWorkspaceOtherRun", "run-z",
                        "credential placeholder was minted for run 'run-a'; this connection belongs to run 'run-z'"),
                Arguments.of("sameWorkspaceNoRun", null, "credential placeholder of run 'run-a' is refused on a connection that belongs to"
                        + " no run (it was opened by a process outside every run's process tree)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("otherConnections")
    void placeholderOnAConnectionOfAnotherRun_refused403WithReason(String name, String runId, String reason) throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             EgressProxy.Listener other = f.proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                     new EgressContext("ws-a", runId, f.ceiling, f.decisions::add, Set.of("github")));
             HttpClient c = f.client(other, HttpClient.Version.HTTP_1_1)) {
            int before = f.seenAuth.size();
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create("https://api.cred.test:" + f.pA + "/steal"))
                    .header("Authorization", "Bearer " + g.placeholder("github")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(403, r.statusCode(), r.body());
            assertEquals(reason, r.headers().firstValue("X-Berth-Denial").orElseThrow());
            assertEquals(before, f.seenAuth.size(), "the refused request reached the upstream");
            assertEquals(List.of(), g.uses());
        }
    }
}
