package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.TemplateSettings;
import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.mcp.cli.Options;
import dev.berth.proxy.ConfigException;
import dev.berth.proxy.ConfigLoader;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.ProxyConfig;
import dev.berth.engine.microvm.ImageBuilder;
import dev.berth.engine.microvm.MicrovmDriver;
import dev.berth.engine.gvisor.GvisorDriver;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import java.util.List;

/** The isolation drivers this build offers, strongest first, and the engine built on them. */
final class Drivers {
    private Drivers() {}

    /**
     * Strongest first: the engine's default is the first driver that can run here (a microVM wherever QEMU and a
     * guest image are present), and a weaker one is used only when asked for or when nothing stronger can run.
     */
    static List<IsolationDriver> all(Options opts) {
        var image = MicrovmDriver.ImageKind.valueOf(opts.microvmImage().toUpperCase(java.util.Locale.ROOT));
        return List.of(new MicrovmDriver(ImageBuilder.defaults(), image), new GvisorDriver(opts.home()),
                new NamespaceDriver(opts.home()));
    }

    static Engine engine(Options opts) throws EngineException {
        return engine(opts, null);
    }

    /** @param operator the operator config (egress and guard sections), or null */
    static Engine engine(Options opts, OperatorConfig operator) throws EngineException {
        return engine(opts, operator, null);
    }

    /** @param meters where the engine's meters go (the Prometheus registry of berth http), or null */
    static Engine engine(Options opts, OperatorConfig operator, io.micrometer.core.instrument.MeterRegistry meters) throws EngineException {
        return engine(opts, operator, meters, true);
    }

    /**
     * @param serving whether the engine serves opens (berth stdio, berth http): then it has the warm pool the operator
     *                configured, or the server's default one without a config; an image build's engine has none
     */
    static Engine engine(Options opts, OperatorConfig operator, io.micrometer.core.instrument.MeterRegistry meters, boolean serving)
            throws EngineException {
        EngineConfig cfg = EngineConfig.defaults(opts.home(), all(opts));
        TemplateSettings templates = operator != null ? operator.templates() : TemplateSettings.serverDefault(TemplateSettings.DEFAULT_FORK_LIMIT);
        cfg = cfg.withTemplates(serving ? templates : templates.withoutPool());
        if (meters != null) cfg = cfg.withMetrics(new dev.berth.engine.metrics.EngineMetrics(meters));
        if (opts.isolation() != null) cfg = cfg.withDefaultIsolation(opts.isolation());
        if (operator != null) {
            cfg = cfg.withGuard(operator.guardMode())
                    .withLifecycle(operator.lifecyclePolicy(), operator.tenantLifecycle(), operator.maxLiveWorkspaces());
        }
        // the namespace level gives each live workspace a slot of host ids: the operator's range must hold them all
        for (IsolationDriver d : cfg.drivers()) {
            if (d instanceof NamespaceDriver n) {
                try {
                    n.checkIdRange(cfg.maxWorkspaces());
                } catch (IllegalArgumentException e) {
                    throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, e.getMessage(), e);
                }
            }
        }
        AuditTrail trail;
        try {
            trail = AuditTrail.open(opts.home(), operator == null ? AuditTrail.OnFailure.REFUSE : operator.auditOnFailure());
        } catch (java.io.IOException e) {
            throw new EngineException(EngineException.Kind.UNAVAILABLE, "cannot open the audit trail in " + opts.home() + ": " + e.getMessage(), e);
        }
        try {
            return Engine.start(cfg.withEgress(egress(opts, operator, trail)).withAudit(trail));
        } catch (EngineException | RuntimeException e) {
            trail.close();
            throw e;
        }
    }

    /**
     * The egress proxy every workspace reaches the outside through. Without an egress config the ceiling is empty:
     * the proxy still runs, so every refused connection comes back with the proxy's reason. Its decisions go into the
     * audit chain of the tenant whose workspace made the connection.
     */
    static EgressSettings egress(Options opts, OperatorConfig operator, AuditTrail trail) throws EngineException {
        ProxyConfig cfg;
        try {
            ProxyConfig fromOperator = operator == null ? null : operator.egressConfig();
            if (opts.egressConfig() != null && fromOperator != null) {
                throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "the egress policy is given twice (--egress "
                        + opts.egressConfig() + " and the operator config's egress section); keep one");
            }
            cfg = opts.egressConfig() != null ? ConfigLoader.load(opts.egressConfig())
                    : fromOperator != null ? fromOperator : ProxyConfig.builder().build();
        } catch (ConfigException e) {
            throw new EngineException(EngineException.Kind.INVALID_ARGUMENT, "egress config " + opts.egressConfig() + ": " + e.getMessage(), e);
        }
        // The interception CA (for secret-bound hosts only) persists in the home: a persistent workspace that was
        // given its certificate keeps trusting the proxy after a server restart.
        EgressProxy proxy = EgressProxy.builder(cfg).auditSink(trail.egressSink()).caDirectory(opts.home().resolve("ca")).start();
        return new EgressSettings(proxy, cfg.ceiling(), cfg.secrets(), cfg.presetMirrors());
    }
}
