package io.cuwire.serialize;

import java.util.Deque;
import java.util.Iterator;

/** Field paths for messages, from a stack of names: {@code KMeans.state.centers}, {@code history[3]}. */
final class Paths {
    private Paths() {}

    /** The path of a stack whose top is the innermost name. */
    static String of(Deque<String> stack) {
        StringBuilder sb = new StringBuilder();
        Iterator<String> it = stack.descendingIterator();
        while (it.hasNext()) {
            String p = it.next();
            if (!sb.isEmpty() && !p.startsWith("[")) {
                sb.append('.');
            }
            sb.append(p);
        }
        return sb.toString();
    }
}
