package io.cuwire.transport.internal;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** The JFR event of one message sent or received: {@code io.cuwire.transport.Message}. */
@Name(MessageEvent.NAME)
@Label("cuwire Message")
@Category({"cuwire", "Transport"})
@Description("One message sent or received by a cuwire transport: bytes per frame kind, staging copies, time")
@StackTrace(false)
public final class MessageEvent extends jdk.jfr.Event {
    /** The event's name, to enable it in a recording. */
    public static final String NAME = "io.cuwire.transport.Message";

    @Label("Transport")
    String transport;

    @Label("Direction")
    String direction;

    @Label("Frames")
    int frames;

    @Label("Header")
    @DataAmount
    long headerBytes;

    @Label("Host Frames")
    @DataAmount
    long hostFrameBytes;

    @Label("Pinned Frames")
    @DataAmount
    long pinnedFrameBytes;

    @Label("Device Frames")
    @DataAmount
    long deviceFrameBytes;

    @Label("Device to Host Copies")
    @DataAmount
    long deviceToHostBytes;

    @Label("Host to Device Copies")
    @DataAmount
    long hostToDeviceBytes;
}
