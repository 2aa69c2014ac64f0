package dev.berth.engine.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The recipe format: a full recipe and its steps, and a table of broken recipes, each with the error it must give. */
class RecipeTest {
    @Test
    void fullRecipe_parses_andThePackagesComeFirst() throws Exception {
        Recipe r = Recipe.parse("""
                {"berth_recipe": 1, "base": "debian-base", "packages": ["hello-berth", "jq=1.6-2.1"],
                 "allow": ["preset:debian", "127.0.0.1:8080"],
                 "steps": ["npm install -g left-pad", {"name": "config file", "run": "echo x > /etc/x"}],
                 "env": {"NODE_ENV": "production"}, "workdir": "/srv/app", "user": "app"}
                """, "test");
        assertEquals("debian-base", r.base());
        assertEquals(List.of("packages", "step 1", "config file"), r.steps().stream().map(Recipe.Step::name).toList());
        assertTrue(r.steps().get(0).run().contains("apt-get -o APT::Sandbox::User=root install -y --no-install-recommends hello-berth jq=1.6-2.1"),
                r.steps().get(0).run());
        assertEquals("npm install -g left-pad", r.steps().get(1).run());
        assertEquals(Map.of("NODE_ENV", "production"), r.env());
        assertEquals("/srv/app", r.workdir());
        assertEquals("app", r.user());
        assertEquals(List.of("preset:debian", "127.0.0.1:8080"), r.allow());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
            not json         | {berth_recipe               | is not valid JSON
            array            | []                          | must be a JSON object
            no version       | {"base": "b", "steps": ["x"]} | berth_recipe must be 1
            other version    | {"berth_recipe": 2, "base": "b", "steps": ["x"]} | berth_recipe must be 1 (the recipe format version), not 2
            no base          | {"berth_recipe": 1, "steps": ["x"]} | base is required
            bad base name    | {"berth_recipe": 1, "base": "../b", "steps": ["x"]} | image name '../b' must be
            unknown field    | {"berth_recipe": 1, "base": "b", "step": ["x"]} | unknown field 'step'
            nothing to build | {"berth_recipe": 1, "base": "b"} | nothing to build
            bad package      | {"berth_recipe": 1, "base": "b", "packages": ["x; rm -rf /"]} | package 'x; rm -rf /' is not a Debian package name
            package option   | {"berth_recipe": 1, "base": "b", "packages": ["-oDebug=1"]} | package '-oDebug=1' is not a Debian package name
            unknown preset   | {"berth_recipe": 1, "base": "b", "steps": ["x"], "allow": ["preset:nope"]} | allow: unknown preset 'nope'
            empty step       | {"berth_recipe": 1, "base": "b", "steps": [" "]} | step 1 has no command
            step field       | {"berth_recipe": 1, "base": "b", "steps": [{"cmd": "x"}]} | step 1: unknown field 'cmd'
            step number      | {"berth_recipe": 1, "base": "b", "steps": [7]} | step 1 must be a command string
            berth env        | {"berth_recipe": 1, "base": "b", "steps": ["x"], "env": {"BERTH_X": "1"}} | env name 'BERTH_X' is not allowed
            relative workdir | {"berth_recipe": 1, "base": "b", "steps": ["x"], "workdir": "srv"} | workdir 'srv' must be an absolute path
            """)
    void brokenRecipe_isRefusedWithTheReason(String name, String json, String error) {
        ImageException e = assertThrows(ImageException.class, () -> Recipe.parse(json, "t.json"));
        assertTrue(e.getMessage().contains(error), name + ": " + e.getMessage());
    }
}
