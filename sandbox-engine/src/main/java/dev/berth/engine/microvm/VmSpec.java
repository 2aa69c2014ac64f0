package dev.berth.engine.microvm;

import java.io.IOException;
import dev.berth.engine.spi.MetaFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Everything needed to start QEMU again for a saved machine: a restore must use the same kernel, initramfs,
 * memory size, vCPU count and RAM backing it was saved with. Written as a {@link MetaFile} (atomic, versioned,
 * checksummed, size-capped) named {@code vm.json} in a workspace state directory and {@code snapshot.json} in a
 * snapshot directory.
 *
 * @param memPath   file backing guest RAM
 * @param memShared {@code true}: RAM lives in {@code memPath} (share=on) and is left out of the migration stream
 *                  (x-ignore-shared); {@code false}: {@code memPath} is a snapshot's RAM file mapped copy-on-write
 *                  (share=off), so the stream carries every page the machine changed
 * @param stateFile device (+ private RAM) state to restore with {@code -incoming}, or {@code null}: boot cold
 * @param disk      a snapshot's disk: its top layer ({@code layers/d-<id>.qcow2}, see {@link DiskLayers}), or
 *                  {@code null}: {@code data.qcow2} in the same directory (a workspace's own disk; a snapshot
 *                  written before layers)
 * @param runAs     {@code UID:GID} the image config's {@code User} resolved to (the guest's agent runs every command
 *                  as it: kernel command line {@code berth.run_as}), or {@code null}: root. A spec written before it
 *                  has none
 */
record VmSpec(String imageId, String kernel, String initramfs, String baseDisk, int memoryMiB, int vcpus,
              String memPath, boolean memShared, String stateFile, int proxyPort, String disk, String runAs) {

    VmSpec(String imageId, String kernel, String initramfs, String baseDisk, int memoryMiB, int vcpus,
           String memPath, boolean memShared, String stateFile, int proxyPort) {
        this(imageId, kernel, initramfs, baseDisk, memoryMiB, vcpus, memPath, memShared, stateFile, proxyPort, null, null);
    }

    static final String WORKSPACE_FILE = "vm.json";
    static final String SNAPSHOT_FILE = "snapshot.json";
    static final String KIND = "vmspec";
    /**
     * 3: a snapshot's spec may name its disk as a shared layer ({@code disk}) and its RAM as a layer file of its
     * own {@code layers/} directory. 2: a spec that names a state file has a {@link ParkManifest} beside it, and resume refuses the state without
     * one. 1: the first version in the MetaFile format. Before it: plain JSON. Versions 1 and plain JSON are still
     * read (their parked states resume unverified, as they were written before manifests existed).
     */
    static final int VERSION = 3;
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    VmSpec withState(String state) {
        return new VmSpec(imageId, kernel, initramfs, baseDisk, memoryMiB, vcpus, memPath, memShared, state, proxyPort, disk, runAs);
    }

    VmSpec withDisk(String layer) {
        return new VmSpec(imageId, kernel, initramfs, baseDisk, memoryMiB, vcpus, memPath, memShared, stateFile, proxyPort, layer, runAs);
    }

    VmSpec withMemory(String path, boolean shared) {
        return new VmSpec(imageId, kernel, initramfs, baseDisk, memoryMiB, vcpus, path, shared, stateFile, proxyPort, disk, runAs);
    }

    /**
     * Reads a spec written by {@link #write} (a {@link MetaFile} of kind {@value #KIND}), or the plain JSON that
     * builds before format version 1 wrote (warm bases and parked workspaces made by them stay usable).
     */
    static VmSpec read(Path file) throws IOException {
        try {
            String json = MetaFile.looksLikeMetaFile(file) ? MetaFile.read(file, KIND, 1, VERSION) : Files.readString(file);
            return JSON.readValue(json, VmSpec.class);
        } catch (RuntimeException e) {
            throw new IOException("unreadable " + file + ": " + e.getMessage(), e);
        }
    }

    /** Whether the spec in {@code file} was written by a build whose parks write a manifest. */
    static boolean promisesManifest(Path file) throws IOException {
        return MetaFile.version(file) >= 2;
    }

    /** Writes atomically (temporary file, fsync, rename, directory fsync), checksummed and versioned. */
    void write(Path file) throws IOException {
        MetaFile.write(file, KIND, VERSION, JSON.writeValueAsString(this));
    }

    static void fsync(Path p) throws IOException {
        if (Files.isDirectory(p)) {
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) { ch.force(true); }
            catch (IOException ignored) { /* some filesystems refuse directory fsync */ }
        } else {
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) { ch.force(true); }
        }
    }
}
