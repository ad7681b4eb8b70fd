package io.cuwire.spark.internal;

import io.cuwire.ml.MlTypes;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.WireType;
import io.cuwire.spark.NodeStats;
import java.util.List;

/**
 * The requests and replies between cuwire endpoints of a Spark application, each one message over a connection:
 * <table>
 *   <caption>Requests</caption>
 *   <tr><td>{@link Fetch}</td><td>answered by a {@link FetchReply}; when its status is {@code ok}, the model's
 *       header and frames follow as the next message</td></tr>
 *   <tr><td>{@link Evict}</td><td>drops a model from an executor's cache; answered by a {@link FetchReply}
 *       {@code ok}</td></tr>
 *   <tr><td>{@link StatsQuery}</td><td>answered by {@link NodeStats}</td></tr>
 * </table>
 */
public final class Protocol {
    /** The reply status when the model follows, or the request was done. */
    public static final String OK = "ok";
    /** The reply status that sends the fetcher to a peer that holds (or is fetching) the model. */
    public static final String REDIRECT = "redirect";
    /** The reply status when the endpoint does not have the model. */
    public static final String MISSING = "missing";

    private Protocol() {
    }

    /**
     * Asks for a model's frames.
     *
     * @param id the model's id
     * @param version its version
     * @param requester the asking executor's id
     * @param requesterAddress where the asking executor's endpoint listens (it becomes a holder)
     * @param direct whether the driver must answer itself rather than redirect
     * @param failedPeer a peer the driver redirected to that did not answer, or {@code ""}
     */
    @WireType("cuwire.spark.Fetch")
    public record Fetch(long id, long version, String requester, String requesterAddress, boolean direct,
            String failedPeer) {
    }

    /**
     * The answer to a request.
     *
     * @param status {@link #OK}, {@link #REDIRECT} or {@link #MISSING}
     * @param address the peer to ask, for a redirect
     * @param message why, for a missing model
     */
    @WireType("cuwire.spark.FetchReply")
    public record FetchReply(String status, String address, String message) {
    }

    /**
     * Drops a model version from an executor's cache.
     *
     * @param id the model's id
     * @param version its version
     */
    @WireType("cuwire.spark.Evict")
    public record Evict(long id, long version) {
    }

    /**
     * Asks an endpoint for its {@link NodeStats}.
     *
     * @param reset whether to zero the counters after reading them (the copy counters are the process's and stay)
     */
    @WireType("cuwire.spark.StatsQuery")
    public record StatsQuery(boolean reset) {
    }

    /** A registry of the estimators, their partials and these messages. */
    public static TypeRegistry registry() {
        TypeRegistry r = MlTypes.register(new TypeRegistry());
        List<Class<?>> types = List.of(Fetch.class, FetchReply.class, Evict.class, StatsQuery.class, NodeStats.class);
        for (Class<?> type : types) {
            r.registerGeneric(type, Family.CUDA, Family.HOST);
            r.register(type);
        }
        return r;
    }
}
