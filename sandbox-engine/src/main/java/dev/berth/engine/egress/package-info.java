/**
 * A workspace's side of the egress proxy: its tunnels, bound per run ({@link dev.berth.engine.egress.WorkspaceEgress}),
 * and the operator's ceiling narrowed by a request ({@link dev.berth.engine.egress.EgressPolicies}).
 *
 * <p>Internal to the engine; not for library users (the library's API is {@code dev.berth.engine}). A leaf: it uses
 * only the root package's public settings and records and the proxy, so that {@code workspace} can hold a
 * workspace's egress bridge. Secret placeholders and the CA bundle are minted per run and live in {@code run}.
 */
package dev.berth.engine.egress;
