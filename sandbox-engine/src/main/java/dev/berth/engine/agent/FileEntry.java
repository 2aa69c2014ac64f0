package dev.berth.engine.agent;

/** One directory entry from FILE_LIST. {@code kind} is 'f', 'd', 'l' or 'o'. */
public record FileEntry(String name, char kind, long size, int mode, long mtimeSeconds) {}
