package io.cuwire.cluster.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.cluster.runtime.ModelCacheTest.Model;
import java.util.List;
import org.junit.jupiter.api.Test;

class ObjectStoreTest {
    @Test
    void shouldCloseWhatItFreesAndWhatItHoldsWhenClosed() {
        ObjectStore store = new ObjectStore();
        Model a = new Model();
        Model b = new Model();
        Model c = new Model();
        long ia = store.put(a);
        long ib = store.put(List.of(b));
        long ic = store.put(c);
        assertEquals(List.of(1L, 2L, 3L), List.of(ia, ib, ic));
        assertSame(a, store.get(ia));
        store.free(ia);
        store.free(ia);
        assertEquals(1, a.closed.get(), "freed once");
        assertNull(store.get(ia));
        assertEquals(2, store.size());
        store.close();
        assertEquals(1, b.closed.get(), "a stored list's elements are closed");
        assertEquals(1, c.closed.get());
        assertEquals(0, store.size());
        assertEquals(4L, store.put("ids are not reused"));
    }

    @Test
    void shouldRefuseToStoreNothing() {
        assertEquals(
                "value",
                assertThrows(NullPointerException.class, () -> new ObjectStore().put(null))
                        .getMessage());
    }
}
