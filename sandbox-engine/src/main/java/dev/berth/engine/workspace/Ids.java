package dev.berth.engine.workspace;

import java.security.SecureRandom;
import java.util.HexFormat;

/** Random identifiers: {@code ws-}, {@code snap-}, {@code run-}, {@code p-} followed by 40 random bits in hex. */
public final class Ids {
    private static final SecureRandom RANDOM = new SecureRandom();

    private Ids() {}

    public static String next(String prefix) {
        byte[] b = new byte[5];
        RANDOM.nextBytes(b);
        return prefix + HexFormat.of().formatHex(b);
    }
}
