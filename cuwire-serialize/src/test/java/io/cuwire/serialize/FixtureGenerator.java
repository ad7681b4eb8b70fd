package io.cuwire.serialize;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes the {@link WireFixtures} with this checkout's code into {@code fixtures/v<FORMAT_VERSION>/} (or the
 * directory given as the only argument): run it with the code of a release to keep that release's headers as test
 * input for every later one. Not a test; run by hand, as the fixture folder's README says.
 */
public final class FixtureGenerator {
    private FixtureGenerator() {}

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(
                args.length > 0
                        ? args[0]
                        : "cuwire-serialize/src/test/resources/fixtures/v" + Serialized.FORMAT_VERSION);
        Files.createDirectories(dir);
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("fixtures-host", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> device =
                        Devices.get(0).newAllocator("fixtures-device", BufferAllocator.UNLIMITED)) {
            TypeRegistry registry = WireFixtures.registry(host);
            try (Serialized s = registry.serialize(WireFixtures.model(), Family.CUDA)) {
                WireFixtures.write(dir, "generic", s);
            }
            try (NdArray a = WireFixtures.cudaArray(device);
                    Serialized s = registry.serialize(a, Family.CUDA)) {
                WireFixtures.write(dir, "ndarray-cuda", s);
            }
            try (NdArray a = WireFixtures.hostArray(device);
                    Serialized s = registry.serialize(a, Family.HOST)) {
                WireFixtures.write(dir, "ndarray-host", s);
            }
            try (Serialized s = registry.serialize(WireFixtures.shared(), Family.CUDA)) {
                WireFixtures.write(dir, "refs", s);
            }
            List<NdArray> layers = WireFixtures.layers(device);
            try (Serialized s = registry.serialize(layers, Family.CUDA)) {
                WireFixtures.write(dir, "layers", s);
            } finally {
                layers.forEach(NdArray::close);
            }
        }
        System.out.println("wrote " + WireFixtures.NAMES_V2 + " (format version " + Serialized.FORMAT_VERSION + ") to "
                + dir.toAbsolutePath());
    }
}
