package io.cuwire.serialize;

/**
 * Bounds checked while decoding, before anything is allocated: the header's size, the number of frames, how deep
 * values nest, the size of each frame, and the total of all frames.
 *
 * @param maxHeaderBytes largest encoded header
 * @param maxFrames most frames in one message
 * @param maxDepth deepest nesting of maps, lists and nested objects
 * @param maxFrameBytes largest single frame
 * @param maxTotalFrameBytes largest sum of all frames of one message
 * @param maxCollectionSize most entries of one map or list in a header
 */
public record Limits(long maxHeaderBytes, int maxFrames, int maxDepth, long maxFrameBytes, long maxTotalFrameBytes,
        int maxCollectionSize) {
    /** 16 MiB of header, 65,536 frames, depth 64, frames up to 256 GiB (an H200 holds 141 GB). */
    public static final Limits DEFAULT = new Limits(16L << 20, 65_536, 64, 256L << 30, 1L << 40, 1 << 20);

    public Limits {
        if (maxHeaderBytes <= 0 || maxFrames < 0 || maxDepth <= 0 || maxFrameBytes < 0 || maxTotalFrameBytes < 0
                || maxCollectionSize < 0) {
            throw new IllegalArgumentException("limits must be positive: " + this);
        }
    }
}
