/**
 * The consumer as a named module (examples/consumer/run runs it on the module path and, the same jar, on the class
 * path). {@link com.example.consumer.Centroids} is sent by cuwire's generic serializer, which reads its fields: the
 * one line a modular application adds is the {@code opens} below (README, "Add cuwire to your build").
 */
module com.example.consumer {
    requires io.cuwire.cluster;
    requires io.cuwire.transport;
    requires io.cuwire.onnx;

    opens com.example.consumer to
            io.cuwire.serialize;
}
