package dev.berth.engine;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.workspace.DriverSelector;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.berth.engine.spi.IoLimits;
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

    /** A tenant whose workspaces default to 4 MiB/s read and have a ceiling of 8 MiB/s read and 1000 write ops/s. */
    static final Tenant IO = new Tenant("io", Tenant.Quota.UNLIMITED, java.util.Set.of(), new Tenant.Sizes(
            new Resources(1, 256, 1024, 128, new IoLimits(4 << 20, 0, 0, 1000)),
            new Resources(2, 1024, 8192, 512, new IoLimits(8 << 20, 0, 0, 1000))));

    @org.junit.jupiter.api.Test
    void validate_ioLimits_defaultCeilingAndRange() throws Exception {
        // nothing asked, or a direction not asked: the tenant's default for it
        assertEquals(new IoLimits(4 << 20, 0, 0, 1000), DriverSelector.validate(IO, null, CPUS, MEMORY_MIB).io());
        assertEquals(new IoLimits(6 << 20, 2 << 20, 0, 1000),
                DriverSelector.validate(IO, new Resources(1, 256, 1024, 128, new IoLimits(6 << 20, 2 << 20, 0, 0)), CPUS, MEMORY_MIB).io());
        var over = assertThrows(EngineException.class, () -> DriverSelector.validate(IO,
                new Resources(1, 256, 1024, 128, new IoLimits(16 << 20, 0, 0, 0)), CPUS, MEMORY_MIB));
        assertEquals(EngineException.Kind.LIMIT, over.kind());
        assertEquals(true, over.getMessage().contains("io_read_bps 16777216 is above the ceiling of 8388608 bytes/s"), over.getMessage());
        assertEquals(true, over.getMessage().contains("io_read_bps 8388608, io_write_iops 1000"), over.getMessage());
        var tiny = assertThrows(EngineException.class, () -> DriverSelector.validate(Tenant.LOCAL,
                new Resources(1, 256, 1024, 128, new IoLimits(1000, 0, 0, 0)), CPUS, MEMORY_MIB));
        assertEquals("io_read_bps 1000 is outside 65536..1099511627776 bytes/s (0: no limit)", tiny.getMessage());
        // no ceiling, no default: no limit
        assertEquals(IoLimits.NONE, DriverSelector.validate(Tenant.LOCAL, null, CPUS, MEMORY_MIB).io());
    }

    @org.junit.jupiter.api.Test
    void resources_writtenBeforeIoLimits_readWithNone() {
        var json = tools.jackson.databind.json.JsonMapper.builder().build();
        Resources r = json.readValue("{\"vcpus\":1,\"memoryMiB\":256,\"diskMiB\":64,\"maxPids\":64}", Resources.class);
        assertEquals(new Resources(1, 256, 64, 64), r);
        assertEquals(IoLimits.NONE, r.io());
        Resources io = new Resources(1, 256, 64, 64, new IoLimits(1, 2, 3, 4));
        assertEquals(io, json.readValue(json.writeValueAsString(io), Resources.class));
    }
}
