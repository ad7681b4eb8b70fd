package io.cuwire.memory.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Reserves a file's bytes in its file system before the file is mapped, so that writing to the mapping cannot fault
 * for want of space ({@code SIGBUS}). A mapped file on a file system that runs full — a container's 64 MiB
 * {@code /dev/shm}, a full disk — is otherwise sparse: the mapping succeeds and the first write to a page that cannot
 * be backed faults (on JDK 25 an {@link InternalError} "a fault occurred in an unsafe memory access operation" at some
 * later copy; in native code, the end of the process).
 *
 * <p>With native access enabled for this module ({@code --enable-native-access}, as cuwire runs), the reservation is
 * the C library's {@code posix_fallocate} (the kernel's {@code fallocate}: blocks allocated, nothing written); without
 * it, the file's bytes are written with zeros through its channel, which reserves them the same way at the cost of
 * the writes. Either way a file system without room refuses here, with an {@link IOException}.
 */
final class FileSpace {
    /** {@code O_RDWR | O_CLOEXEC}: the same on Linux x86-64 and AArch64. */
    private static final int O_RDWR_CLOEXEC = 02 | 02000000;

    private static final int ENOSPC = 28;
    private static final int EFBIG = 27;
    private static final int EINTR = 4;
    private static final int ZEROS_BYTES = 1 << 20;

    private FileSpace() {}

    /** The C library's {@code open}, {@code posix_fallocate} and {@code close}, where native access is enabled. */
    private record Libc(MethodHandle open, MethodHandle fallocate, MethodHandle close) {
        static final Optional<Libc> INSTANCE = load();

        @SuppressWarnings("restricted") // three C library calls with ints, longs and a C string
        private static Optional<Libc> load() {
            if (!FileSpace.class.getModule().isNativeAccessEnabled()) {
                return Optional.empty();
            }
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                MethodHandle open = linker.downcallHandle(
                        libc.find("open").orElseThrow(),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                        Linker.Option.firstVariadicArg(2));
                MethodHandle fallocate = linker.downcallHandle(
                        libc.find("posix_fallocate").orElseThrow(),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_LONG));
                MethodHandle close = linker.downcallHandle(
                        libc.find("close").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                return Optional.of(new Libc(open, fallocate, close));
            } catch (RuntimeException | LinkageError e) {
                return Optional.empty(); // not a C library this binds to: zeros are written instead
            }
        }
    }

    /** How {@link #reserve} reserves here: {@code posix_fallocate} or {@code zeros}. */
    static String method() {
        return Libc.INSTANCE.isPresent() ? "posix_fallocate" : "zeros";
    }

    /**
     * Reserves bytes {@code [0, size)} of the file at {@code path}, open as {@code channel} (read-write, just made,
     * empty); the file is {@code size} bytes long afterwards.
     *
     * @throws IOException if the file system has no room for them (the message says so) or cannot be written
     */
    static void reserve(FileChannel channel, Path path, long size) throws IOException {
        if (size == 0) {
            return;
        }
        Optional<Libc> libc = Libc.INSTANCE;
        if (libc.isPresent()) {
            fallocate(libc.get(), path, size);
        } else {
            writeZeros(channel, size);
        }
    }

    private static void fallocate(Libc libc, Path path, long size) throws IOException {
        int fd;
        int result;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocateFrom(path.toString());
            fd = (int) libc.open().invokeExact(name, O_RDWR_CLOEXEC, 0);
            if (fd < 0) {
                throw new IOException("cannot open " + path + " to reserve " + size + " bytes for it");
            }
            try {
                do {
                    result = (int) libc.fallocate().invokeExact(fd, 0L, size);
                } while (result == EINTR);
            } finally {
                int unused = (int) libc.close().invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("posix_fallocate failed to run: " + t, t);
        }
        if (result == ENOSPC) {
            throw new IOException("no space left on the device for " + size + " bytes (posix_fallocate: ENOSPC)");
        }
        if (result == EFBIG) {
            throw new IOException("a file of " + size + " bytes is larger than this process may write (posix_fallocate:"
                    + " EFBIG; see ulimit -f)");
        }
        if (result != 0) {
            throw new IOException("posix_fallocate of " + size + " bytes failed with errno " + result);
        }
    }

    private static void writeZeros(FileChannel channel, long size) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(ZEROS_BYTES, size));
        long position = 0;
        while (position < size) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), size - position));
            while (zeros.hasRemaining()) {
                position += channel.write(zeros, position);
            }
        }
    }
}
