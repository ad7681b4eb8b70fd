/**
 * Header + frames: families, the type registry, the generic field-walking serializer, custom serializers and the wire
 * codec. The generic serializer and the {@code java} family read and set the fields of the types they are given by
 * reflection, so a modular application opens the packages of the types it sends to this module:
 * {@code opens com.example.model to io.cuwire.serialize;} (README, "Add cuwire to your build").
 */
module io.cuwire.serialize {
    requires transitive io.cuwire.memory;
    // sun.reflect.ReflectionFactory: instances of classes without a no-argument constructor, as Java serialization
    // makes them (internal.JdkSerialization)
    requires jdk.unsupported;

    exports io.cuwire.serialize;
    exports io.cuwire.serialize.msgpack;
}
