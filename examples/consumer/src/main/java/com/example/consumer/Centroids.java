package com.example.consumer;

import io.cuwire.memory.NdArray;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.PostDeserialize;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.WireType;
import java.util.Arrays;

/** A model class of this project's own, sent the way cuwire's estimators are (README "Serialize your own model"). */
@WireType("consumer.Centroids")
public final class Centroids implements PostDeserialize {
    /** How distances to the centers are measured. */
    public enum Distance {
        EUCLIDEAN,
        MANHATTAN
    }

    final String name;
    final float[] weights; // 256 KiB: a frame of its own
    final Distance distance;
    final NdArray centers; // device memory: a device frame in the cuda family
    transient double total; // not sent: rebuilt after decoding

    Centroids(String name, float[] weights, Distance distance, NdArray centers) {
        this.name = name;
        this.weights = weights;
        this.distance = distance;
        this.centers = centers;
        postDeserialize();
    }

    @Override
    public void postDeserialize() {
        double sum = 0;
        for (float w : weights) {
            sum += w;
        }
        total = sum;
    }

    /** The registrations both processes make. */
    static TypeRegistry registry() {
        return new TypeRegistry()
                .registerGeneric(Centroids.class, Family.CUDA, Family.HOST)
                .register(Centroids.class)
                .register(Distance.class, "consumer.Distance");
    }

    /** What the sender and the receiver each print, to be compared. */
    String digest() {
        return "name=" + name + " weights=" + weights.length + " total=" + total + " distance=" + distance + " centers="
                + centers.kind() + Arrays.toString(centers.toFloatArray());
    }
}
