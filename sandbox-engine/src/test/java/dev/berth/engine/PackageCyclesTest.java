package dev.berth.engine;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The engine's packages form no cycle, and the engine's audit and metrics read the proxy only through its event
 * boundary ({@code dev.berth.proxy.audit}). Reads the main classes only. Copy this class into another module to hold
 * it to the same rule.
 */
class PackageCyclesTest {
    /**
     * Packages left out of the cycle check: none. The root package is the engine's front ({@code Engine} and the
     * services it hands out), its request and result records live in {@code api}, and the internal packages speak
     * {@code api} only, so the front sits on top and nothing points back at it. Never grow this list.
     */
    private static final Set<String> KNOWN_EXCEPTIONS = Set.of();

    private static final JavaClasses CLASSES = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.berth.engine");

    @Test
    void packages_anyCycle_fails() {
        // one slice per package, the root package included
        slices().matching("(**)")
                .that(DescribedPredicate.describe("are not a known exception", s -> !KNOWN_EXCEPTIONS.contains(s.getNamePart(1))))
                .should().beFreeOfCycles().check(CLASSES);
    }

    @Test
    void internals_engineFront_notUsed() {
        noClasses().that().resideInAPackage("dev.berth.engine.*..")
                .should().dependOnClassesThat().resideInAPackage("dev.berth.engine")
                .check(CLASSES);
    }

    @Test
    void auditAndMetrics_proxyInternals_notUsed() {
        noClasses().that().resideInAnyPackage("dev.berth.engine.audit..", "dev.berth.engine.metrics..")
                .should().dependOnClassesThat(resideInAPackage("dev.berth.proxy..").and(resideOutsideOfPackage("dev.berth.proxy.audit..")))
                .check(CLASSES);
    }
}
