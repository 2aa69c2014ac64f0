package dev.berth.engine.workspace;

/**
 * Every action a caller can ask of a workspace, as one closed set, so that {@link Transitions#admit} decides each
 * (action, state) pair exhaustively: a new action that is not placed there does not compile.
 */
public sealed interface WorkspaceAction {

    /** Verb used in refusal messages: "cannot park workspace 'x': it is closed". */
    String verb();

    record Run() implements WorkspaceAction { public String verb() { return "run in"; } }
    record Files() implements WorkspaceAction { public String verb() { return "access files of"; } }
    /** Reading files (read_file, list_files): also allowed, read-only, on a damaged workspace. */
    record ReadFiles() implements WorkspaceAction { public String verb() { return "read files of"; } }
    record Park() implements WorkspaceAction { public String verb() { return "park"; } }
    record Snapshot() implements WorkspaceAction { public String verb() { return "snapshot"; } }
    record Close() implements WorkspaceAction { public String verb() { return "close"; } }

    WorkspaceAction RUN = new Run();
    WorkspaceAction FILES = new Files();
    WorkspaceAction READ_FILES = new ReadFiles();
    WorkspaceAction PARK = new Park();
    WorkspaceAction SNAPSHOT = new Snapshot();
    WorkspaceAction CLOSE = new Close();
}
