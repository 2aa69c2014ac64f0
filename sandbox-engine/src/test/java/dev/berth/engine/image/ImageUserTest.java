package dev.berth.engine.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.spi.RootImage;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The image config's {@code User} resolved through the image's own /etc/passwd and /etc/group: a table of forms. */
class ImageUserTest {
    private Path root;

    @BeforeEach
    void tree() throws IOException {
        root = Files.createTempDirectory("berth-image-user-");
        Files.createDirectories(root.resolve("etc"));
        Files.writeString(root.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\napp:x:1234:2345:app:/home/app:/bin/sh\n");
        Files.writeString(root.resolve("etc/group"), "root:x:0:\nstaff:x:50:\napp:x:2345:\n");
    }

    @AfterEach
    void clean() throws IOException { Trees.delete(root); }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', textBlock = """
            app        | app(1234:2345)
            1234       | app(1234:2345)
            app:staff  | app(1234:50)
            app:7      | app(1234:7)
            1234:staff | app(1234:50)
            4321       | 4321:0
            4321:99    | 4321:99
            0:50       | root(0:50)
            """)
    void user_resolvesThroughTheImagesFiles(String user, String expected) throws Exception {
        assertEquals(expected, ImageUser.resolve(root, user).orElseThrow().label());
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', textBlock = """
            ''   | x
            root | x
            0    | x
            0:0  | x
            """)
    void rootOrNothing_isEmpty(String user, String unused) throws Exception {
        assertEquals(Optional.<RootImage.RunAs>empty(), ImageUser.resolve(root, user));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource(delimiter = '|', textBlock = """
            ghost          | no user 'ghost' in the image's /etc/passwd
            app:ghosts     | no group 'ghosts' in the image's /etc/group
            app:           | is not NAME, UID, NAME:GROUP or UID:GID
            :50            | is not NAME, UID, NAME:GROUP or UID:GID
            99999999999    | is not a valid user or group id
            """)
    void badUser_isRefusedWithTheValue(String user, String reason) {
        ImageException e = assertThrows(ImageException.class, () -> ImageUser.resolve(root, user));
        assertTrue(e.getMessage().contains(reason) && e.getMessage().contains("'" + user + "'"), e.getMessage());
    }

    @org.junit.jupiter.api.Test
    void passwdThatIsALink_isNotFollowedToTheHost() throws Exception {
        Files.delete(root.resolve("etc/passwd"));
        Files.createSymbolicLink(root.resolve("etc/passwd"), Path.of("/etc/passwd"));
        ImageException e = assertThrows(ImageException.class, () -> ImageUser.resolve(root, "root"));
        assertTrue(e.getMessage().contains("/etc/passwd is not a regular file"), e.getMessage());
    }
}
