package dev.berth.fleet;

/**
 * The fleet's key layout under one prefix (docs/fleet.md, "Layout in etcd"); every key the fleet writes is made here.
 * Tenant ids, names and node ids are validated before they reach a key (no '/' in any of them).
 */
public record FleetKeys(String prefix) {
    public String nodes() { return prefix + "nodes/"; }

    public String node(String id) { return nodes() + id; }

    /** Present (any value) while the operator has cordoned the node: placement skips it. */
    public String cordon(String node) { return prefix + "cordons/" + node; }

    public String cordons() { return prefix + "cordons/"; }

    public String tenant(String tenant) { return prefix + "tenants/" + tenant + "/"; }

    public String name(String tenant, String name) { return tenant(tenant) + "names/" + name; }

    public String usage(String tenant) { return tenant(tenant) + "usage"; }

    public String workspaces() { return prefix + "workspaces/"; }

    public String workspace(String id) { return workspaces() + id; }
}
