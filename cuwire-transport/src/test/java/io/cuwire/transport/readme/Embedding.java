package io.cuwire.transport.readme;

import io.cuwire.memory.NdArray;
import io.cuwire.serialize.PostDeserialize;
import io.cuwire.serialize.WireOptional;
import io.cuwire.serialize.WireType;
import java.util.TreeMap;

// README model begin
@WireType("example.Embedding") // the name on the wire (default: the class name)
public final class Embedding implements PostDeserialize {
    public enum Metric {
        COSINE,
        EUCLIDEAN
    }

    final String name; // final fields, no no-argument constructor: both fine
    final float[] weights; // 64 KiB or more: a frame of its own, never in the header
    final Metric metric; // enums travel by their registered name
    final TreeMap<String, Integer> vocabulary; // comes back as a TreeMap
    final NdArray projection; // device memory: a device frame in the cuda family

    @WireOptional
    int revision; // older writers may leave it out (then 0)

    transient double norm; // not sent: rebuilt after decoding

    public Embedding(
            String name, float[] weights, Metric metric, TreeMap<String, Integer> vocabulary, NdArray projection) {
        this.name = name;
        this.weights = weights;
        this.metric = metric;
        this.vocabulary = vocabulary;
        this.projection = projection;
        postDeserialize();
    }

    @Override
    public void postDeserialize() { // runs after the fields are set, on the receiver
        double sum = 0;
        for (float w : weights) {
            sum += w * w;
        }
        norm = Math.sqrt(sum);
    }
}
// README model end
