package dev.berth.engine.spi;

/** Whether a driver can run here; {@code reason} always says why (or why not), in words a user can act on. */
public record Availability(boolean available, String reason) {
    public static Availability yes(String reason) { return new Availability(true, reason); }
    public static Availability no(String reason) { return new Availability(false, reason); }
}
