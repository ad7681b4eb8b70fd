package io.cuwire.cluster.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The JFR event of one client broadcast, {@code io.cuwire.cluster.Broadcast}: how long the client spent comparing the
 * model with its last version, checking the holders, sending, and waiting for the acknowledgements. With the
 * transport's and the endpoints' events it shows where a broadcast's time goes. Disabled unless a recording enables
 * it.
 */
@Name(BroadcastEvent.NAME)
@Label("cuwire Broadcast")
@Category({"cuwire", "Cluster"})
@Description("One model broadcast by the client: the time of each phase")
@StackTrace(false)
@Enabled(false)
public final class BroadcastEvent extends jdk.jfr.Event {
    /** The event's name, to enable it in a recording. */
    public static final String NAME = "io.cuwire.cluster.Broadcast";

    @Label("Model")
    public long model;

    @Label("Version")
    public long version;

    @Label("Strategy")
    public String strategy;

    @Label("Sent To")
    @Description("Workers that got the frames")
    public int sent;

    @Label("Track")
    @Description("Serializing the model to compare it with its last broadcast")
    @Timespan
    public long trackNanos;

    @Label("Check")
    @Description("Asking the recorded holders whether they still hold it")
    @Timespan
    public long checkNanos;

    @Label("Send")
    @Description("Serializing the request and sending it (each in turn: until each transport is done with the frames)")
    @Timespan
    public long sendNanos;

    @Label("Settle")
    @Description("Waiting for the last acknowledgement after the sends")
    @Timespan
    public long settleNanos;
}
