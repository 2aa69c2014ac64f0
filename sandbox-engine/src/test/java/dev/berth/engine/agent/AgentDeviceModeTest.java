package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** --device mode over a pty (a stand-in for a virtio-serial port): the stream is not a socket and never "reconnects". */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AgentDeviceModeTest {

    private static byte[] hello(String name) {
        return new PayloadWriter().u16(Protocol.VERSION).u32(0xf).str(name).toBytes();
    }

    @Test
    void deviceMode_helloExecAndRepeatedHello_workOverACharacterDevice() throws Throwable {
        try (Pty pty = new Pty()) {
            Process agent = new ProcessBuilder(AgentHarness.BINARY.toAbsolutePath().toString(), "--device", pty.slavePath)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            try {
                pty.writeFrame(Protocol.HELLO, 0, hello("pty-host"));
                Frame h = pty.readFrame();
                assertEquals(Protocol.HELLO, h.type(), h.toString());

                // every byte value must pass unchanged (no echo, no CR/LF mapping, no ^C/^D handling)
                byte[] all = new byte[256];
                for (int i = 0; i < 256; i++) all[i] = (byte) i;
                String path = System.getProperty("java.io.tmpdir") + "/berth-pty-" + ProcessHandle.current().pid();
                pty.writeFrame(Protocol.FILE_WRITE, 1, new PayloadWriter().str(path).u32(0600).u32(Protocol.WRITE_TRUNCATE).bytes(all).toBytes());
                assertEquals(Protocol.OK, pty.readFrame().type());
                pty.writeFrame(Protocol.FILE_READ, 2, new PayloadWriter().str(path).u64(0).u32(1000).toBytes());
                Frame read = pty.readFrame();
                assertEquals(Protocol.OK, read.type(), read.toString());
                assertEquals(12 + 256, read.payload().length);
                for (int i = 0; i < 256; i++) assertEquals((byte) i, read.payload()[12 + i], "byte " + i);
                new java.io.File(path).delete();

                pty.writeFrame(Protocol.EXEC, 3, new PayloadWriter().u32(0).u32(0).str("/")
                        .strList(List.of("/bin/echo", "over-device")).strList(List.of()).toBytes());
                assertEquals(Protocol.STARTED, pty.readFrame().type());
                Frame out = pty.readFrame();
                assertEquals(Protocol.STDOUT, out.type(), out.toString());
                assertEquals("over-device\n", new String(out.payload(), StandardCharsets.UTF_8));
                assertEquals(Protocol.EXIT, pty.readFrame().type());

                // a restored VM's host says HELLO again on the same port without any EOF in between
                pty.writeFrame(Protocol.HELLO, 0, hello("pty-host-2"));
                assertEquals(Protocol.HELLO, pty.readFrame().type());
                pty.writeFrame(Protocol.PING, 0, new PayloadWriter().u64(77).toBytes());
                Frame pong = pty.readFrame();
                assertEquals(Protocol.PONG, pong.type());
                assertEquals(77L, new PayloadReader(pong).i64());
            } finally {
                agent.destroy();
                agent.waitFor(5, TimeUnit.SECONDS);
            }
        }
    }
}
