package dev.berth.engine.microvm;

/**
 * What every machine of one microVM driver shares (the engine holds one driver per Berth home): the settings read at
 * start, the background work a call lets finish after it returned, and the overlay templates. Immutable; the parts
 * are thread-safe.
 */
record VmHome(MicrovmSettings settings, BackgroundTasks tasks, OverlayTemplates overlays) {

    /** A home with fresh background tasks and an empty template cache. */
    static VmHome of(MicrovmSettings settings) {
        return new VmHome(settings, new BackgroundTasks(), new OverlayTemplates());
    }
}
