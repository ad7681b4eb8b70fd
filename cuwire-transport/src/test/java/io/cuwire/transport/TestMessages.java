package io.cuwire.transport;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Serialized;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** Messages for transport tests: a header whose root is a label, plus raw frames. */
public final class TestMessages {
    /** The cluster secret of the tests. */
    public static final byte[] SECRET = "cuwire-test-cluster-secret-0123456789".getBytes();

    private TestMessages() {}

    /** A message labelled {@code label} carrying {@code frames} as they are; it uses no family. */
    public static Message message(String label, List<? extends Buffer> frames) {
        List<FrameDescriptor> descriptors = new ArrayList<>();
        for (Buffer b : frames) {
            descriptors.add(new FrameDescriptor(b.kind(), b.deviceOrdinal(), b.byteSize()));
        }
        return Message.of(
                new Serialized.Header(Serialized.FORMAT_VERSION, Set.of(), label, descriptors).encode(), frames);
    }

    /** Writes {@code data} to the start of {@code buffer}. */
    public static void fill(Buffer buffer, byte[] data) {
        CopyEngine.copyFromSegment(MemorySegment.ofArray(data), buffer, 0);
    }

    /** The bytes of {@code buffer}, read through the copy engine. */
    public static byte[] contents(Buffer buffer) {
        byte[] b = new byte[Math.toIntExact(buffer.byteSize())];
        CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(b));
        return b;
    }

    /** {@code n} bytes of a repeatable pattern. */
    public static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }
}
