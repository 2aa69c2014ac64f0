package dev.berth.proxy.policy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Named allowlist bundles for common package ecosystems. Kept deliberately narrow: exact hosts
 * the tools actually contact, port 443 only, except Debian mirrors which are commonly plain
 * HTTP (apt verifies signatures, so port 80 is named explicitly there).
 */
public final class Presets {
    private Presets() {}

    private static final Map<String, List<String>> PRESETS = new LinkedHashMap<>();

    static {
        PRESETS.put("npm", List.of("registry.npmjs.org", "registry.yarnpkg.com"));
        PRESETS.put("pypi", List.of("pypi.org", "files.pythonhosted.org"));
        PRESETS.put("maven", List.of("repo.maven.apache.org", "repo1.maven.org"));
        PRESETS.put("github", List.of("github.com", "api.github.com", "codeload.github.com",
                "objects.githubusercontent.com", "raw.githubusercontent.com"));
        PRESETS.put("debian", List.of("deb.debian.org:80,443", "security.debian.org:80,443"));
        PRESETS.put("crates", List.of("crates.io", "static.crates.io", "index.crates.io"));
        PRESETS.put("golang", List.of("proxy.golang.org", "sum.golang.org"));
    }

    /** Entries for a preset, or null if unknown. */
    public static List<Policy.Entry> get(String name) {
        List<String> specs = PRESETS.get(name);
        return specs == null ? null : Policy.of(specs).entries();
    }

    public static Set<String> names() {
        return PRESETS.keySet();
    }
}
