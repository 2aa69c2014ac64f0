package dev.berth.proxy;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The proxy's packages form no cycle, and they form layers: the leaf packages (net, tls, http, policy, audit) and the
 * connection machinery (loop, session, credentials, supply, forward) never reach back into the root package, which is
 * the public API and wires the machinery; inside the machinery, session is the bottom and forward the top. Reads the
 * main classes only.
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

    @Test
    void machinery_rootPackage_notUsed() {
        noClasses().that().resideInAnyPackage("dev.berth.proxy.loop..", "dev.berth.proxy.session..",
                        "dev.berth.proxy.credentials..", "dev.berth.proxy.supply..", "dev.berth.proxy.forward..")
                .should().dependOnClassesThat().resideInAPackage("dev.berth.proxy")
                .check(CLASSES);
    }

    @Test
    void session_higherMachinery_notUsed() {
        noClasses().that().resideInAPackage("dev.berth.proxy.session..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.berth.proxy.credentials..", "dev.berth.proxy.supply..",
                        "dev.berth.proxy.forward..")
                .check(CLASSES);
    }

    @Test
    void credentialsAndSupply_forwarding_notUsed() {
        noClasses().that().resideInAnyPackage("dev.berth.proxy.credentials..", "dev.berth.proxy.supply..")
                .should().dependOnClassesThat().resideInAPackage("dev.berth.proxy.forward..")
                .check(CLASSES);
    }
}
