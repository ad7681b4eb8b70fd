package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TableTest {
    @Test
    void shouldWriteCsvWithQuotingAndMarkdownWithEscapedBars() {
        Table t = new Table("case", "median_ms", "note")
                .row("tcp", Table.num(1.23456, 3), "a, \"b\"")
                .row("ipc|x", 2, null);
        assertEquals("case,median_ms,note\ntcp,1.235,\"a, \"\"b\"\"\"\nipc|x,2,\n", t.csv());
        assertEquals(
                "| case | median_ms | note |\n|---|---|---|\n| tcp | 1.235 | a, \"b\" |\n| ipc\\|x | 2 |  |\n",
                t.markdown());
        assertEquals(2, t.size());
    }

    @Test
    void shouldRefuseARowOfTheWrongWidth() {
        Table t = new Table("a", "b");
        assertEquals(
                "row of 1 cells [x] (expected: 2, one per column [a, b])",
                assertThrows(IllegalArgumentException.class, () -> t.row("x")).getMessage());
    }

    @Test
    void shouldWriteIntoADirectoryItCreates(@TempDir Path dir) throws Exception {
        Path file = Table.write(dir.resolve("sub/t.csv"), new Table("a").row(1).csv());
        assertEquals("a\n1\n", Files.readString(file, StandardCharsets.UTF_8));
    }
}
