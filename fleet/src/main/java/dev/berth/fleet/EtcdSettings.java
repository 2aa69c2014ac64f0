package dev.berth.fleet;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * How to reach etcd: its client URLs, the CA that signed its certificate (https endpoints), a user and password when
 * etcd's auth is on, and the time one request may take before the next endpoint is tried.
 */
public record EtcdSettings(List<URI> endpoints, Path caFile, String username, String password, Duration timeout) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(3);

    public EtcdSettings {
        endpoints = List.copyOf(endpoints);
        if (timeout == null) timeout = DEFAULT_TIMEOUT;
    }

    public static EtcdSettings plain(List<URI> endpoints) {
        return new EtcdSettings(endpoints, null, null, null, DEFAULT_TIMEOUT);
    }
}
