package dev.berth.engine.agent;

/** One protocol frame as read from or written to the stream. {@code payload} is never null. */
record Frame(int type, int chan, byte[] payload) {
    @Override
    public String toString() {
        return Protocol.typeName(type) + " chan=0x" + Integer.toHexString(chan) + " len=" + payload.length;
    }
}
