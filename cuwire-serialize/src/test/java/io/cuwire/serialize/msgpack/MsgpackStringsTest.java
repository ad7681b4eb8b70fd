package io.cuwire.serialize.msgpack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Strings through the header's msgpack: the ASCII fast path, UTF-8 beside it, and malformed UTF-8 refused. */
class MsgpackStringsTest {
    private static final List<String> STRINGS = List.of(
            "",
            "dtype",
            "float32",
            "io.cuwire.ml.NearestNeighbors",
            "größe",
            "✓ 模型",
            "\u007f",
            "mixed ascii then é",
            "x".repeat(300),
            "é".repeat(200),
            "😀 outside the BMP");

    private static Object read(byte[] bytes) {
        return new MsgpackReader(bytes, 0, bytes.length, 16, 1 << 20).readValue();
    }

    @Test
    void shouldReadBackEveryStringItWrites() {
        for (String s : STRINGS) {
            assertEquals(s, read(new MsgpackWriter().string(s).toByteArray()), s);
        }
    }

    @Test
    void shouldReadManyStringsOfBothKindsWithOneReader() {
        MsgpackWriter w = new MsgpackWriter();
        w.arrayHeader(STRINGS.size() * 3);
        for (int i = 0; i < 3; i++) {
            for (String s : STRINGS) {
                w.string(s);
            }
        }
        List<?> back = (List<?>) read(w.toByteArray());
        for (int i = 0; i < back.size(); i++) {
            assertEquals(STRINGS.get(i % STRINGS.size()), back.get(i), "string " + i);
        }
    }

    @Test
    void shouldRefuseMalformedUtf8AfterAValidString() {
        // an array of two strings: "é" (valid, not ASCII: the decoder is made) and 0xC3 0x28 (a lead byte followed by
        // an ASCII byte: not UTF-8), so the reused decoder must refuse the second
        byte[] bytes = {(byte) 0x92, (byte) 0xa2, (byte) 0xc3, (byte) 0xa9, (byte) 0xa2, (byte) 0xc3, 0x28};
        MalformedMsgpackException e = assertThrows(MalformedMsgpackException.class, () -> read(bytes));
        assertTrue(e.getMessage().contains("not UTF-8"), e.getMessage());
        byte[] lone = {(byte) 0xa1, (byte) 0x80};
        assertThrows(MalformedMsgpackException.class, () -> read(lone), "a lone continuation byte");
    }
}
