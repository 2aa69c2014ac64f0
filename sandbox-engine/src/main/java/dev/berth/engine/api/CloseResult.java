package dev.berth.engine.api;

/** Result of close_workspace: what was removed. */
public record CloseResult(String workspace, String name, Lifecycle lifecycle, boolean deleted, String note) {}
