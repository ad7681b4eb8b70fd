package io.cuwire.transport.internal.ipc;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The JFR event of one message with device frames received over CUDA IPC, {@code io.cuwire.transport.IpcReceive}:
 * where the receiver's time went, phase by phase, so that a per-message cost can be found on a GPU host from a
 * recording ({@code jfr print --events io.cuwire.transport.IpcReceive}). Disabled unless a recording enables it.
 */
@Name(IpcReceiveEvent.NAME)
@Label("cuwire IPC Receive")
@Category({"cuwire", "Transport"})
@Description("One message with device frames received over CUDA IPC: the time of each phase on the reader thread")
@StackTrace(false)
@Enabled(false)
public final class IpcReceiveEvent extends jdk.jfr.Event {
    /** The event's name, to enable it in a recording. */
    public static final String NAME = "io.cuwire.transport.IpcReceive";

    @Label("Device Frames")
    int deviceFrames;

    @Label("Header")
    @Description("Reading and parsing the header, allocating the frames, reading host frames and references")
    @Timespan
    long headerNanos;

    @Label("Mapping")
    @Description("Finding (or opening) the mappings of the sender's allocations")
    @Timespan
    long mappingNanos;

    @Label("Copy")
    @Description("Copying the device frames out of the sender's memory")
    @Timespan
    long copyNanos;

    @Label("Liveness")
    @Description("Checking that the sender was alive after the copies")
    @Timespan
    long livenessNanos;

    @Label("Consumed")
    @Description("Writing the consumed record to the sender")
    @Timespan
    long consumedNanos;
}
