package io.cuwire.bench;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An in-memory byte stream kept as a list of chunks (growing to 16 MiB each), standing in for a transport's socket:
 * a stream of any length, where one {@code byte[]} would stop at 2 GiB. Chunks are kept across {@link #reset()}, as
 * a transport keeps its buffers, so a benchmark does not measure the heap's page faults. Not thread-safe.
 */
final class ChunkedBytes extends OutputStream {
    private static final int FIRST_CHUNK = 4096;
    private static final int MAX_CHUNK = 16 << 20;

    private final List<byte[]> chunks = new ArrayList<>();
    private int chunk;
    private int position;
    private long size;

    /** Forgets the bytes written, keeping the chunks for the next write. */
    void reset() {
        chunk = 0;
        position = 0;
        size = 0;
    }

    /** Bytes written since the last reset. */
    long size() {
        return size;
    }

    @Override
    public void write(int b) {
        current()[position++] = (byte) b;
        size++;
    }

    @Override
    public void write(byte[] b, int off, int len) {
        Objects.checkFromIndexSize(off, len, b.length);
        while (len > 0) {
            byte[] c = current();
            int n = Math.min(len, c.length - position);
            System.arraycopy(b, off, c, position, n);
            position += n;
            off += n;
            len -= n;
            size += n;
        }
    }

    private byte[] current() {
        while (chunk < chunks.size() && position == chunks.get(chunk).length) {
            chunk++;
            position = 0;
        }
        if (chunk == chunks.size()) {
            int last = chunks.isEmpty() ? FIRST_CHUNK / 2 : chunks.get(chunks.size() - 1).length;
            chunks.add(new byte[Math.min(MAX_CHUNK, last * 2)]);
            position = 0;
        }
        return chunks.get(chunk);
    }

    /** A stream over the bytes written since the last reset. */
    InputStream input() {
        long total = size;
        return new InputStream() {
            private int c;
            private int p;
            private long left = total;

            @Override
            public int read() {
                if (left == 0) {
                    return -1;
                }
                advance();
                left--;
                return chunks.get(c)[p++] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                Objects.checkFromIndexSize(off, len, b.length);
                if (len == 0) {
                    return 0;
                }
                if (left == 0) {
                    return -1;
                }
                int done = 0;
                while (done < len && left > 0) {
                    advance();
                    byte[] src = chunks.get(c);
                    int n = (int) Math.min(Math.min(len - done, src.length - p), left);
                    System.arraycopy(src, p, b, off + done, n);
                    p += n;
                    done += n;
                    left -= n;
                }
                return done;
            }

            @Override
            public int available() {
                return (int) Math.min(Integer.MAX_VALUE, left);
            }

            private void advance() {
                while (p == chunks.get(c).length) {
                    c++;
                    p = 0;
                }
            }
        };
    }
}
