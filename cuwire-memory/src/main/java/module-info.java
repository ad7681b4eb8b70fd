/**
 * Typed buffers (host, pinned host, device), allocators with accounting and leak reports, the copy engine with its
 * transfer counters, the emulated device, {@code NdArray} and sparse matrices. Device platforms plug in through
 * {@link io.cuwire.memory.spi.DeviceProvider} ({@code cuwire-cuda} provides CUDA's). Maps the emulated device's
 * shared files with the foreign memory API: run with {@code --enable-native-access=io.cuwire.memory} (README, "Add
 * cuwire to your build").
 */
module io.cuwire.memory {
    exports io.cuwire.memory;
    exports io.cuwire.memory.spi;

    uses io.cuwire.memory.spi.DeviceProvider;

    provides io.cuwire.memory.spi.DeviceProvider with
            io.cuwire.memory.internal.EmulatedDeviceProvider;
}
