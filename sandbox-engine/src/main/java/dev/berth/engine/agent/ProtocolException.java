package dev.berth.engine.agent;

/** The agent broke the protocol (bad length, malformed payload, unexpected frame): the connection is closed. */
final class ProtocolException extends AgentException {
    ProtocolException(String message) { super(message, null); }
}
