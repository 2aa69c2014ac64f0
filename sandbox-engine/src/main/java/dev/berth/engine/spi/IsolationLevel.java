package dev.berth.engine.spi;

/**
 * The isolation levels Berth ships, with what the engine needs to know of each, so that engine code asks a level
 * what it can do instead of comparing driver names. A driver's level is read from its {@link IsolationDriver#name()}
 * here, in one place; a driver of another name (a test double) is {@link #OTHER} and claims nothing. Immutable.
 */
public enum IsolationLevel {
    /** bubblewrap namespaces; its own root is the host's {@code /usr}; the level recipe builds run on. */
    NAMESPACE("namespace", true, true, true),
    /** gVisor's user-space kernel; its own root is the host's {@code /usr}. */
    GVISOR("gvisor", true, true, false),
    /** a QEMU microVM with its own kernel and its own built-in image. */
    MICROVM("microvm", false, true, false),
    /** any other driver: no host root, no imported images, no builds. */
    OTHER(null, false, false, false);

    private final String driverName;
    private final boolean hostRoot;
    private final boolean opensImages;
    private final boolean buildsImages;

    IsolationLevel(String driverName, boolean hostRoot, boolean opensImages, boolean buildsImages) {
        this.driverName = driverName;
        this.hostRoot = hostRoot;
        this.opensImages = opensImages;
        this.buildsImages = buildsImages;
    }

    /** The level of {@code driver}; {@link #OTHER} for a driver Berth does not ship. */
    public static IsolationLevel of(IsolationDriver driver) {
        for (IsolationLevel l : values()) if (l.driverName != null && l.driverName.equals(driver.name())) return l;
        return OTHER;
    }

    /** Its own root is the host's {@code /usr} (read-only, with a curated {@code /etc}), so a developer image may stand in. */
    public boolean hostRoot() { return hostRoot; }

    /** It can open workspaces on imported images. */
    public boolean opensImages() { return opensImages; }

    /** A recipe build's writable root can be entered on it. */
    public boolean buildsImages() { return buildsImages; }
}
