package io.cuwire.serialize;

/**
 * A serializer family: how a value's arrays travel. A send names an ordered chain of families; each value takes the
 * first family in the chain that can serialize it (the fallback is per value, as in Dask).
 */
public enum Family {
    /** Device arrays become device frames: zero bytes go to the host. */
    CUDA("cuda"),
    /** Device arrays are copied to host frames on send and rebuilt on the receiver's device. */
    HOST("host"),
    /** JDK serialization, for types on an explicit allow-list only; off unless the chain names it. */
    JAVA("java");

    private final String wireName;

    Family(String wireName) {
        this.wireName = wireName;
    }

    /** The family's name on the wire. */
    public String wireName() {
        return wireName;
    }

    /** The family named {@code name} on the wire. */
    public static Family fromWireName(String name) {
        for (Family f : values()) {
            if (f.wireName.equals(name)) {
                return f;
            }
        }
        throw new MalformedHeaderException("unknown serializer family '" + name + "'");
    }
}
