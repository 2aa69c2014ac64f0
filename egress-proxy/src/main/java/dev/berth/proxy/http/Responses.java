package dev.berth.proxy.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/** Proxy-generated responses. The reason goes in the body and in X-Berth-Denial (sanitized). */
public final class Responses {
    private Responses() {}

    public static ChannelFuture send(Channel ch, int status, String reason, boolean keepAlive) {
        byte[] body = (reason + "\n").getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8");
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, body.length);
        r.headers().set("X-Berth-Denial", headerSafe(reason));
        r.headers().set(HttpHeaderNames.CONNECTION, keepAlive ? HttpHeaderValues.KEEP_ALIVE : HttpHeaderValues.CLOSE);
        return ch.writeAndFlush(r);
    }

    private static String headerSafe(String s) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < s.length() && i < 512; i++) {
            char c = s.charAt(i);
            sb.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return sb.toString();
    }
}
