package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.EngineException;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import java.util.List;

/** The isolation drivers this build offers, strongest first, and the engine built on them. */
final class Drivers {
    private Drivers() {}

    static List<IsolationDriver> all(Options opts) {
        return List.of(new NamespaceDriver(opts.home()));
    }

    static Engine engine(Options opts) throws EngineException {
        EngineConfig cfg = EngineConfig.defaults(opts.home(), all(opts));
        if (opts.isolation() != null) cfg = cfg.withDefaultIsolation(opts.isolation());
        return Engine.start(cfg);
    }
}
