package io.cuwire.cluster.rpc;

import io.cuwire.serialize.WireType;

/** The requests of the endpoint tests' serving sides. */
sealed interface TestRequest extends Request {
    /** Answered with its value. */
    @WireType("test.Echo")
    record Echo(long id, Object value) implements TestRequest {}

    /** Answered with a value of the serving side's own. */
    @WireType("test.Give")
    record Give(long id) implements TestRequest {}

    /** Makes the serving side's handler fail with an {@link Error}. */
    @WireType("test.Explode")
    record Explode(long id, Object value) implements TestRequest {}
}
