package dev.berth.proxy;

import dev.berth.proxy.net.Resolver;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test-only resolver: maps test names to fixed addresses (mostly loopback). Useless without
 * {@code unsafeAllowLoopbackUpstreams}, because loopback answers are otherwise refused. A name can
 * have a sequence of answers (first call, then later calls) to simulate DNS rebinding.
 */
final class TestResolver implements Resolver {
    private final Map<String, List<List<InetAddress>>> answers = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

    TestResolver map(String name, String... addrs) {
        answers.computeIfAbsent(name, k -> new ArrayList<>()).add(parse(addrs));
        return this;
    }

    private static List<InetAddress> parse(String... addrs) {
        List<InetAddress> out = new ArrayList<>();
        for (String a : addrs) {
            try {
                out.add(InetAddress.getByAddress(InetAddress.getByName(a).getAddress()));
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException(a, e);
            }
        }
        return out;
    }

    int calls(String name) {
        AtomicInteger n = calls.get(name);
        return n == null ? 0 : n.get();
    }

    @Override
    public List<InetAddress> resolve(String host) throws UnknownHostException {
        int n = calls.computeIfAbsent(host, k -> new AtomicInteger()).getAndIncrement();
        List<List<InetAddress>> seq = answers.get(host);
        if (seq == null) throw new UnknownHostException(host);
        return seq.get(Math.min(n, seq.size() - 1));
    }
}
