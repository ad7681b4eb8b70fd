package io.cuwire.serialize;

/**
 * Bounds on what one message may make a receiver allocate and compute. Sizes are checked while decoding, before
 * anything is allocated: the header's size, the number of frames, how deep values nest, the size of each frame, and
 * the total of all frames. Work is bounded by a per-message budget, {@code maxDecodeWork}, charged as the decoder
 * goes (see below), so that a few kilobytes whose back-references describe an exponential graph cannot pin a core.
 *
 * <p>Decode work is counted in units: one per header node decoded (a {@code ref} node costs one, not the size of
 * what it names); for every element added to a hash or tree set, and every key added to a hash or tree map, the
 * number of nodes the element's value spans, counted the way hashing and comparing reach them (a value shared by
 * reference counts every time it is reached), once per hash or comparison the insertion makes (equal hash codes
 * cost one more comparison each); in the {@code java} family, one per object reference in the stream, and, for
 * every entry of a hash set or map the stream rebuilds, the objects that entry reaches. The default budget never
 * refuses a header within {@code maxHeaderBytes} whose sets and maps hold values that are not shared: a model of
 * several gigabytes keeps its arrays in frames, which cost no decode work.
 *
 * @param maxHeaderBytes largest encoded header
 * @param maxFrames most frames in one message
 * @param maxDepth deepest nesting of maps, lists and nested objects
 * @param maxFrameBytes largest single frame
 * @param maxTotalFrameBytes largest sum of all frames of one message
 * @param maxCollectionSize most entries of one map or list in a header
 * @param maxDecodeWork most units of decode work one message may cost (see above); beyond it the decode fails
 *     with {@link DecodeBudgetExceededException}
 */
public record Limits(
        long maxHeaderBytes,
        int maxFrames,
        int maxDepth,
        long maxFrameBytes,
        long maxTotalFrameBytes,
        int maxCollectionSize,
        long maxDecodeWork) {
    /**
     * The default decode budget: 2^27 units. Measured on a shared 2-core VM: a 1 KB header that spends 10^8 of them
     * hashing one shared value decodes in 0.3 to 0.6 s; one that would spend more is refused at once.
     */
    public static final long DEFAULT_DECODE_WORK = 1L << 27;

    /**
     * 16 MiB of header, 65,536 frames, depth 64, frames up to 256 GiB (an H200 holds 141 GB), 1 TiB per message,
     * 2^20 entries per collection, {@link #DEFAULT_DECODE_WORK} units of decode work.
     */
    public static final Limits DEFAULT =
            new Limits(16L << 20, 65_536, 64, 256L << 30, 1L << 40, 1 << 20, DEFAULT_DECODE_WORK);

    public Limits {
        if (maxHeaderBytes <= 0
                || maxFrames < 0
                || maxDepth <= 0
                || maxFrameBytes < 0
                || maxTotalFrameBytes < 0
                || maxCollectionSize < 0
                || maxDecodeWork <= 0) {
            throw new IllegalArgumentException("limits must be positive: " + this);
        }
    }

    /** Limits with the {@link #DEFAULT_DECODE_WORK default decode budget}. */
    public Limits(
            long maxHeaderBytes,
            int maxFrames,
            int maxDepth,
            long maxFrameBytes,
            long maxTotalFrameBytes,
            int maxCollectionSize) {
        this(
                maxHeaderBytes,
                maxFrames,
                maxDepth,
                maxFrameBytes,
                maxTotalFrameBytes,
                maxCollectionSize,
                DEFAULT_DECODE_WORK);
    }

    /** These limits with another decode budget. */
    public Limits withMaxDecodeWork(long units) {
        return new Limits(
                maxHeaderBytes, maxFrames, maxDepth, maxFrameBytes, maxTotalFrameBytes, maxCollectionSize, units);
    }
}
