package dev.berth.proxy.session;

/**
 * What the {@link Gatekeeper} asks of human approvals when the policy refuses a target; implemented over the proxy's
 * public {@code Approvals}, so the decision pipeline does not depend on the API package. Thread-safe.
 */
public interface ApprovalGate {
    /**
     * The reason an approval grant of the session's workspace allows {@code host:port}, or null when none is live; a
     * session allowed this way is closed when its grant expires or ends.
     */
    String allowedBy(Session session, String canonicalHost, int port);

    /** Could a human grant {@code host:port} (approval on, the host approvable)? */
    boolean approvable(String canonicalHost, int port);
}
