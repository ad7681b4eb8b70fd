package io.cuwire.transport.internal.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportUnavailableException;
import io.cuwire.transport.Transports;
import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * cuwire-transport declares JUCX optional: this test's class path less the JUCX jar, in a class loader of its own, is
 * what an application that did not add it has.
 */
class UcxWithoutJucxTest {
    @Test
    void shouldNameTheJucxArtifactToAddWhenUcxIsAskedForWithoutIt() throws Exception {
        List<URL> path = new ArrayList<>();
        List<String> jucxJars = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String name = Path.of(entry).getFileName().toString();
            if (name.startsWith("jucx-") && name.endsWith(".jar")) {
                jucxJars.add(name);
            } else {
                path.add(Path.of(entry).toUri().toURL());
            }
        }
        assertEquals(1, jucxJars.size(), "the JUCX jar on the test class path: " + jucxJars);
        String jar = jucxJars.getFirst();
        String version = jar.substring("jucx-".length(), jar.length() - ".jar".length());
        String message;
        try (URLClassLoader withoutJucx =
                new URLClassLoader("without-jucx", path.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
            assertThrows(ClassNotFoundException.class, () -> withoutJucx.loadClass("org.openucx.jucx.ucp.UcpContext"));
            Method listen = withoutJucx.loadClass(ListenOverUcx.class.getName()).getDeclaredMethod("run");
            listen.setAccessible(true);
            message = (String) listen.invoke(null);
        }
        String expected = TransportUnavailableException.class.getName() + ": UCX not available: the JUCX classes are "
                + "not on the class path; add the dependency org.openucx:jucx:" + version
                + " (cuwire-transport declares it optional) (";
        assertTrue(message.startsWith(expected), message);
        assertTrue(message.contains("org/openucx/jucx/"), message);
    }

    /** Runs in the class loader without JUCX: asks for a {@code ucx://} listener and says what it got. */
    static final class ListenOverUcx {
        private ListenOverUcx() {}

        static String run() {
            TransportConfig config = TransportConfig.builder()
                    .secret(new byte[32])
                    .receiveInto(d -> {
                        throw new AssertionError("nothing is received");
                    })
                    .build();
            String address = "ucx://127.0.0.1:0";
            try (Listener listener = Transports.forAddress(address).listen(address, config)) {
                return "listening at " + listener.address();
            } catch (TransportUnavailableException e) {
                return e.getClass().getName() + ": " + e.getMessage();
            }
        }
    }
}
