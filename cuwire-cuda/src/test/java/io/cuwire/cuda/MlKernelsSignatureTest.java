package io.cuwire.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: the argument kinds {@link MlKernels} declares (and checks at every launch) against the CUDA source
 * of each kernel, so that a launch packs exactly the parameters its kernel takes.
 */
class MlKernelsSignatureTest {
    private static final Path SOURCES = Path.of("src/main/cuda");
    private static final Pattern GLOBAL = Pattern.compile("__global__\\s+void\\s+(\\w+)\\s*\\(([^)]*)\\)");

    /** Every {@code __global__} function of the CUDA sources, with its parameters' kinds. */
    private static Map<String, MlKernels.Param[]> parseSources() throws IOException {
        assumeTrue(Files.isDirectory(SOURCES), "the CUDA sources are not here (run from the cuwire-cuda module)");
        Map<String, MlKernels.Param[]> out = new LinkedHashMap<>();
        for (String file : new String[] {"kernels.cu", "ml_kernels.cuh"}) {
            Matcher m = GLOBAL.matcher(Files.readString(SOURCES.resolve(file)));
            while (m.find()) {
                String[] params = m.group(2).split(",");
                MlKernels.Param[] kinds = new MlKernels.Param[params.length];
                for (int i = 0; i < params.length; i++) {
                    kinds[i] = kind(params[i].strip());
                }
                out.put(m.group(1), kinds);
            }
        }
        return out;
    }

    private static MlKernels.Param kind(String param) {
        if (param.contains("*")) {
            return MlKernels.Param.PTR;
        }
        String type = param.substring(0, param.lastIndexOf(' ')).strip();
        return switch (type) {
            case "int32_t" -> MlKernels.Param.I32;
            case "int64_t" -> MlKernels.Param.I64;
            case "float" -> MlKernels.Param.F32;
            case "double" -> MlKernels.Param.F64;
            default -> throw new AssertionError("unexpected kernel parameter type: " + param);
        };
    }

    @Test
    void shouldDeclareEveryKernelExactlyAsTheCudaSourceDefinesIt() throws IOException {
        Map<String, MlKernels.Param[]> source = parseSources();
        for (Map.Entry<String, MlKernels.Param[]> e : MlKernels.kernelSignatures().entrySet()) {
            assertTrue(source.containsKey(e.getKey()), "no kernel " + e.getKey() + " in " + SOURCES);
            assertArrayEquals(source.get(e.getKey()), e.getValue(), e.getKey());
        }
        for (String name : source.keySet()) {
            if (name.startsWith("ml_")) {
                assertTrue(MlKernels.kernelSignatures().containsKey(name), name + " is not declared in MlKernels");
            }
        }
    }

    @Test
    void rowGroupsShouldGiveEachLaneAtMostEightElementsOfARowWithinOneWarp() {
        assertEquals(1, MlKernels.rowLanes(0));
        assertEquals(1, MlKernels.rowLanes(8));
        assertEquals(2, MlKernels.rowLanes(9));
        assertEquals(8, MlKernels.rowLanes(64));
        assertEquals(16, MlKernels.rowLanes(100));
        assertEquals(32, MlKernels.rowLanes(256));
        assertEquals(32, MlKernels.rowLanes(1_000_000));
        assertTrue(MlKernels.nearestRowsFits(8, 64));
        assertTrue(MlKernels.nearestRowsFits(32, 128));
        assertTrue(!MlKernels.nearestRowsFits(33, 2) && !MlKernels.nearestRowsFits(8, 513)
                && !MlKernels.nearestRowsFits(0, 4));
    }

    @Test
    void shouldRefuseArgumentsThatDoNotMatchTheSignature() {
        MlKernels.checkArguments("ml_map_f32", 10L, 0, 1L, 2L);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MlKernels.checkArguments("ml_map_f32", 10L, 0L, 1L, 2L));
        assertEquals("kernel ml_map_f32 argument 1: Long (expected: Integer for I32)", e.getMessage());
        assertThrows(IllegalStateException.class, () -> MlKernels.checkArguments("ml_map_f32", 10L, 0, 1L));
        assertThrows(IllegalStateException.class, () -> MlKernels.checkArguments("ml_no_such", 1L));
    }

    @Test
    void shouldGatherInTheWidestWordThatDividesRowsAndAddresses() {
        assertEquals(8, MlKernels.wordSize(24, 256, 512));
        assertEquals(4, MlKernels.wordSize(12, 256, 512));
        assertEquals(4, MlKernels.wordSize(24, 260, 512));
        assertEquals(1, MlKernels.wordSize(3, 256, 512));
    }

    @Test
    void shouldSizeAForestBlobAsTheLayoutDoes() {
        // header 48, table (2 + 1) x 16, 8 nodes x 16, 5 leaves x 2 outputs x 8
        assertEquals(48 + 48 + 128 + 80, MlKernels.forestBytes(2, 2, 8, 5));
    }
}
