package io.cuwire.test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class ChildJvmTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void shouldPassPropertiesEnvironmentArgumentsAndInputAndKeepEveryLine() throws Exception {
        List<String> seen = new CopyOnWriteArrayList<>();
        try (ChildJvm child = ChildJvm.builder(EchoChild.class)
                .args("3", "x y")
                .property("cuwire.test.echo", "p")
                .env("CUWIRE_TEST_ECHO", "e")
                .input("hello\n")
                .onLine(seen::add)
                .start()) {
            assertEquals("READY hello", child.awaitLine("READY ", WAIT));
            assertEquals(3, child.awaitExit(WAIT));
            assertTrue(
                    child.lines().containsAll(List.of("property p", "env e", "args 3,x y", "READY hello")),
                    child.output());
            assertEquals(child.lines(), seen, "the consumer saw every line in order");
            assertTrue(
                    child.command().contains("-Dcuwire.test.echo=p")
                            && !child.command().contains("e"),
                    "the property is on the command line, the environment is not: " + child.command());
        }
    }

    @Test
    void shouldRemoveAnInheritedEnvironmentVariableSetToNull() throws Exception {
        try (ChildJvm child = ChildJvm.builder(EchoChild.class)
                .args("0")
                .env("PATH", null)
                .input("x\n")
                .start()) {
            assertEquals(0, child.awaitExit(WAIT), child.output());
            assertTrue(child.lines().contains("PATH set false"), child.output());
        }
    }

    @Test
    void shouldNameTheChildItsExitAndItsOutputWhenTheLineNeverCame() throws Exception {
        try (ChildJvm child =
                ChildJvm.builder(EchoChild.class).args("7").input("bye\n").start()) {
            IOException e = assertThrows(IOException.class, () -> child.awaitLine("LISTENING ", WAIT));
            assertTrue(
                    e.getMessage()
                            .startsWith("the child JVM io.cuwire.test.EchoChild printed no line starting "
                                    + "with 'LISTENING ' before it ended (exit 7)"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("READY bye"), e.getMessage());
        }
    }

    @Test
    void shouldKillAChildThatDoesNotEndWhenClosed() throws Exception {
        ChildJvm child = ChildJvm.builder(EchoChild.class).args("0").start(); // waits for input forever
        child.awaitLine("env ", WAIT);
        child.close();
        assertTrue(!child.process().isAlive(), "closed, the child is gone");
        child.close();
    }

    @Test
    void shouldPassThisJvmsCuwirePropertiesUnlessTheBuilderSetsThem() {
        String old = System.getProperty("cuwire.test.inherited");
        System.setProperty("cuwire.test.inherited", "1");
        try {
            assertTrue(ChildJvm.builder(EchoChild.class).command().contains("-Dcuwire.test.inherited=1"));
            List<String> cmd = ChildJvm.builder(EchoChild.class)
                    .property("cuwire.test.inherited", null)
                    .command();
            assertTrue(cmd.stream().noneMatch(a -> a.startsWith("-Dcuwire.test.inherited")), cmd.toString());
        } finally {
            if (old == null) {
                System.clearProperty("cuwire.test.inherited");
            } else {
                System.setProperty("cuwire.test.inherited", old);
            }
        }
    }
}
