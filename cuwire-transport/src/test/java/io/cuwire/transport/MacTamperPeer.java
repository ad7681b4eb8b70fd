package io.cuwire.transport;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.IpcHandle;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.SessionKeys;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;

/**
 * A secret holder's IPC peer that writes its message records by hand from the wire format (docs/wire-format.md), as
 * an on-path attacker would change them after the handshake, in a child JVM. Arguments: {@code mode address secret}
 * (hex). Its one message: a device frame of {@value #DEVICE_BYTES} bytes (pattern seed 7) and a host frame of
 * {@value #HOST_BYTES} bytes (pattern seed 9), label {@code tampered}.
 *
 * <table>
 *   <caption>Modes</caption>
 *   <tr><td>{@code valid}</td><td>sends the message as the transport would; prints {@code consumed} when the
 *       receiver's (checked) consumed record came back, then waits for the close</td></tr>
 *   <tr><td>{@code flip-prefix}, {@code flip-header}, {@code flip-reference}</td><td>sends it with one bit
 *       flipped after it was tagged: in the header length, the header, the device frame's reference (its
 *       offset)</td></tr>
 *   <tr><td>{@code replay}</td><td>sends it, reads the consumed record, sends the same bytes again</td></tr>
 *   <tr><td>{@code run-valid}, {@code run-flip}</td><td>a message of two device frames (the second: pattern seed 8)
 *       and the host frame, their references as one reference run; sent as tagged, or with one bit of the second
 *       frame's offset in the run flipped after it was tagged</td></tr>
 *   <tr><td>{@code splice}</td><td>opens two connections and sends on the second the message tagged for the
 *       first</td></tr>
 * </table>
 * All but {@code valid} then print {@code refused <the receiver's reason>}, its refusal's own tag checked.
 */
public final class MacTamperPeer {
    static final int DEVICE_BYTES = 1 << 20;
    static final int HOST_BYTES = 4096;

