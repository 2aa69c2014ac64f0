package demo;
import static org.junit.Assert.assertEquals;
import org.junit.Test;
public class MainTest {
    @Test public void greeting_capitalizesTheName() { assertEquals("Hello from Berth", Main.greeting("berth")); }
}
