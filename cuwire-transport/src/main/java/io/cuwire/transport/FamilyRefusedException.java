package io.cuwire.transport;

import io.cuwire.serialize.Family;
import java.util.ArrayList;
import java.util.List;

/**
 * A message whose header uses a serializer family the connection did not agree in the handshake
 * ({@link Connection#families()}). The receiver refuses it before allocating any of its frames, and the connection
 * breaks, as for any other protocol violation; {@link Connection#send} refuses it at the sender first, where the
 * connection stays usable.
 */
public class FamilyRefusedException extends ProtocolViolationException {
    private static final long serialVersionUID = 1L;

    private final List<Family> refused;
    private final List<Family> accepted;

    /**
     * A refusal.
     *
     * @param what who refused what, for the message: e.g. {@code refused a message from tcp://host:1234}
     * @param refused the message's families the connection did not agree
     * @param accepted the connection's agreed chain
     */
    public FamilyRefusedException(String what, List<Family> refused, List<Family> accepted) {
        super(what + ": message uses family " + names(refused) + ", this connection accepts " + names(accepted));
        this.refused = List.copyOf(refused);
        this.accepted = List.copyOf(accepted);
    }

    /**
     * The same refusal, reported again under {@code message} (a broken connection's later callers each get one).
     *
     * @param message the whole message
     * @param same the refusal
     */
    public FamilyRefusedException(String message, FamilyRefusedException same) {
        super(message, same);
        this.refused = same.refused;
        this.accepted = same.accepted;
    }

    private static List<String> names(List<Family> families) {
        List<String> names = new ArrayList<>(families.size());
        for (Family f : families) {
            names.add(f.wireName());
        }
        return names;
    }

    /** The message's families the connection did not agree. */
    public List<Family> refused() {
        return refused;
    }

    /** The connection's agreed chain. */
    public List<Family> accepted() {
        return accepted;
    }
}
