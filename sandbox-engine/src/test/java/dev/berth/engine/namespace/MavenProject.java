package dev.berth.engine.namespace;

/** A small Maven project (one dependency, pinned plugins) and the settings that point Maven at a repository. Stateless. */
final class MavenProject {
    private MavenProject() {}

    static final String POM = """
            <project xmlns="http://maven.apache.org/POM/4.0.0">
              <modelVersion>4.0.0</modelVersion>
              <groupId>org.example</groupId><artifactId>app</artifactId><version>1</version>
              <properties><maven.compiler.release>17</maven.compiler.release>
                <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
              <dependencies><dependency><groupId>org.apache.commons</groupId><artifactId>commons-lang3</artifactId>
                <version>3.14.0</version></dependency></dependencies>
              <build><plugins>
                <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
                <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
              </plugins></build>
            </project>
            """;
    static final String MAIN = """
            package demo;
            public class Main {
                public static void main(String[] a) {
                    System.out.println("Hello from " + org.apache.commons.lang3.StringUtils.capitalize("berth"));
                }
            }
            """;

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
