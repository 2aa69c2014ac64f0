package dev.berth.proxy;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The proxy's packages form no cycle, and the leaf packages (net, tls, http, policy, audit) never reach back into the
 * root package, where the connection machinery and its configuration live. Reads the main classes only.
 */
class PackageCyclesTest {
    private static final JavaClasses CLASSES = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.berth.proxy");

    @Test
    void packages_anyCycle_fails() {
        // one slice per package, the root package included
        slices().matching("(**)").should().beFreeOfCycles().check(CLASSES);
    }

    @Test
    void leafPackages_rootPackage_notUsed() {
        noClasses().that().resideInAnyPackage("dev.berth.proxy.net..", "dev.berth.proxy.tls..", "dev.berth.proxy.http..",
                        "dev.berth.proxy.policy..", "dev.berth.proxy.audit..")
                .should().dependOnClassesThat().resideInAPackage("dev.berth.proxy")
                .check(CLASSES);
    }
}
