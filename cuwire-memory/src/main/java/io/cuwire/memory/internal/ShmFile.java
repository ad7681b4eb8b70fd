package io.cuwire.memory.internal;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One mapped shared-memory file of the {@link EmulatedPlatform}: made by this process ({@link #create}: one
 * allocation, or a slab of small ones) or opened from another process's handle ({@link #open}).
 *
 * <h2>Capability</h2>
 * A file is named {@code cuwire-emu-<pid>-<digest>}, where {@code digest} is the first 16 bytes of the SHA-256 of a
 * random 16-byte token, in hex; the handle of an allocation in it carries the exporter's pid and the token
 * ({@link #handleBytes}). An importer derives the name from the handle and resolves it in its own platform's
 * directory only: a handle cannot name a path, a directory or a file that no exporter issued a token for, and a
 * listing of the directory shows digests, not tokens. The importer then refuses anything but a regular file (no
 * symbolic links, checked and opened with {@code O_NOFOLLOW}) owned by its own user, whose size holds the handle's
 * range. Files are created {@code 0600}.
 *
 * <p>Close: {@link #close()} unmaps; for a file this process made, it also deletes the file and gives back its
 * mapping to the platform's count. Closing twice is harmless. Thread-safe.
 */
final class ShmFile {
    /** Bytes of a handle: the exporter's pid (int64) and the token. */
    static final int HANDLE_BYTES = 8 + 16;

    private static final int TOKEN_BYTES = 16;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Set<PosixFilePermission> OWNER_ONLY =
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

    private final EmulatedPlatform platform;
    private final Path path;
    private final long pid;
    private final byte[] token;
    private final long size;
    private final MemorySegment segment;
    private final Arena arena;
    private final boolean owned;
    private final AtomicBoolean closed = new AtomicBoolean();

    private ShmFile(
            EmulatedPlatform platform,
            Path path,
            long pid,
            byte[] token,
            long size,
            MemorySegment segment,
            Arena arena,
            boolean owned) {
        this.platform = platform;
        this.path = path;
        this.pid = pid;
        this.token = token;
        this.size = size;
        this.segment = segment;
        this.arena = arena;
        this.owned = owned;
    }

    /**
     * A new file of {@code size} bytes in {@code platform}'s directory, mode {@code 0600}, its bytes reserved in the
     * file system ({@link FileSpace#reserve}) and then mapped whole.
     *
     * @throws AllocationLimitException if the platform holds its most mappings, the directory has no room for the
     *     file (the message says what to set), or the file cannot be made
     */
    static ShmFile create(EmulatedPlatform platform, long size) {
        long space = platform.usableSpace();
        if (size > space) {
            throw new AllocationLimitException(platform.noRoom(size, space + " bytes free there"));
        }
        platform.reserveMapping();
        long pid = ProcessHandle.current().pid();
        byte[] token = new byte[TOKEN_BYTES];
        Path path;
        do {
            RANDOM.nextBytes(token);
            path = platform.directory().resolve(name(pid, token));
        } while (Files.exists(path, LinkOption.NOFOLLOW_LINKS));
        Arena arena = Arena.ofShared();
        Set<OpenOption> options = Set.of(
                StandardOpenOption.CREATE_NEW,
                StandardOpenOption.READ,
                StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS);
        boolean made = false;
        try (FileChannel ch = FileChannel.open(path, options, PosixFilePermissions.asFileAttribute(OWNER_ONLY))) {
            made = true;
            try {
                FileSpace.reserve(ch, path, size);
            } catch (IOException e) {
                throw new AllocationLimitException(
                        platform.noRoom(size, "reserving its bytes failed: " + e.getMessage()), e);
            }
            MemorySegment segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            return new ShmFile(platform, path, pid, token, size, segment, arena, true);
        } catch (IOException | RuntimeException e) {
            arena.close();
            if (made || !(e instanceof FileAlreadyExistsException)) {
                deleteQuietly(path);
            }
            platform.releaseMapping();
            if (e instanceof AllocationLimitException a) {
                throw a;
            }
            throw new AllocationLimitException(
                    "cannot make a shared-memory file of " + size + " bytes in " + platform.directory()
                            + " (the directory is " + platform.directoryOrigin() + "): " + e,
                    e);
        }
    }

    /**
     * Maps the range of {@code handle} out of the file it names, after the checks of the class comment.
     *
     * @throws InvalidHandleException if the handle is malformed or names no file that may be opened, or its range
     *     lies outside it
     * @throws AllocationLimitException if the platform holds its most mappings
     */
    static ShmFile open(EmulatedPlatform platform, IpcHandle handle) {
        byte[] bytes = handle.handle();
        long pid = pid(handle);
        byte[] token = new byte[TOKEN_BYTES];
        System.arraycopy(bytes, 8, token, 0, TOKEN_BYTES);
        Path path = platform.directory().resolve(name(pid, token));
        PosixFileAttributes attributes;
        try {
            attributes = Files.readAttributes(path, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            throw new InvalidHandleException(handle + " names no allocation of the emulated platform in "
                    + platform.directory() + " (no file " + path.getFileName() + "; the directory is "
                    + platform.directoryOrigin() + ", and the exporter must use the same one)");
        } catch (IOException | UnsupportedOperationException e) {
            throw new InvalidHandleException("cannot check " + path + " for " + handle + ": " + e, e);
        }
        if (!attributes.isRegularFile()) {
            throw new InvalidHandleException(handle + " names " + path + ", which is not a regular file");
        }
        if (!attributes.owner().equals(platform.owner())) {
            throw new InvalidHandleException(handle + " names " + path + ", owned by "
                    + attributes.owner().getName() + ", not by this process's user "
                    + platform.owner().getName());
        }
        handle.checkWithin(attributes.size());
        platform.reserveMapping();
        Arena arena = Arena.ofShared();
        try (FileChannel ch =
                FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            long size = ch.size();
            handle.checkWithin(size);
            MemorySegment segment = ch.map(FileChannel.MapMode.READ_WRITE, handle.offset(), handle.length(), arena);
            return new ShmFile(platform, path, pid, token, size, segment, arena, false);
        } catch (IOException | RuntimeException e) {
            arena.close();
            platform.releaseMapping();
            if (e instanceof MemoryException m) {
                throw m;
            }
            throw new InvalidHandleException("cannot open " + handle + " (" + path + "): " + e, e);
        }
    }

    /**
     * The exporting process named by an emulated handle's bytes.
     *
     * @throws InvalidHandleException if the bytes are not an emulated handle's
     */
    static long pid(IpcHandle handle) {
        byte[] bytes = handle.handle();
        if (bytes.length != HANDLE_BYTES) {
            throw new InvalidHandleException(handle + " holds " + bytes.length + " bytes (expected: " + HANDLE_BYTES
                    + ", an emulated handle's pid and token)");
        }
        long pid = ByteBuffer.wrap(bytes).getLong(0);
        if (pid <= 0) {
            throw new InvalidHandleException(handle + " names process " + pid + " (expected: a pid > 0)");
        }
        return pid;
    }

    /** The file name of the token's file: its capability's digest, so that a listing does not reveal the token. */
    static String name(long pid, byte[] token) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(token);
            return EmulatedPlatform.FILE_PREFIX + pid + "-" + HexFormat.of().formatHex(digest, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    /** The bytes of a handle of an allocation in this file: the exporter's pid and the token. */
    byte[] handleBytes() {
        return ByteBuffer.allocate(HANDLE_BYTES).putLong(pid).put(token).array();
    }

    /** The file's size in bytes. */
    long size() {
        return size;
    }

    /** The mapped bytes: the whole file when made here, the handle's range when opened. */
    MemorySegment segment() {
        return segment;
    }

    Path path() {
        return path;
    }

    /** Unmaps, and deletes a file this process made. */
    void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            arena.close();
        } finally {
            platform.releaseMapping();
            if (owned) {
                deleteQuietly(path);
            }
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // the file system went away; nothing to free
        }
    }

    @Override
    public String toString() {
        return "ShmFile[" + path + ", " + size + " bytes" + (owned ? "" : ", imported") + "]";
    }
}
