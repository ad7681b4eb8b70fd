package io.cuwire.serialize;

/**
 * Implemented by types that rebuild skipped state (native handles, caches) after the generic serializer has set
 * their fields. Called once per decoded instance, after all its fields are set and before it is returned.
 */
public interface PostDeserialize {
    void postDeserialize();
}
