package dev.berth.proxy;

/**
 * Receives each policy decision as it is made (one per CONNECT, one per plain-HTTP request).
 * Called on a proxy event-loop thread: implementations must be fast and must not block.
 */
@FunctionalInterface
public interface DecisionListener {
    void onDecision(Decision decision);
}
