/**
 * The user's project in and the agent's work out (issue 29): a directory of the server's machine scanned
 * ({@link dev.berth.engine.transfer.SourceTree}) and streamed into a workspace as one tar stream over the agent's
 * channel ({@link dev.berth.engine.transfer.DirectoryImport}), and what changed since as a patch or a branch of the
 * user's repository ({@link dev.berth.engine.transfer.ChangeExport}); where a workspace's files came from is kept on
 * the server's side ({@link dev.berth.engine.transfer.ImportRecord}).
 *
 * <p>Internal to the engine; the front is {@code dev.berth.engine.Transfers}. Depends on {@code agent} and {@code spi}
 * only (and the API records); {@code template} copies the import record into snapshots.
 */
package dev.berth.engine.transfer;
