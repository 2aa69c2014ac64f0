package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.berth.engine.spi.Resources;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Resources asked for against the tenant's default and ceiling and the machine's size: each refusal with its numbers. */
class ResourceCeilingTest {
    static final Tenant SMALL = new Tenant("small", Tenant.Quota.UNLIMITED, java.util.Set.of(),
            new Tenant.Sizes(new Resources(1, 256, 1024, 128), new Resources(2, 1024, 8192, 512)));
    static final int CPUS = 4;
    static final long MEMORY_MIB = 8192;

    static Stream<Arguments> refused() {
        return Stream.of(
                Arguments.of("vcpus above the ceiling", new Resources(3, 512, 1024, 128), "vcpus 3 is above the ceiling of 2 that the operator set for tenant 'small'"),
                Arguments.of("memory above the ceiling", new Resources(1, 2048, 1024, 128), "memory_mib 2048 is above the ceiling of 1024"),
                Arguments.of("disk above the ceiling", new Resources(1, 512, 9000, 128), "disk_mib 9000 is above the ceiling of 8192"),
                Arguments.of("pids above the ceiling", new Resources(1, 512, 1024, 513), "max_pids 513 is above the ceiling of 512"),
                Arguments.of("outside Berth's range", new Resources(1, 100, 1024, 128), "memory_mib 100 is outside 128..16384"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void validate_overACeiling_refusedWithTheNumbers(String name, Resources asked, String reason) {
        var e = assertThrows(EngineException.class, () -> DriverSelector.validate(SMALL, asked, CPUS, MEMORY_MIB));
        assertEquals(true, e.getMessage().contains(reason), e.getMessage());
    }

    @org.junit.jupiter.api.Test
    void validate_moreThanTheMachine_refusedWithItsSize() {
        Tenant big = new Tenant("big", Tenant.Quota.UNLIMITED, java.util.Set.of());
        var cpu = assertThrows(EngineException.class, () -> DriverSelector.validate(big, new Resources(8, 512, 1024, 128), CPUS, MEMORY_MIB));
        assertEquals("vcpus 8 is more than this machine has (4 CPUs)", cpu.getMessage());
        var mem = assertThrows(EngineException.class, () -> DriverSelector.validate(big, new Resources(1, 16000, 1024, 128), CPUS, MEMORY_MIB));
        assertEquals("memory_mib 16000 is more than this machine has (8192 MiB)", mem.getMessage());
        assertEquals(EngineException.Kind.LIMIT, mem.kind());
    }

    @org.junit.jupiter.api.Test
    void validate_nothingAsked_getsTheTenantsDefault() throws Exception {
        assertEquals(new Resources(1, 256, 1024, 128), DriverSelector.validate(SMALL, null, CPUS, MEMORY_MIB));
        assertEquals(Resources.DEFAULT, DriverSelector.validate(Tenant.LOCAL, null, CPUS, MEMORY_MIB));
    }
}
