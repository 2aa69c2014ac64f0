package dev.berth.engine.agent;

/**
 * Constants of the agent protocol, mirroring the two tables of tool-schemas/agent-protocol.md one to one
 * (AgentProtocolSpecTest compares them by name through reflection, so every table row is a field here and
 * every int field here is a table row).
 */
final class Protocol {
    private Protocol() {}

    // message types
    static final int HELLO = 0x01;
    static final int PING = 0x02;
    static final int PONG = 0x03;
    static final int ERROR = 0x04;
    static final int OK = 0x05;
    static final int EXEC = 0x10;
    static final int STARTED = 0x11;
    static final int STDIN = 0x12;
    static final int STDOUT = 0x13;
    static final int STDERR = 0x14;
    static final int SIGNAL = 0x15;
    static final int EXIT = 0x16;
    static final int ATTACH = 0x17;
    static final int ATTACHED = 0x18;
    static final int RESIZE = 0x19;
    static final int FILE_READ = 0x20;
    static final int FILE_WRITE = 0x21;
    static final int FILE_LIST = 0x22;
    static final int SYNC = 0x30;
    static final int CLOCK_SET = 0x31;
    static final int RNG_SEED = 0x32;
    static final int TUNNEL_OPEN = 0x40;
    static final int DATA = 0x41;
    static final int CLOSE = 0x42;
    static final int RESET = 0x43;
    static final int PORT_OPEN = 0x44;
    static final int PORT_OPENED = 0x45;
    static final int WINDOW = 0x46;

    // flags and numbers
    static final int CAP_EXEC = 0x1;
    static final int CAP_FILES = 0x2;
    static final int CAP_TUNNEL = 0x4;
    static final int CAP_GUEST_OPS = 0x8;
    static final int CAP_CONFINED_RUNS = 0x10;
    static final int CAP_PORTS = 0x20;
    static final int CAP_ATTACH = 0x40;
    static final int CAP_TUNNEL_WINDOW = 0x80;
    static final int CAP_EXIT_LEFT = 0x100;
    static final int CAP_TTY = 0x200;
    static final int EXEC_STDIN = 0x1;
    static final int EXEC_TTY = 0x2;
    static final int WRITE_TRUNCATE = 0x1;
    static final int WRITE_APPEND = 0x2;
    static final int WRITE_MKDIRS = 0x4;
    static final int KIND_FILE = 0x66;
    static final int KIND_DIR = 0x64;
    static final int KIND_LINK = 0x6c;
    static final int KIND_OTHER = 0x6f;
    static final int VERSION = 3;
    static final int MAX_PAYLOAD = 1048576;
    static final int PORT_WINDOW = 262144;
    static final int TUNNEL_WINDOW = 1048576;
    static final int DETACHED_KEEP = 262144;
    static final int TTY_MAX = 1000;
    static final int LEFT_LISTED = 16;
    static final int LEFT_COMMAND = 200;

    /** Bytes before the payload: u32 len, u8 type, u32 chan. */
    static final int HEADER = 9;
    /** Agent-opened channels (tunnels) have this bit set. */
    static final int AGENT_CHANNEL_BIT = 0x8000_0000;
    /** FILE_READ answers carry u64 size and u32 mode before the data. */
    static final int FILE_READ_MAX = MAX_PAYLOAD - 12;

    static String typeName(int type) {
        return switch (type) {
            case HELLO -> "HELLO"; case PING -> "PING"; case PONG -> "PONG"; case ERROR -> "ERROR"; case OK -> "OK";
            case EXEC -> "EXEC"; case STARTED -> "STARTED"; case STDIN -> "STDIN"; case STDOUT -> "STDOUT";
            case STDERR -> "STDERR"; case SIGNAL -> "SIGNAL"; case EXIT -> "EXIT"; case ATTACH -> "ATTACH"; case ATTACHED -> "ATTACHED"; case RESIZE -> "RESIZE"; case FILE_READ -> "FILE_READ";
            case FILE_WRITE -> "FILE_WRITE"; case FILE_LIST -> "FILE_LIST"; case SYNC -> "SYNC";
            case CLOCK_SET -> "CLOCK_SET"; case RNG_SEED -> "RNG_SEED"; case TUNNEL_OPEN -> "TUNNEL_OPEN";
            case DATA -> "DATA"; case CLOSE -> "CLOSE"; case RESET -> "RESET";
            case PORT_OPEN -> "PORT_OPEN"; case PORT_OPENED -> "PORT_OPENED"; case WINDOW -> "WINDOW";
            default -> String.format("0x%02x", type);
        };
    }
}
