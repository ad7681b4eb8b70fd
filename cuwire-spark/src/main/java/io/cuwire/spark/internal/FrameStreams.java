package io.cuwire.spark.internal;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.FrameAllocator;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;

/**
 * A {@link Serialized} value as a byte stream, for what must be bytes: files of saved models (through Hadoop's file
 * systems) and partial statistics travelling in Spark results. Layout: the magic {@code CUWIRE1\n}, the header's
 * length (4 bytes) and bytes, then every frame's bytes in header order (lengths are the header's {@code long}s, so
 * values over 2 GiB work). Device frames pass through a host staging buffer piece by piece, each piece one copy
 * through the {@link CopyEngine} (and counted there); host frames are read and written in place.
 */
public final class FrameStreams {
    private static final byte[] MAGIC = "CUWIRE1\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final int PIECE = 4 << 20;

    private FrameStreams() {}

    /** Writes {@code value} to {@code out}; {@code staging} lends the host buffer device frames pass through. */
    public static void write(Serialized value, OutputStream out, BufferAllocator<HostBuffer> staging)
            throws IOException {
        DataOutputStream data = new DataOutputStream(out);
        byte[] header = value.encodeHeader();
        data.write(MAGIC);
        data.writeInt(header.length);
        data.write(header);
        byte[] piece = piece(value.frames().stream().mapToLong(Frame::length));
        HostBuffer stage = null;
        try {
            for (Frame f : value.frames()) {
                Buffer b = f.buffer();
                for (long at = 0; at < b.byteSize(); at += piece.length) {
                    int n = (int) Math.min(piece.length, b.byteSize() - at);
                    MemorySegment from;
                    if (b instanceof HostBuffer h) {
                        from = h.segment().asSlice(at, n);
                    } else {
                        if (stage == null) {
                            stage = staging.allocate(piece.length);
                        }
                        CopyEngine.copy(b, at, stage, 0, n);
                        from = stage.segment().asSlice(0, n);
                    }
                    MemorySegment.copy(from, ValueLayout.JAVA_BYTE, 0, piece, 0, n);
                    data.write(piece, 0, n);
                }
            }
        } finally {
            if (stage != null) {
                stage.close();
            }
        }
        data.flush();
    }

    /** {@code value} as bytes (a small value: a partial, a request's arguments). */
    public static byte[] toBytes(Serialized value, BufferAllocator<HostBuffer> staging) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            write(value, out, staging);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /**
     * Reads a value written by {@link #write}: checks the header against {@code limits}, allocates every frame from
     * {@code into} (device frames on this process's device) and fills it. The result owns its frames.
     */
    public static Serialized read(
            InputStream in, FrameAllocator into, BufferAllocator<HostBuffer> staging, Limits limits)
            throws IOException {
        DataInputStream data = new DataInputStream(in);
        byte[] magic = new byte[MAGIC.length];
        data.readFully(magic);
        if (!java.util.Arrays.equals(magic, MAGIC)) {
            throw new IOException("not a cuwire frame stream (magic "
                    + java.util.HexFormat.of().formatHex(magic) + ")");
        }
        int headerLength = data.readInt();
        if (headerLength < 0 || headerLength > limits.maxHeaderBytes()) {
            throw new IOException(
                    "header of " + headerLength + " bytes (expected: 0 .. " + limits.maxHeaderBytes() + ")");
        }
        byte[] headerBytes = new byte[headerLength];
        data.readFully(headerBytes);
        Serialized.Header header = Serialized.parseHeader(headerBytes, limits);
        List<Buffer> frames = new ArrayList<>();
        HostBuffer stage = null;
        try {
            byte[] piece = piece(header.frames().stream().mapToLong(FrameDescriptor::length));
            for (FrameDescriptor d : header.frames()) {
                Buffer b = into.allocate(d);
                frames.add(b);
                for (long at = 0; at < d.length(); at += piece.length) {
                    int n = (int) Math.min(piece.length, d.length() - at);
                    readFully(data, piece, n);
                    if (b instanceof HostBuffer h) {
                        MemorySegment.copy(piece, 0, h.segment(), ValueLayout.JAVA_BYTE, at, n);
                    } else {
                        if (stage == null) {
                            stage = staging.allocate(piece.length);
                        }
                        MemorySegment.copy(piece, 0, stage.segment(), ValueLayout.JAVA_BYTE, 0, n);
                        CopyEngine.copy(stage, 0, b, at, n);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            for (Buffer b : frames) {
                b.close();
            }
            throw e;
        } finally {
            if (stage != null) {
                stage.close();
            }
        }
        return Serialized.received(header, frames);
    }

    /** Reads a value from {@link #toBytes} bytes. */
    public static Serialized fromBytes(byte[] bytes, FrameAllocator into, BufferAllocator<HostBuffer> staging) {
        try {
            return read(new ByteArrayInputStream(bytes), into, staging, Limits.DEFAULT);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void readFully(DataInputStream in, byte[] into, int n) throws IOException {
        try {
            in.readFully(into, 0, n);
        } catch (EOFException e) {
            throw new IOException("frame stream ends early: the file is truncated", e);
        }
    }

    /** The staging piece for frames of these lengths: the largest frame, at most {@link #PIECE}, at least 1. */
    private static byte[] piece(LongStream frameLengths) {
        return new byte[(int) Math.min(PIECE, Math.max(1, frameLengths.max().orElse(0)))];
    }
}
