import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.Locale;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * Rewrites jars for the Spark bundle's packing (build/spark-bundle.sh runs it as a source-file program):
 * {@code java StoreJars.java OUT_DIR JAR...} writes each jar into OUT_DIR with its entries in the same order, their
 * bytes and times unchanged, but stored rather than deflated (one xz stream over the whole bundle then compresses
 * the class files together, several times smaller than xz over deflated jars), and without the native libraries
 * for platforms other than Linux x86-64 (zstd-jni, lz4-java, netlib's blas and lapack carry a library for each of
 * up to ten platforms, loaded by the one that matches the JVM's). Entry contents are not changed, so a signed jar's
 * signature still verifies. Prints one line per jar: its name, bytes before and after, native libraries dropped.
 */
public final class StoreJars {
    private StoreJars() {}

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: java StoreJars.java OUT_DIR JAR...");
            System.exit(2);
        }
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        for (int i = 1; i < args.length; i++) {
            Path jar = Path.of(args[i]);
            Path to = out.resolve(jar.getFileName());
            int dropped = store(jar, to);
            System.out.printf(
                    Locale.ROOT,
                    "%s %d -> %d bytes, %d native libraries of other platforms dropped%n",
                    jar.getFileName(),
                    Files.size(jar),
                    Files.size(to),
                    dropped);
        }
    }

    /** A native library for a platform other than Linux x86-64. */
    static boolean otherPlatform(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        boolean library = n.endsWith(".so") || n.endsWith(".dll") || n.endsWith(".dylib") || n.endsWith(".jnilib");
        boolean linuxX64 = n.contains("linux") && (n.contains("amd64") || n.contains("x86_64") || n.contains("x86-64"));
        return library && !linuxX64;
    }

    private static int store(Path jar, Path to) throws IOException {
        int dropped = 0;
        try (ZipFile in = new ZipFile(jar.toFile());
                ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(to))) {
            zip.setMethod(ZipOutputStream.STORED);
            Enumeration<? extends ZipEntry> entries = in.entries();
            while (entries.hasMoreElements()) {
                ZipEntry e = entries.nextElement();
                if (otherPlatform(e.getName())) {
                    dropped++;
                    continue;
                }
                byte[] bytes;
                try (InputStream s = in.getInputStream(e)) {
                    bytes = s.readAllBytes();
                }
                ZipEntry copy = new ZipEntry(e.getName());
                copy.setMethod(ZipEntry.STORED);
                copy.setTime(e.getTime());
                copy.setSize(bytes.length);
                copy.setCompressedSize(bytes.length);
                CRC32 crc = new CRC32();
                crc.update(bytes);
                copy.setCrc(crc.getValue());
                zip.putNextEntry(copy);
                zip.write(bytes);
                zip.closeEntry();
            }
        }
        return dropped;
    }
}
