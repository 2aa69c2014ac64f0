package dev.berth.mcp;

import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.berth.schemas.ToolCatalog;
import java.util.List;
import tools.jackson.databind.JsonNode;

/** Validates real tool results against the output schemas in tool-schemas/ (independently of the SDKs' checks). */
final class SchemaCheck {
    private static final SchemaRegistry REGISTRY = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
    private static final ToolCatalog CATALOG = ToolCatalog.load();

    private SchemaCheck() {}

    /** Calls {@code tool} through {@code b}, asserts it succeeded and its structured result fits the schema; returns that result. */
    static JsonNode ok(McpBridge b, String tool, java.util.Map<String, Object> args) throws Exception {
        JsonNode r = b.call(tool, args);
        org.junit.jupiter.api.Assertions.assertFalse(r.path("isError").asBoolean(), () -> tool + " failed: " + r);
        JsonNode sc = r.path("structuredContent");
        assertValid(tool, sc);
        return sc;
    }

    /** Throws AssertionError listing every violation of {@code tool}'s output schema. */
    static void assertValid(String tool, JsonNode structuredContent) {
        JsonNode schemaNode = McpBridge.JSON.valueToTree(CATALOG.tool(tool).outputSchema());
        Schema schema = REGISTRY.getSchema(schemaNode);
        List<com.networknt.schema.Error> errors = schema.validate(structuredContent);
        if (!errors.isEmpty()) throw new AssertionError(tool + " result breaks its output schema: " + errors + "\n" + structuredContent);
    }
}
