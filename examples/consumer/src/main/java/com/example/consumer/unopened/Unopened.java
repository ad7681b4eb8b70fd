package com.example.consumer.unopened;

import io.cuwire.serialize.WireType;

/**
 * A model class in a package that module-info does not open to cuwire's serializer: on the module path it cannot be
 * sent, and the error says which line to add; on the class path it can.
 */
@WireType("consumer.Unopened")
public final class Unopened {
    final int value;

    /** A model holding {@code value}. */
    public Unopened(int value) {
        this.value = value;
    }
}
