package dev.berth.schemas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The limits catalogue is the one source: every number a tool schema repeats, every limit a tool description states,
 * and the docs table agree with it. A failure names the limit, the file and both values.
 */
class LimitsCatalogueTest {
    private static final Path DOC = Path.of("..", "docs", "limits.md");

    private static JsonNode tool(String name) throws IOException {
        try (InputStream in = LimitsCatalogueTest.class.getClassLoader().getResourceAsStream("berth/tools/" + name + ".json")) {
            if (in == null) throw new IOException("no tool file berth/tools/" + name + ".json");
            return JsonMapper.builder().build().readTree(in);
        }
    }

    @Test
    void schemas_everyRepeatedNumber_equalsTheCatalogue() throws IOException {
        List<String> wrong = new ArrayList<>();
        for (Limits.Limit l : Limits.catalogue().all()) {
            for (Limits.SchemaRef ref : l.schema()) {
                JsonNode n = tool(ref.tool()).at(ref.at());
                if (!n.isIntegralNumber() || n.longValue() != l.value()) {
                    wrong.add(l.name() + " is " + l.value() + " but " + ref.tool() + ".json" + ref.at() + " is " + (n.isMissingNode() ? "missing" : n));
                }
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void descriptions_everyStatedLimit_saysTheCataloguesValue() throws IOException {
        List<String> wrong = new ArrayList<>();
        for (Limits.Limit l : Limits.catalogue().all()) {
            for (Limits.Stated s : l.stated()) {
                JsonNode n = tool(s.tool()).at(s.at());
                if (!n.isString() || !n.asString().contains(s.rendered(l))) {
                    wrong.add(l.name() + ": " + s.tool() + ".json" + s.at() + " does not say '" + s.rendered(l) + "'");
                }
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    void writeFile_contentChars_isBase64OfTheLargestWrite() {
        long bytes = Limits.value("write_file.content_bytes_max");
        assertEquals(4 * ((bytes + 2) / 3), Limits.value("write_file.content_chars_max"));
    }

    @Test
    void catalogue_everyLimit_hasAUnitAndAMeaning() {
        for (Limits.Limit l : Limits.catalogue().all()) {
            assertTrue(l.name().matches("[a-z_]+(\\.[a-z_]+)*"), l.name());
            assertTrue(!l.unit().isBlank() && l.meaning().endsWith("."), l.name() + ": unit '" + l.unit() + "', meaning '" + l.meaning() + "'");
            assertTrue(l.value() >= 0, l.name());
        }
    }

    @Test
    void docs_limitsPage_isTheGeneratedTable() throws IOException {
        String expected = Limits.catalogue().markdown();
        if (Boolean.getBoolean("berth.limits.regenerate")) Files.writeString(DOC, expected, StandardCharsets.UTF_8);
        String actual = Files.exists(DOC) ? Files.readString(DOC, StandardCharsets.UTF_8) : "(missing)";
        assertEquals(expected, actual, DOC + " differs from the catalogue; rerun with -Dberth.limits.regenerate=true");
    }
}
