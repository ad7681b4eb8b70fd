package io.cuwire.transport.internal.ucx;

import io.cuwire.transport.internal.NumericProperty;

/**
 * How the device frames of one UCX connection cross: chosen once, when the connection is made, from what each side
 * told of its UCX in the handshake ({@code ucxCuda} in the capabilities: its UCP context reports the CUDA memory type).
 * Both sides come to the same choice from the same two bits.
 */
enum DevicePath {
    /**
     * UCX moves device memory itself: each part names a device address and the CUDA memory type on both sides, parts
     * are {@link #DIRECT_PART_BYTES} (UCX's rendezvous protocols then pick {@code cuda_ipc} within a host, or
     * {@code cuda_copy} or GPUDirect RDMA where the build has them), and cuwire's copy engine copies nothing.
     */
    DIRECT,
    /**
     * Device frames are staged through a pinned host ring ({@link UcxStaging}): device-to-host on the sender,
     * host-to-device on the receiver, counted by the copy engine.
     */
    STAGED;

    /** System property: the parts of device frames on the direct path, in bytes (4096 up to 1 GiB). */
    static final String DIRECT_PART_PROPERTY = "cuwire.ucx.directPartBytes";
    /** The largest direct part a receiver accepts: on the direct path a part is received in place, not staged. */
    static final int MAX_DIRECT_PART_BYTES = 1 << 30;
    /**
     * The parts of device frames on the direct path: few requests per large frame, each one rendezvous; 256 MiB
     * unless {@value #DIRECT_PART_PROPERTY} says otherwise.
     */
    static final int DIRECT_PART_BYTES = directPartBytes(System.getProperty(DIRECT_PART_PROPERTY));

    /** The direct part for the property's value ({@code null}: the default, 256 MiB). */
    static int directPartBytes(String property) {
        return (int) NumericProperty.parse(
                DIRECT_PART_PROPERTY, property, UcxConnection.MAX_DEVICE_CHUNK, 4096, MAX_DIRECT_PART_BYTES, "bytes");
    }

    /**
     * The path of a connection between a side whose UCX carries CUDA memory ({@code mine}) and a peer that told
     * whether its UCX does ({@code peers}): direct only when both do. A one-sided direct path would work for UCX
     * (it copies a CUDA send into a host receive itself) but would hide that copy from the counters of the side
     * whose UCX lacks CUDA, which then believes device memory went through its pinned ring.
     */
    static DevicePath negotiate(boolean mine, boolean peers) {
        return mine && peers ? DIRECT : STAGED;
    }
}