    private MacTamperPeer() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String hostPort = args[1].substring((Transports.IPC + "://").length());
        int colon = hostPort.lastIndexOf(':');
        String ip = hostPort.substring(0, colon);
        int port = Integer.parseInt(hostPort.substring(colon + 1));
        TransportConfig config = TransportConfig.builder()
                .secret(HexFormat.of().parseHex(args[2]))
                .receiveInto(d -> {
                    throw new IllegalStateException("this peer receives no frames");
                })
                .build();
        Device device = Devices.get(0);
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("tamper-host", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> dev = device.newAllocator("tamper-device", BufferAllocator.UNLIMITED);
                DeviceBuffer deviceFrame = dev.allocate(DEVICE_BYTES);
                DeviceBuffer secondFrame = dev.allocate(DEVICE_BYTES);
                HostBuffer hostFrame = host.allocate(HOST_BYTES)) {
            TestMessages.fill(deviceFrame, TestMessages.pattern(DEVICE_BYTES, 7));
            TestMessages.fill(secondFrame, TestMessages.pattern(DEVICE_BYTES, 8));
            TestMessages.fill(hostFrame, TestMessages.pattern(HOST_BYTES, 9));
            boolean run = mode.startsWith("run-");
            Message message = TestMessages.message(
                    "tampered",
                    run
                            ? List.<Buffer>of(deviceFrame, secondFrame, hostFrame)
                            : List.<Buffer>of(deviceFrame, hostFrame));
            try (Socket a = new Socket(ip, port)) {
                Handshake.Result ha = Handshake.client(a, config, Capabilities.local(config.families()));
                Socket target = a;
                Handshake.Result ht = ha;
                Socket b = null;
                if (mode.equals("splice")) {
                    b = new Socket(ip, port);
                    target = b;
                    ht = Handshake.client(b, config, Capabilities.local(config.families()));
                }
                SessionKeys.Direction seal = ha.keys().sending("test");
                SessionKeys.Direction open = ht.keys().receiving("test");
                Record record = run
                        ? runRecord(seal, message, List.of(deviceFrame, secondFrame), device)
                        : record(seal, message, deviceFrame, device);
                byte[] bytes = record.bytes;
                switch (mode) {
                    case "flip-prefix" -> bytes[4] ^= 0x01;
                    case "flip-header" -> bytes[record.header + record.headerLength - 1] ^= 0x01;
                    case "flip-reference", "run-flip" -> bytes[record.referenceOffset + 7] ^= 0x01;
                    default -> {
                        // sent as tagged
                    }
                }
                OutputStream out = target.getOutputStream();
                DataInputStream in = new DataInputStream(target.getInputStream());
                out.write(bytes);
                out.flush();
                if (mode.equals("valid") || mode.equals("run-valid") || mode.equals("replay")) {
                    int type = in.readUnsignedByte();
                    byte[] tag = new byte[SessionKeys.TAG_BYTES];
                    in.readFully(tag);
                    open.open(tag, "consumed record", ByteBuffer.wrap(new byte[] {(byte) type}));
                    System.out.println(type == 2 ? "consumed" : "unexpected record " + type);
                    if (!mode.equals("replay")) {
                        System.out.println("closed " + (in.read() < 0));
                        return;
                    }
                    out.write(bytes);
                    out.flush();
                }
                int type = in.readUnsignedByte();
                if (type != 3) {
                    System.out.println("unexpected record " + type);
                    return;
                }
                int length = in.readInt();
                byte[] reason = new byte[length - SessionKeys.TAG_BYTES];
                in.readFully(reason);
                byte[] tag = new byte[SessionKeys.TAG_BYTES];
                in.readFully(tag);
                open.open(
                        tag,
                        "refusal",
                        ByteBuffer.allocate(5).put(0, (byte) 3).putInt(1, length),
                        ByteBuffer.wrap(reason));
                System.out.println("refused " + new String(reason, StandardCharsets.UTF_8));
                if (b != null) {
                    b.close();
                }
            }
        }
    }

    /**
     * The message record of {@code message} (its frames: {@code deviceFrames}, then one host frame) with the device
     * frames' references as one reference run, {@code [-1: int16][count: int32][allocations: int32]} then each
     * allocation {@code [handle length: int16][handle][device: int32][bytes: int64]} then each frame {@code
     * [allocation: int32][offset: int64]}, one tag after it; {@link Record#referenceOffset} is the last frame's
     * offset.
     */
    private static Record runRecord(
            SessionKeys.Direction seal, Message message, List<DeviceBuffer> deviceFrames, Device device)
            throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int headerAt = writePrefixAndHeader(seal, message, out);
        List<IpcHandle> allocations = new java.util.ArrayList<>();
        for (DeviceBuffer d : deviceFrames) {
            IpcHandle a = device.exportAllocation(d);
            if (!allocations.contains(a)) {
                allocations.add(a);
            }
        }
        ByteArrayOutputStream run = new ByteArrayOutputStream();
        java.io.DataOutputStream w = new java.io.DataOutputStream(run);
        w.writeShort(-1);
        w.writeInt(deviceFrames.size());
        w.writeInt(allocations.size());
        for (IpcHandle a : allocations) {
            byte[] handle = a.handle();
            w.writeShort(handle.length);
            w.write(handle);
            w.writeInt(a.deviceOrdinal());
            w.writeLong(a.length());
        }
        int lastOffset = 0;
        for (DeviceBuffer d : deviceFrames) {
            w.writeInt(allocations.indexOf(device.exportAllocation(d)));
            lastOffset = run.size();
            w.writeLong(device.allocationOffset(d));
        }
        int runAt = out.size();
        out.write(run.toByteArray());
        out.write(seal.seal(ByteBuffer.wrap(run.toByteArray())));
        out.write(TestMessages.contents(message.frames().getLast()));
        return new Record(out.toByteArray(), headerAt, message.header().length, runAt + lastOffset);
    }

    /** Writes the record's type, header length and header, each followed by its tag; returns where the header is. */
    private static int writePrefixAndHeader(SessionKeys.Direction seal, Message message, ByteArrayOutputStream out)
            throws IOException {
        byte[] header = message.header();
        ByteBuffer prefix = ByteBuffer.allocate(5).put(0, (byte) 1).putInt(1, header.length);
        out.write(prefix.array());
        out.write(seal.seal(prefix));
        int headerAt = out.size();
        out.write(header);
        out.write(seal.seal(ByteBuffer.wrap(header)));
        return headerAt;
    }

    /** A message record and where its parts begin. */
    private record Record(byte[] bytes, int header, int headerLength, int referenceOffset) {}

    /**
     * The message record of {@code message} (its frames: one device frame, then one host frame) as the IPC
     * transport writes it with session keys: each part but the frames' bytes followed by its tag.
     */
    private static Record record(SessionKeys.Direction seal, Message message, DeviceBuffer deviceFrame, Device device)
            throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] header = message.header();
        int headerAt = writePrefixAndHeader(seal, message, out);
        IpcHandle allocation = device.exportAllocation(deviceFrame);
        byte[] handle = allocation.handle();
        ByteBuffer reference = ByteBuffer.allocate(2 + handle.length + 4 + 8 + 8)
                .putShort((short) handle.length)
                .put(handle)
                .putInt(allocation.deviceOrdinal())
                .putLong(allocation.length())
                .putLong(device.allocationOffset(deviceFrame))
                .flip();
        int referenceAt = out.size();
        out.write(reference.array());
        out.write(seal.seal(reference));
        out.write(TestMessages.contents(message.frames().get(1)));
        return new Record(out.toByteArray(), headerAt, header.length, referenceAt + 2 + handle.length + 4 + 8);
    }
}
