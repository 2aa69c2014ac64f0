package dev.berth.engine.api;

/**
 * Part or all of a file read from a workspace.
 *
 * @param size      the whole file's size in bytes
 * @param offset    where {@code data} starts
 * @param truncated more of the file follows {@code data} (read again from offset + data.length)
 */
public record FileContent(String path, long size, long offset, byte[] data, boolean truncated, int mode) {}
