package dev.berth.proxy.http;

import dev.berth.proxy.net.HostNames;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Strict HTTP/1.x request framing. Written by hand rather than using Netty's lenient
 * HttpRequestDecoder because the proxy must reject, not repair, ambiguous framing: a repaired
 * message is parsed one way here and another way upstream, which is request smuggling.
 *
 * <p>Rejected: bare LF or bare CR line endings, obs-fold continuation lines, whitespace before
 * the colon, control characters, Transfer-Encoding together with Content-Length, duplicate or
 * non-"chunked" Transfer-Encoding, differing Content-Length values, malformed chunk sizes,
 * trailers, heads over maxHeaderBytes or maxHeaderCount, and heads not completed within
 * headerTimeout (slowloris).
 *
 * <p>Emits {@link RequestHead}, then {@link RequestHead.Body} fragments (raw bytes, including chunk
 * framing, which is forwarded verbatim once validated), or a {@link RequestHead.Failure}. After a
 * complete message it pauses until {@link #resume} so requests are handled strictly one at a time.
 */
public final class RequestDecoder extends ByteToMessageDecoder {
    private enum State { HEAD, FIXED, CHUNK_SIZE, CHUNK_DATA, CHUNK_CRLF, TRAILER, PAUSED, FAILED }

    private final int maxHeaderBytes;
    private final int maxHeaderCount;
    private final long headerTimeoutMs;
    private State state = State.HEAD;
    private long remaining;
    private long requestSeq;
    private ScheduledFuture<?> headTimer;

    public RequestDecoder(int maxHeaderBytes, int maxHeaderCount, long headerTimeoutMs) {
        this.maxHeaderBytes = maxHeaderBytes;
        this.maxHeaderCount = maxHeaderCount;
        this.headerTimeoutMs = headerTimeoutMs;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        armHeadTimer(ctx);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        cancelTimer();
    }

    /** Continue with the next pipelined request (if any bytes are already buffered). */
    public void resume(ChannelHandlerContext ctx) {
        if (state != State.PAUSED) return;
        state = State.HEAD;
        requestSeq++;
        // Between keep-alive requests only the idle timeout applies; the head timer starts with
        // the first byte of the next request (so an idle pooled connection is not sent a 408).
        cancelTimer();
        ByteBuf buffered = internalBuffer();
        if (buffered.isReadable()) {
            // Re-run this decoder on what it holds: an empty read handed to *this* handler. Fired from the pipeline's
            // head instead, it would pass through the TLS handler of an intercepted tunnel, which decrypts nothing
            // from it, and a request already buffered here would wait for bytes the client will never send.
            try {
                channelRead(ctx, io.netty.buffer.Unpooled.EMPTY_BUFFER);
                channelReadComplete(ctx);
            } catch (Exception e) {
                ctx.fireExceptionCaught(e);
            }
        }
    }

    private void armHeadTimer(ChannelHandlerContext ctx) {
        cancelTimer();
        long seq = requestSeq;
        headTimer = ctx.executor().schedule(() -> {
            if (state == State.HEAD && requestSeq == seq) {
                fail(ctx, 408, "request head not completed within " + headerTimeoutMs + " ms");
            }
        }, headerTimeoutMs, TimeUnit.MILLISECONDS);
    }

    private void cancelTimer() {
        if (headTimer != null) headTimer.cancel(false);
        headTimer = null;
    }

    private void fail(ChannelHandlerContext ctx, int status, String reason) {
        state = State.FAILED;
        cancelTimer();
        ctx.fireChannelRead(new RequestHead.Failure(status, reason));
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        switch (state) {
            case PAUSED -> { }
            case FAILED -> in.skipBytes(in.readableBytes());
            case HEAD -> {
                if (headTimer == null && in.isReadable()) armHeadTimer(ctx);
                decodeHead(ctx, in, out);
            }
            case FIXED -> {
                int n = (int) Math.min(remaining, in.readableBytes());
                if (n == 0) return;
                remaining -= n;
                boolean last = remaining == 0;
                out.add(new RequestHead.Body(in.readRetainedSlice(n), last));
                if (last) state = State.PAUSED;
            }
            case CHUNK_SIZE -> decodeChunkSize(ctx, in, out);
            case CHUNK_DATA -> {
                int n = (int) Math.min(remaining, in.readableBytes());
                if (n == 0) return;
                remaining -= n;
                out.add(new RequestHead.Body(in.readRetainedSlice(n), false));
                if (remaining == 0) state = State.CHUNK_CRLF;
            }
            case CHUNK_CRLF -> {
                if (in.readableBytes() < 2) return;
                if (in.getByte(in.readerIndex()) != '\r' || in.getByte(in.readerIndex() + 1) != '\n') {
                    fail(ctx, 400, "chunk data not followed by CRLF");
                    return;
                }
                out.add(new RequestHead.Body(in.readRetainedSlice(2), false));
                state = State.CHUNK_SIZE;
            }
            case TRAILER -> {
                if (in.readableBytes() < 2) return;
                if (in.getByte(in.readerIndex()) != '\r' || in.getByte(in.readerIndex() + 1) != '\n') {
                    fail(ctx, 400, "chunked trailer fields are not supported");
                    return;
                }
                out.add(new RequestHead.Body(in.readRetainedSlice(2), true));
                state = State.PAUSED;
            }
        }
    }

    /** Index of the first LF, validating CR/LF pairing on the way; -1 if none yet; -2 on a bare CR/LF. */
    private static int findLineEnd(ByteBuf in, int from, int limit) {
        for (int i = from; i < limit; i++) {
            byte b = in.getByte(i);
            if (b == '\n') return (i > in.readerIndex() && in.getByte(i - 1) == '\r') ? i : -2;
            if (b == '\r' && i + 1 < limit && in.getByte(i + 1) != '\n') return -2;
        }
        return -1;
    }

    private void decodeChunkSize(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        int start = in.readerIndex();
        int limit = Math.min(in.writerIndex(), start + 1024);
        int lf = findLineEnd(in, start, limit);
        if (lf == -2) { fail(ctx, 400, "bare CR or LF in chunk size line"); return; }
        if (lf == -1) {
            if (in.readableBytes() >= 1024) fail(ctx, 400, "chunk size line longer than 1024 bytes");
            return;
        }
        String line = in.toString(start, lf - 1 - start, StandardCharsets.ISO_8859_1);
        int semi = line.indexOf(';');
        String hex = semi >= 0 ? line.substring(0, semi) : line;
        if (hex.isEmpty() || hex.length() > 15 || !hex.chars().allMatch(c -> Character.digit(c, 16) >= 0 && c < 128)) {
            fail(ctx, 400, "malformed chunk size '" + HostNames.printable(line) + "'");
            return;
        }
        if (semi >= 0 && !line.substring(semi).chars().allMatch(c -> c > 0x20 && c < 0x7f || c == ' ' || c == '\t')) {
            fail(ctx, 400, "malformed chunk extension in '" + HostNames.printable(line) + "'");
            return;
        }
        remaining = Long.parseLong(hex, 16);
        out.add(new RequestHead.Body(in.readRetainedSlice(lf + 1 - start), false));
        state = remaining == 0 ? State.TRAILER : State.CHUNK_DATA;
    }

    private void decodeHead(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        // Tolerate (skip) empty lines before a request line, as RFC 9112 section 2.2 allows.
        while (in.readableBytes() >= 2 && in.getByte(in.readerIndex()) == '\r' && in.getByte(in.readerIndex() + 1) == '\n') {
            in.skipBytes(2);
        }
        int start = in.readerIndex();
        int limit = Math.min(in.writerIndex(), start + maxHeaderBytes);
        List<String> lines = new ArrayList<>();
        int pos = start;
        while (true) {
            int lf = findLineEnd(in, pos, limit);
            if (lf == -2) { fail(ctx, 400, "bare CR or LF line ending in request head"); return; }
            if (lf == -1) {
                if (in.readableBytes() >= maxHeaderBytes) fail(ctx, 431, "request head exceeds " + maxHeaderBytes + " bytes");
                return;
            }
            String line = in.toString(pos, lf - 1 - pos, StandardCharsets.ISO_8859_1);
            pos = lf + 1;
            if (line.isEmpty()) break;
            lines.add(line);
            if (lines.size() > maxHeaderCount + 1) { fail(ctx, 431, "request has more than " + maxHeaderCount + " header fields"); return; }
        }
        in.readerIndex(pos);
        cancelTimer();
        Object parsed = parseHead(lines);
        if (parsed instanceof RequestHead.Failure f) {
            fail(ctx, f.status(), f.reason());
            return;
        }
        RequestHead head = (RequestHead) parsed;
        out.add(head);
        if (head.chunked) {
            state = State.CHUNK_SIZE;
        } else if (head.contentLength > 0) {
            remaining = head.contentLength;
            state = State.FIXED;
        } else {
            state = State.PAUSED;
        }
    }

    /** Returns a RequestHead or a Failure. Package-private for unit tests. */
    static Object parseHead(List<String> lines) {
        String[] rl = lines.get(0).split(" ", -1);
        if (rl.length != 3) return new RequestHead.Failure(400, "malformed request line '" + HostNames.printable(lines.get(0)) + "'");
        if (!isToken(rl[0])) return new RequestHead.Failure(400, "malformed method '" + HostNames.printable(rl[0]) + "'");
        if (rl[1].isEmpty() || !rl[1].chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            return new RequestHead.Failure(400, "malformed request target '" + HostNames.printable(rl[1]) + "'");
        }
        if (!rl[2].equals("HTTP/1.1") && !rl[2].equals("HTTP/1.0")) {
            return new RequestHead.Failure(505, "unsupported HTTP version '" + HostNames.printable(rl[2]) + "'");
        }
        List<String[]> headers = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.charAt(0) == ' ' || line.charAt(0) == '\t') {
                return new RequestHead.Failure(400, "obsolete line folding (obs-fold) in header line '" + HostNames.printable(line) + "'");
            }
            int colon = line.indexOf(':');
            if (colon <= 0 || !isToken(line.substring(0, colon))) {
                return new RequestHead.Failure(400, "malformed header line '" + HostNames.printable(line) + "'");
            }
            String value = line.substring(colon + 1).strip();
            if (!value.chars().allMatch(c -> c >= 0x20 && c != 0x7f || c == '\t')) {
                return new RequestHead.Failure(400, "control character in header '" + HostNames.printable(line.substring(0, colon)) + "'");
            }
            headers.add(new String[] {line.substring(0, colon), value});
        }
        return framing(rl[0], rl[1], rl[2], headers);
    }

    private static Object framing(String method, String target, String version, List<String[]> headers) {
        List<String> te = new ArrayList<>();
        List<String> cl = new ArrayList<>();
        for (String[] h : headers) {
            if (h[0].equalsIgnoreCase("Transfer-Encoding")) te.add(h[1]);
            if (h[0].equalsIgnoreCase("Content-Length")) {
                for (String v : h[1].split(",", -1)) cl.add(v.strip());
            }
        }
        if (!te.isEmpty() && !cl.isEmpty()) {
            return new RequestHead.Failure(400, "both Transfer-Encoding and Content-Length present (request smuggling shape)");
        }
        if (te.size() > 1) return new RequestHead.Failure(400, "duplicate Transfer-Encoding headers " + te);
        boolean chunked = false;
        if (te.size() == 1) {
            if (!te.get(0).equalsIgnoreCase("chunked")) {
                return new RequestHead.Failure(400, "unsupported Transfer-Encoding '" + HostNames.printable(te.get(0)) + "' (only 'chunked')");
            }
            if (version.equals("HTTP/1.0")) return new RequestHead.Failure(400, "Transfer-Encoding in an HTTP/1.0 request");
            chunked = true;
        }
        long length = 0;
        if (!cl.isEmpty()) {
            String first = cl.get(0);
            for (String v : cl) {
                if (!v.equals(first)) return new RequestHead.Failure(400, "conflicting Content-Length values " + cl);
            }
            if (first.isEmpty() || first.length() > 18 || !first.chars().allMatch(c -> c >= '0' && c <= '9')) {
                return new RequestHead.Failure(400, "malformed Content-Length '" + HostNames.printable(first) + "'");
            }
            length = Long.parseLong(first);
        }
        if (method.equals("CONNECT") && (chunked || length > 0)) {
            return new RequestHead.Failure(400, "CONNECT request with a body");
        }
        return new RequestHead(method, target, version, headers, chunked, length);
    }

    private static boolean isToken(String s) {
        if (s.isEmpty()) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
            if (!ok) return false;
        }
        return true;
    }
}
