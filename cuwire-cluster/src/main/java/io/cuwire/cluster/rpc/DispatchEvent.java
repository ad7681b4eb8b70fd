package io.cuwire.cluster.rpc;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The JFR event of one message an {@link Endpoint}'s reader handled after the transport delivered it,
 * {@code io.cuwire.cluster.Dispatch}: decoding it, closing what the transport received, and completing the call it
 * answers or running the handler of the request. With the transport's own events it shows where a request's time
 * goes between the wire and the reply. Disabled unless a recording enables it.
 */
@Name(DispatchEvent.NAME)
@Label("cuwire Dispatch")
@Category({"cuwire", "Cluster"})
@Description("One message handled by an endpoint's reader: decode, release, handle")
@StackTrace(false)
@Enabled(false)
final class DispatchEvent extends jdk.jfr.Event {
    /** The event's name, to enable it in a recording. */
    static final String NAME = "io.cuwire.cluster.Dispatch";

    @Label("Endpoint")
    String endpoint;

    @Label("Operation")
    @Description("The registered type name of the request or reply")
    String op;

    @Label("Decode")
    @Timespan
    long decodeNanos;

    @Label("Release")
    @Description("Closing the received message (frames the value did not take)")
    @Timespan
    long releaseNanos;

    @Label("Handle")
    @Description("Completing the pending call, or running the request's handler (which may send the reply)")
    @Timespan
    long handleNanos;
}
