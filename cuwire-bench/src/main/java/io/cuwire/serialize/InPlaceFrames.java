package io.cuwire.serialize;

import java.util.ArrayList;
import java.util.List;

/**
 * Benchmark support (in {@code io.cuwire.serialize} for {@link Serialized}'s package-private constructor): a
 * received value whose frames are the sender's own frames, not moved and not owned — what an in-process hand-over
 * looks like. Decoding it rebuilds everything from the header while the arrays stay where they are, so a benchmark
 * measures the header work alone.
 */
public final class InPlaceFrames {
    private InPlaceFrames() {
    }

    /** {@code header} (parsed from the sender's bytes) over the sender's {@code frames}, borrowed, never closed. */
    public static Serialized received(Serialized.Header header, List<Frame> frames) {
        if (frames.size() != header.frames().size()) {
            throw new MalformedHeaderException("header describes " + header.frames().size() + " frames, "
                    + frames.size() + " given");
        }
        List<Frame> borrowed = new ArrayList<>(frames.size());
        for (int i = 0; i < frames.size(); i++) {
            Frame f = frames.get(i);
            if (f.length() != header.frames().get(i).length()) {
                throw new MalformedHeaderException("frame " + i + " is " + f.length() + " bytes, header says "
                        + header.frames().get(i).length());
            }
            borrowed.add(new Frame(f.buffer(), false));
        }
        return new Serialized(header, borrowed);
    }
}
