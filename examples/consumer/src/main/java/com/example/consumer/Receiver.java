package com.example.consumer;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * The receiving JVM: reads the secret (hex) from standard input, listens on a free loopback port, prints
 * {@code listening <address>}, receives one {@link Centroids} and prints {@code received <digest>}.
 */
public final class Receiver {
    private Receiver() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        byte[] secret = HexFormat.of().parseHex(in.readLine().strip());
        TypeRegistry registry = Centroids.registry();
        try (BufferAllocator<DeviceBuffer> device =
                        Devices.get(0).newAllocator("receiver-device", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("receiver-host", BufferAllocator.UNLIMITED)) {
            TransportConfig config = TransportConfig.builder()
                    .secret(secret)
                    .receiveInto(DeviceMap.of(host, device))
                    .build();
            try (Listener listener = Transports.tcp().listen("tcp://127.0.0.1:0", config)) {
                System.out.println("listening " + listener.address());
                System.out.flush();
                try (Connection c = listener.accept();
                        ReceivedMessage m = c.receive()) {
                    Centroids model = registry.deserialize(m.value(), Centroids.class, new DecodeTarget(device, host));
                    try {
                        System.out.println("received " + model.digest());
                    } finally {
                        model.centers.close();
                    }
                }
            }
        }
    }
}
