package dev.berth.engine.agent;

import java.io.IOException;

/** The agent answered ERROR ({@code errno} > 0), or the connection broke ({@code errno} = 0). */
public class AgentException extends IOException {
    private final int errno;
    public AgentException(int errno, String message) { super(message); this.errno = errno; }
    public AgentException(String message, Throwable cause) { super(message, cause); this.errno = 0; }
    public int errno() { return errno; }
}
