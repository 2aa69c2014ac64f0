package dev.berth.engine.agent;

/** How a process ended: {@code termSignal} is 0 when it exited by itself; {@code timedOut} when the agent killed it. */
public record ExecExit(int exitCode, int termSignal, boolean timedOut) {}
