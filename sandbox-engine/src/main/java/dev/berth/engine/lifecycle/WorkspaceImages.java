package dev.berth.engine.lifecycle;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.IsolationLevel;
import dev.berth.engine.workspace.Store;
import java.io.IOException;
import java.util.Optional;

/**
 * The image a new workspace runs on, chosen at open from the request, the snapshot it forks, the operator's default
 * and the tenant's grants, against the image store. Thread-safe (the store is).
 */
final class WorkspaceImages {
    /** The image chosen: its name and digest, and its record. */
    record Choice(ImageRef ref, dev.berth.engine.image.ImageRecord record) {}

    private final ImageStore images;

    WorkspaceImages(ImageStore images) { this.images = images; }

    /**
     * The level's built-in image as a store name: on the levels whose own root is the host's {@code /usr}, the
     * developer image {@code berth setup} imported ({@link ImageStore#DEVELOPER}; open to every
     * tenant, like the level's own root); null: the driver's own root (the microVM level's own image, or the host's
     * {@code /usr} where no developer image was imported: results then say {@code built-in} with the driver's id,
     * {@code host-usr+...}).
     */
    private String builtInImage(IsolationDriver driver) throws EngineException {
        if (!IsolationLevel.of(driver).hostRoot()) return null;
        try {
            return images.digestOf(ImageStore.DEVELOPER).isPresent() ? ImageStore.DEVELOPER : null;
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "reading the image store failed: " + e.getMessage(), e);
        }
    }

    /**
     * The image a new workspace runs on: a fork keeps its snapshot's; otherwise the one named (resolved to its digest
     * now, so that renaming the image later never changes the workspace), on a driver that can open images.
     */
    Choice choose(Tenant tenant, OpenRequest req, Store.SnapshotRecord snap, IsolationDriver driver) throws EngineException {
        String name = req.image();
        ImageRef ref;
        if (snap != null) {
            ref = snap.image();
            String has = ref == null ? ImageRef.BUILT_IN : ref.name();
            if (name != null && !name.equals(has)) {
                throw new EngineException(Kind.CONFLICT, "snapshot '" + snap.name() + "' was taken on image '" + has
                        + "'; a fork keeps its snapshot's image, so omit image");
            }
            if (ref == null) return null;
        } else {
            if (name == null) {
                // the operator's default image, where the level opens images (every tenant may open it)
                Optional<String> dflt;
                try {
                    dflt = images.defaultName();
                } catch (IOException e) {
                    throw new EngineException(Kind.UNAVAILABLE, "reading the image store failed: " + e.getMessage(), e);
                }
                if (!IsolationLevel.of(driver).opensImages()) return null;
                if (dflt.isEmpty()) {
                    name = builtInImage(driver);
                    if (name == null) return null;
                } else {
                    name = dflt.get();
                }
            } else if (name.equals(ImageRef.BUILT_IN)) {
                name = builtInImage(driver);
                if (name == null) return null;
            } else if (!tenant.mayImage(name)) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "tenant '" + tenant.id() + "' is not granted image '" + name
                        + "' (granted: " + (tenant.images() == null ? "all" : new java.util.TreeSet<>(tenant.images()))
                        + "); the operator grants images per tenant in the config's tenants.<id>.images");
            }
            if (!IsolationLevel.of(driver).opensImages()) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "the " + driver.name() + " level cannot open imported images"
                        + " (image '" + name + "'); ask for isolation " + ImageStore.DRIVERS);
            }
            try {
                var rec = images.resolve(name);
                ref = new ImageRef(name, rec.digest());
            } catch (dev.berth.engine.image.ImageException e) {
                throw new EngineException(Kind.NOT_FOUND, e.getMessage(), e);
            } catch (IOException e) {
                throw new EngineException(Kind.UNAVAILABLE, "reading the image store failed: " + e.getMessage(), e);
            }
        }
        try {
            var rec = images.byDigest(ref.digest()).orElseThrow(() -> new EngineException(Kind.NOT_FOUND, "image '"
                    + ref.name() + "' (" + ref.digest() + ") is no longer in the store"));
            return new Choice(ref, rec);
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "reading the image store failed: " + e.getMessage(), e);
        }
    }
}
