package dev.berth.engine.agent;

/** Part of a file read with FILE_READ: {@code fileSize} is the whole file's size, {@code data} what was read. */
public record FileChunk(long fileSize, int mode, byte[] data) {}
