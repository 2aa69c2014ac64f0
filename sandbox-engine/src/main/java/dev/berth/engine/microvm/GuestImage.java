package dev.berth.engine.microvm;

import java.nio.file.Path;

/**
 * A bootable guest: kernel, uncompressed initramfs (busybox, modules, /init, agent) and, for the developer image,
 * a read-only base root disk. Every path lives in a versioned image cache directory and is never modified.
 *
 * @param id        content-derived version, e.g. {@code test-3f2a...}
 * @param baseDisk  read-only ext4 root for the developer image, {@code null} for the test image
 */
public record GuestImage(String id, Path kernel, Path initramfs, Path baseDisk) {}
