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
                HostBuffer hostFrame = host.allocate(HOST_BYTES)) {
            TestMessages.fill(deviceFrame, TestMessages.pattern(DEVICE_BYTES, 7));
            TestMessages.fill(hostFrame, TestMessages.pattern(HOST_BYTES, 9));
            Message message = TestMessages.message("tampered", List.<Buffer>of(deviceFrame, hostFrame));
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
                Record record = record(seal, message, deviceFrame, device);
                byte[] bytes = record.bytes;
                switch (mode) {
                    case "flip-prefix" -> bytes[4] ^= 0x01;
                    case "flip-header" -> bytes[record.header + record.headerLength - 1] ^= 0x01;
                    case "flip-reference" -> bytes[record.referenceOffset + 7] ^= 0x01;
                    default -> {
                        // sent as tagged
                    }
                }
                OutputStream out = target.getOutputStream();
                DataInputStream in = new DataInputStream(target.getInputStream());
                out.write(bytes);
                out.flush();
                if (mode.equals("valid") || mode.equals("replay")) {
                    int type = in.readUnsignedByte();
                    byte[] tag = new byte[SessionKeys.TAG_BYTES];
                    in.readFully(tag);
                    open.open(tag, "consumed record", ByteBuffer.wrap(new byte[] {(byte) type}));
                    System.out.println(type == 2 ? "consumed" : "unexpected record " + type);
                    if (mode.equals("valid")) {
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
        ByteBuffer prefix = ByteBuffer.allocate(5).put(0, (byte) 1).putInt(1, header.length);
        out.write(prefix.array());
        out.write(seal.seal(prefix));
        int headerAt = out.size();
        out.write(header);
        out.write(seal.seal(ByteBuffer.wrap(header)));
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
