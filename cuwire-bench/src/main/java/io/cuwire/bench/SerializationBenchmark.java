package io.cuwire.bench;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.TransferScope;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.fory.Fory;
import org.apache.fory.config.Language;
import org.apache.fory.io.ForyInputStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Encode plus decode of one {@link BenchModel} (ten fields, two float32 device arrays of {@code arraySize} bytes
 * each) by cuwire's {@code cuda} and {@code host} families, JDK serialization, Kryo and Fory. Every invocation
 * closes what it decoded. No transport is involved:
 * <ul>
 *   <li>{@code cudaFamily}: serialize, encode the header, parse it, decode over the sender's own device frames
 *       (lent, not moved: {@link Buffer#lend}): the header work alone, which must not grow with the arrays.</li>
 *   <li>{@code hostFamily}: the same with device arrays copied to host frames (D2H) and rebuilt on the device (H2D).
 *   </li>
 *   <li>{@code jdkSerialization}, {@code kryo}, {@code fory}: the whole model through the library's stream into an
 *       in-memory chunked byte stream (a socket's stand-in) and back; the arrays go through the heap as the user's
 *       serializer (or {@link NdArray}'s JDK serial form) copies them, and are rebuilt on the device.</li>
 * </ul>
 * The trial set-up runs one checked round trip with the copy counters open and writes what it saw (or why the
 * library cannot do it) to {@value #NOTES_PROPERTY}, for {@link SerializationBench}'s summary.
 */
@State(Scope.Benchmark)
public class SerializationBenchmark {
    /** System property: a directory for one notes file per method and array size. */
    public static final String NOTES_PROPERTY = "cuwire.bench.notes";

    /** Bytes per array. */
    @Param({"1024", "1073741824"})
    public long arraySize;

    private BufferAllocator<DeviceBuffer> senderDevice;
    private BufferAllocator<HostBuffer> senderHost;
    private BufferAllocator<DeviceBuffer> receiverDevice;
    private BufferAllocator<HostBuffer> receiverHost;
    private TypeRegistry registry;
    private DecodeTarget target;
    private BenchModel model;
    private final ChunkedBytes stream = new ChunkedBytes();
    private Kryo kryo;
    private Output kryoOutput;
    private Fory fory;

    /** Makes the model and the method's machinery, then one checked round trip. */
    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) {
        String benchmark = params.getBenchmark();
        setUp(benchmark.substring(benchmark.lastIndexOf('.') + 1));
    }

    void setUp(String method) {
        Device device = Devices.get(0);
        senderDevice = device.newAllocator("bench-sender", BufferAllocator.UNLIMITED);
        receiverDevice = device.newAllocator("bench-receiver", BufferAllocator.UNLIMITED);
        receiverHost = BufferAllocator.host("bench-receiver-host", BufferAllocator.UNLIMITED);
        senderHost = BufferAllocator.host("bench-sender-host", BufferAllocator.UNLIMITED);
        registry = new TypeRegistry(Limits.DEFAULT, 64 * 1024, senderHost)
                .registerGeneric(BenchModel.class, Family.CUDA, Family.HOST)
                .register(BenchModel.class, "bench.model");
        target = new DecodeTarget(receiverDevice, receiverHost, Limits.DEFAULT);
        model = BenchModel.fitted(senderDevice, arraySize);
        Properties notes = new Properties();
        try {
            if (method.equals("kryo")) {
                kryo = new Kryo();
                kryo.register(BenchModel.class);
                kryo.register(BenchModel.Init.class);
                kryo.register(ArrayList.class);
                kryo.register(NdArray.class, new NdArrayKryoSerializer(receiverDevice));
                kryoOutput = new Output(stream, 64 * 1024);
            } else if (method.equals("fory")) {
                fory = Fory.builder()
                        .withLanguage(Language.JAVA)
                        .requireClassRegistration(true)
                        .build();
                fory.register(BenchModel.class);
                fory.register(BenchModel.Init.class);
                fory.registerSerializer(NdArray.class, new NdArrayForySerializer(fory.getConfig(), receiverDevice));
            }
            if (!method.equals("deviceAllocation")) {
                BenchModel back;
                long start = System.nanoTime();
                try (TransferScope scope = CopyEngine.openScope(method)) {
                    back = roundTrip(method);
                    notes.setProperty("d2h", String.valueOf(scope.bytes(CopyDirection.D2H)));
                    notes.setProperty("h2d", String.valueOf(scope.bytes(CopyDirection.H2D)));
                }
                notes.setProperty("firstRoundTripMillis", String.valueOf((System.nanoTime() - start) / 1_000_000));
                try (back) {
                    boolean same = arraySize <= (1 << 20) ? model.sameContentAs(back) : model.sameShapeAs(back);
                    if (!same) {
                        throw new IllegalStateException(method + " decoded a different model");
                    }
                }
                notes.setProperty("wireBytes", String.valueOf(wireBytes(method)));
            }
            notes.setProperty("status", "ok");
        } catch (RuntimeException | Error e) {
            String reason = "not possible: " + e;
            for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
                reason += "; caused by " + c;
            }
            notes.setProperty("status", reason);
            writeNotes(method, notes);
            throw new IllegalStateException(reason, e);
        }
        writeNotes(method, notes);
    }

    private long wireBytes(String method) {
        return switch (method) {
            case "cudaFamily", "hostFamily" -> {
                try (Serialized s =
                        registry.serialize(model, method.equals("cudaFamily") ? Family.CUDA : Family.HOST)) {
                    yield s.encodeHeader().length + s.totalFrameBytes();
                }
            }
            default -> stream.size();
        };
    }

    private void writeNotes(String method, Properties notes) {
        String dir = System.getProperty(NOTES_PROPERTY);
        if (dir == null) {
            return;
        }
        try (Writer w = Files.newBufferedWriter(Path.of(dir, method + "-" + arraySize + ".properties"))) {
            notes.store(w, null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Closes the model and proves nothing decoded was left open. */
    @TearDown(Level.Trial)
    public void tearDown() {
        if (model != null) {
            model.close();
        }
        for (BufferAllocator<?> a : new BufferAllocator<?>[] {senderDevice, senderHost, receiverDevice, receiverHost}) {
            if (a != null) {
                a.close();
            }
        }
    }

    BenchModel roundTrip(String method) {
        return switch (method) {
            case "cudaFamily" -> viaFamily(Family.CUDA);
            case "hostFamily" -> viaFamily(Family.HOST);
            case "jdkSerialization" -> viaJdk();
            case "kryo" -> viaKryo();
            case "fory" -> viaFory();
            default -> throw new IllegalArgumentException("no benchmark method '" + method + "'");
        };
    }

    /**
     * {@code header} over loans of the sender's own {@code frames}: what an in-process hand-over receives. The loans
     * belong to the received value; closing them frees nothing, so the sender's frames stay where they are.
     */
    private static Serialized handedOver(Serialized.Header header, List<Frame> frames) {
        List<Buffer> loans = new ArrayList<>(frames.size());
        for (Frame f : frames) {
            loans.add(f.buffer().lend(Buffer.Releaser.NONE));
        }
        return Serialized.received(header, loans);
    }

    private BenchModel viaFamily(Family family) {
        try (Serialized out = registry.serialize(model, family)) {
            Serialized.Header header = Serialized.parseHeader(out.encodeHeader(), Limits.DEFAULT);
            try (Serialized in = handedOver(header, out.frames())) {
                return registry.deserialize(in, BenchModel.class, target);
            }
        }
    }

    private BenchModel viaJdk() {
        stream.reset();
        try (ObjectOutputStream out = new ObjectOutputStream(stream)) {
            out.writeObject(model);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        NdArray.ReadScope arrays = NdArray.readTarget(receiverDevice);
        try (ObjectInputStream in = new ObjectInputStream(stream.input())) {
            return (BenchModel) in.readObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        } finally {
            arrays.close();
        }
    }

    private BenchModel viaKryo() {
        stream.reset();
        kryoOutput.setOutputStream(stream);
        kryo.writeObject(kryoOutput, model);
        kryoOutput.flush();
        try (Input in = new Input(stream.input(), 64 * 1024)) {
            return kryo.readObject(in, BenchModel.class);
        }
    }

    private BenchModel viaFory() {
        stream.reset();
        fory.serialize(stream, model);
        return (BenchModel) fory.deserialize(new ForyInputStream(stream.input()));
    }

    /**
     * A reference, not a serializer: allocating and freeing two arrays of the model's size on the receiving device,
     * which every method but {@code cudaFamily} pays to rebuild the model (a new shared-memory file per array on the
     * emulated device).
     */
    @Benchmark
    public void deviceAllocation(Blackhole bh) {
        try (NdArray a = NdArray.empty(
                        receiverDevice,
                        io.cuwire.memory.DType.FLOAT32,
                        io.cuwire.memory.Order.C,
                        arraySize / Float.BYTES);
                NdArray b = NdArray.empty(
                        receiverDevice,
                        io.cuwire.memory.DType.FLOAT32,
                        io.cuwire.memory.Order.C,
                        arraySize / Float.BYTES)) {
            bh.consume(a);
            bh.consume(b);
        }
    }

    /** The {@code cuda} family: header work only, the device frames stay where they are. */
    @Benchmark
    public void cudaFamily(Blackhole bh) {
        try (BenchModel back = viaFamily(Family.CUDA)) {
            bh.consume(back);
        }
    }

    /** The {@code host} family: device arrays copied to host frames and rebuilt on the device. */
    @Benchmark
    public void hostFamily(Blackhole bh) {
        try (BenchModel back = viaFamily(Family.HOST)) {
            bh.consume(back);
        }
    }

    /** One JDK object stream of the whole model, its arrays copied to the heap inside the stream. */
    @Benchmark
    public void jdkSerialization(Blackhole bh) {
        try (BenchModel back = viaJdk()) {
            bh.consume(back);
        }
    }

    /** Kryo 5 with a user's {@link NdArray} serializer (bytes through the heap). */
    @Benchmark
    public void kryo(Blackhole bh) {
        try (BenchModel back = viaKryo()) {
            bh.consume(back);
        }
    }

    /** Apache Fory with a user's {@link NdArray} serializer (bytes through the heap). */
    @Benchmark
    public void fory(Blackhole bh) {
        try (BenchModel back = viaFory()) {
            bh.consume(back);
        }
    }
}
