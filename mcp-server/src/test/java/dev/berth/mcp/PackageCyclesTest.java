package dev.berth.mcp;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * No package of mcp-server depends, through any chain, on itself: the composition root ({@code dev.berth.mcp})
 * sits on top, the command line, tool handlers, transports and the preview listener below it, the JSON-RPC boundary
 * at the bottom. Each package is its own slice, the root package included.
 */
class PackageCyclesTest {
    @Test
    void mcpServerPackages_haveNoCycle() {
        JavaClasses classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.berth.mcp");
        assertTrue(classes.size() > 50, "the importer found mcp-server's classes: " + classes.size());
        slices().matching("dev.berth.(**)").namingSlices("$1").should().beFreeOfCycles().check(classes);
    }
}
