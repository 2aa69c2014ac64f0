package dev.berth.schemas;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * The wire contract of Berth's MCP tools, read from the JSON files in {@code berth/tools/} (one file per tool, listed
 * in {@code index.txt}, shared definitions in {@code _defs.json}). The MCP server registers tools from it and tests
 * validate real results against it, so the files are the single source of truth. Immutable and thread-safe.
 */
public final class ToolCatalog {
    private static final String DIR = "berth/tools/";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** One tool: everything an MCP {@code tools/list} entry needs. Schemas are self-contained (with {@code $defs}). */
    public record ToolDef(String name, String title, String description, Map<String, Object> annotations,
                          Map<String, Object> inputSchema, Map<String, Object> outputSchema) {}

    private final Map<String, ToolDef> tools;

    private ToolCatalog(Map<String, ToolDef> tools) { this.tools = tools; }

    /** Loads the catalog from the classpath. */
    public static ToolCatalog load() {
        try {
            Map<String, Object> defs = read("_defs.json");
            Object sharedDefs = defs.get("$defs");
            Map<String, ToolDef> tools = new LinkedHashMap<>();
            for (String name : new String(resource("index.txt"), StandardCharsets.UTF_8).lines()
                    .map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).toList()) {
                Map<String, Object> t = read(name + ".json");
                if (!name.equals(t.get("name"))) throw new IllegalStateException(name + ".json names tool '" + t.get("name") + "'");
                tools.put(name, new ToolDef(name, (String) t.get("title"), (String) t.get("description"),
                        map(t.get("annotations")), withDefs(map(t.get("inputSchema")), sharedDefs),
                        withDefs(map(t.get("outputSchema")), sharedDefs)));
            }
            return new ToolCatalog(java.util.Collections.unmodifiableMap(tools));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the tool schemas: " + e.getMessage(), e);
        }
    }

    public List<ToolDef> tools() { return new ArrayList<>(tools.values()); }

    public ToolDef tool(String name) {
        ToolDef t = tools.get(name);
        if (t == null) throw new IllegalArgumentException("no tool '" + name + "' in the catalog");
        return t;
    }

    private static Map<String, Object> withDefs(Map<String, Object> schema, Object defs) {
        if (schema == null) return null;
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("$schema", "https://json-schema.org/draft/2020-12/schema");
        s.putAll(schema);
        if (JSON.writeValueAsString(schema).contains("#/$defs/")) s.put("$defs", defs);
        return s;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) { return (Map<String, Object>) o; }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> read(String file) throws IOException {
        return JSON.readValue(resource(file), LinkedHashMap.class);
    }

    private static byte[] resource(String file) throws IOException {
        try (InputStream in = ToolCatalog.class.getClassLoader().getResourceAsStream(DIR + file)) {
            if (in == null) throw new IOException("missing resource " + DIR + file);
            return in.readAllBytes();
        }
    }
}
