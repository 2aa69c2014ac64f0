package dev.berth.proxy.tls;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * TLS client context for the upstream side of intercepted connections: the JDK default trust
 * store plus the operator's {@code upstreamTrustFiles}, hostname verification on. The proxy
 * re-establishes the end-to-end guarantee the client gave up by trusting our CA, so this check
 * must be at least as strict as the client's own would have been.
 */
public final class UpstreamTls {
    private UpstreamTls() {}

    public static SslContext clientContext(List<Path> extraPems) throws IOException {
        try {
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            TrustManagerFactory def = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            def.init((KeyStore) null);
            int i = 0;
            for (TrustManager tm : def.getTrustManagers()) {
                if (tm instanceof X509TrustManager x) {
                    for (X509Certificate c : x.getAcceptedIssuers()) ks.setCertificateEntry("jdk-" + i++, c);
                }
            }
            for (Path p : extraPems) {
                for (X509Certificate c : Pem.readCertificates(p)) ks.setCertificateEntry("extra-" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            return SslContextBuilder.forClient()
                    .sslProvider(SslProvider.JDK)
                    .trustManager(tmf)
                    .protocols("TLSv1.3", "TLSv1.2")
                    .endpointIdentificationAlgorithm("HTTPS")
                    .build();
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot build the upstream TLS trust store: " + e.getMessage(), e);
        }
    }
}
