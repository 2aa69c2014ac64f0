package dev.berth.engine.namespace;

/** The settings that point Maven at a repository (through a proxy, when given). Stateless. */
final class MavenSettings {
    private MavenSettings() {}

    /** Settings with {@code localRepo}, every repository mirrored to {@code repository}, and an HTTPS proxy when given. */
    static String settings(String localRepo, String proxyHostPort, String repository) {
        String proxy = proxyHostPort == null ? "" : """
                  <proxies><proxy><id>berth</id><active>true</active><protocol>https</protocol>
                    <host>%s</host><port>%s</port></proxy></proxies>
                """.formatted(proxyHostPort.substring(0, proxyHostPort.lastIndexOf(':')), proxyHostPort.substring(proxyHostPort.lastIndexOf(':') + 1));
        return """
                <settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
                  <localRepository>%s</localRepository>
                %s  <mirrors><mirror><id>machine</id><mirrorOf>*</mirrorOf><url>%s</url></mirror></mirrors>
                </settings>
                """.formatted(localRepo, proxy, repository);
    }
}
