package io.cuwire.ml;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.io.Serial;
import java.io.Serializable;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The base of every estimator, shaped like scikit-learn's: hyper-parameters are {@link Param} fields set before
 * fitting; {@code fit} computes fitted state; {@code predict}, {@code transform} and {@code score} use it.
 *
 * <h2>Where things live</h2>
 * Fitted state is {@link NdArray}s (or, for forests, one {@link io.cuwire.serialize.OpaqueBlob}) on the device the
 * estimator was fitted on, and arithmetic runs on the {@link ComputeBackend} of that device
 * ({@link ComputeBackends#forArray}). New arrays — fitted state, and the results of {@code predict} and
 * {@code transform} — come from the allocator given to {@link #allocator(BufferAllocator)}, or when none was given,
 * from the allocator that owns the input of the call. Inputs are C-order (row-major) matrices of
 * {@link DType#FLOAT32} or {@link DType#FLOAT64} with one sample per row; class labels are {@link DType#INT32}
 * class indices {@code 0 .. classes-1}; fitted state keeps the dtype of the training data.
 *
 * <h2>Distribution</h2>
 * Each estimator also offers the partial-statistics contract: {@code partial(...)} summarizes one partition into a
 * {@link Partial} and {@code merge(...)} combines the partials of all partitions into the fitted estimator (for
 * iterative estimators, one partial per iteration). A single-device {@code fit} is that same computation over one
 * partition, so the distributed result equals it up to the order of floating-point sums.
 *
 * <h2>Serialization</h2>
 * {@link io.cuwire.ml.types.MlTypes#register} registers every estimator with the generic field-walking serializer:
 * parameters and scalars go in the header, fitted arrays become frames. Nothing but the fields is needed to rebuild an
 * estimator.
 *
 * <h2>Ownership, close and threads</h2>
 * The estimator owns its fitted state; accessors return it without copying — do not close what they return.
 * {@link #close()} releases the fitted state and leaves the estimator unfitted with its parameters, ready to be
 * fitted again; closing an unfitted estimator does nothing. Fitting again releases the previous state first. Arrays
 * returned by {@code predict} and {@code transform} belong to the caller. Estimators are not thread-safe while
 * fitting; a fitted estimator may predict from several threads.
 */
public abstract class Estimator implements AutoCloseable, Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    private static final ClassValue<List<Field>> PARAMS = new ClassValue<>() {
        @Override
        protected List<Field> computeValue(Class<?> type) {
            return fields(type, true);
        }
    };

    private static final ClassValue<List<Field>> STATE = new ClassValue<>() {
        @Override
        protected List<Field> computeValue(Class<?> type) {
            List<Field> state = new ArrayList<>();
            for (Field f : fields(type, false)) {
                if (AutoCloseable.class.isAssignableFrom(f.getType())) {
                    state.add(f);
                }
            }
            return List.copyOf(state);
        }
    };

    private transient BufferAllocator<?> allocator;

    /** An estimator with default parameters. */
    protected Estimator() {}

    private static List<Field> fields(Class<?> type, boolean params) {
        List<Class<?>> chain = new ArrayList<>();
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            chain.addFirst(c);
        }
        List<Field> out = new ArrayList<>();
        for (Class<?> c : chain) {
            for (Field f : c.getDeclaredFields()) {
                int mod = f.getModifiers();
                if (Modifier.isStatic(mod) || Modifier.isTransient(mod) || f.isSynthetic()) {
                    continue;
                }
                if (f.isAnnotationPresent(Param.class) == params) {
                    f.setAccessible(true);
                    out.add(f);
                }
            }
        }
        return List.copyOf(out);
    }

    // ---------------------------------------------------------------- parameters

    /** The hyper-parameters by name, in declaration order (superclasses first). */
    public final Map<String, Object> params() {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Field f : PARAMS.get(getClass())) {
            try {
                out.put(f.getName(), f.get(this));
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        return out;
    }

    /**
     * Sets hyper-parameters by name; numbers are converted to the field's type when they fit exactly.
     *
     * @throws IllegalArgumentException naming the parameter for an unknown name or a value of the wrong type
     */
    public Estimator setParams(Map<String, ?> values) {
        List<Field> fields = PARAMS.get(getClass());
        for (Map.Entry<String, ?> e : values.entrySet()) {
            Field field = null;
            for (Field f : fields) {
                if (f.getName().equals(e.getKey())) {
                    field = f;
                }
            }
            if (field == null) {
                throw new IllegalArgumentException(getClass().getSimpleName() + " has no parameter '" + e.getKey()
                        + "' (expected one of: " + String.join(", ", params().keySet()) + ")");
            }
            try {
                field.set(this, convert(field, e.getValue()));
            } catch (IllegalAccessException ex) {
                throw new IllegalStateException(ex);
            }
        }
        return this;
    }

    private Object convert(Field f, Object v) {
        Class<?> t = f.getType();
        String what = getClass().getSimpleName() + " parameter '" + f.getName() + "'";
        if (v == null) {
            if (t.isPrimitive()) {
                throw new IllegalArgumentException(what + " cannot be null");
            }
            return null;
        }
        if ((t == int.class || t == Integer.class) && v instanceof Number n && n.doubleValue() == n.intValue()) {
            return n.intValue();
        }
        if ((t == long.class || t == Long.class) && v instanceof Number n && n.doubleValue() == n.longValue()) {
            return n.longValue();
        }
        if ((t == double.class || t == Double.class) && v instanceof Number n) {
            return n.doubleValue();
        }
        if ((t == boolean.class && v instanceof Boolean) || t.isInstance(v)) {
            return v;
        }
        if (t.isEnum() && v instanceof String s) {
            for (Object c : t.getEnumConstants()) {
                if (((Enum<?>) c).name().equalsIgnoreCase(s)) {
                    return c;
                }
            }
        }
        throw new IllegalArgumentException(what + " is a " + t.getSimpleName() + ", not " + v + " ("
                + v.getClass().getSimpleName() + ")");
    }

    // ---------------------------------------------------------------- memory

    /**
     * Where new arrays go: fitted state and the results of {@code predict} and {@code transform}. Without one the
     * allocator that owns each call's input is used. Not serialized.
     */
    public Estimator allocator(BufferAllocator<?> alloc) {
        this.allocator = alloc;
        return this;
    }

    /** The allocator for arrays made from {@code input}: the one given, else {@code input}'s own. */
    protected final BufferAllocator<?> memoryFor(NdArray input) {
        if (allocator != null) {
            return allocator;
        }
        BufferAllocator<?> a = input.buffer().allocator();
        if (a == null) {
            throw new IllegalStateException(input + " is memory that no allocator accounts for (wrapped or "
                    + "imported); give " + getClass().getSimpleName() + " one with allocator(...)");
        }
        return a;
    }

    /** The backend computing where {@code input} lives. */
    protected static ComputeBackend backend(NdArray input) {
        return ComputeBackends.forArray(input);
    }

    // ---------------------------------------------------------------- fitted state

    /** Whether the estimator holds fitted state. */
    public abstract boolean isFitted();

    /** Throws {@link NotFittedException} unless fitted. */
    protected final void checkFitted() {
        if (!isFitted()) {
            throw new NotFittedException(
                    getClass().getSimpleName() + " is not fitted: call fit, or merge partials, " + "before using it");
        }
    }

    /**
     * Releases the fitted state (every array and blob the estimator holds) and leaves it unfitted; the parameters
     * stay. Does nothing if not fitted.
     */
    @Override
    public void close() {
        List<AutoCloseable> state = new ArrayList<>();
        for (Field f : STATE.get(getClass())) {
            try {
                Object v = f.get(this);
                if (v != null) {
                    f.set(this, null);
                    state.add((AutoCloseable) v);
                }
            } catch (IllegalAccessException e) {
                throw new IllegalStateException("cannot release " + f + ": " + e, e);
            }
        }
        Closeables.closeAll(state);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(getClass().getSimpleName()).append('(');
        String sep = "";
        for (Map.Entry<String, Object> e : params().entrySet()) {
            sb.append(sep).append(e.getKey()).append('=').append(e.getValue());
            sep = ", ";
        }
        return sb.append(isFitted() ? ", fitted)" : ")").toString();
    }

    // ---------------------------------------------------------------- input checks

    /** Checks that {@code x} is a C-order floating matrix (named {@code what} in messages) with rows. */
    protected static void checkMatrix(String op, String what, NdArray x) {
        Objects.requireNonNull(x, what);
        x.checkOpen();
        if (!x.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + what + " has dtype "
                    + x.dtype().wireName() + " (expected: float32 or float64) in " + x);
        }
        if (x.rank() != 2) {
            throw new IllegalArgumentException(
                    op + ": " + what + " has rank " + x.rank() + " (expected: 2, samples x features) in " + x);
        }
        if (x.order() != Order.C && x.dim(0) > 1 && x.dim(1) > 1) {
            throw new IllegalArgumentException(
                    op + ": " + what + " is in F order (expected: C order, one sample per " + "row) in " + x);
        }
    }

    /** Checks a matrix to fit on: at least one row and one feature, every element finite. */
    protected static void checkTraining(String op, NdArray x) {
        checkTrainingShape(op, x);
        checkFinite(op, "X", x);
    }

    private static void checkTrainingShape(String op, NdArray x) {
        checkMatrix(op, "X", x);
        if (x.dim(0) == 0 || x.dim(1) == 0) {
            throw new IllegalArgumentException(op + ": X has shape (" + x.dim(0) + ", " + x.dim(1)
                    + ") (expected: at least one sample and one feature)");
        }
    }

    /**
     * Checks a matrix to fit on as {@link #checkTraining} does and returns a copy of it where it lives, for an
     * estimator that keeps its rows: one pass reads {@code x}, copying it and taking the sum that the finiteness check
     * looks at ({@link ComputeBackend#copySum}).
     */
    protected final NdArray checkedTrainingCopy(String op, NdArray x) {
        checkTrainingShape(op, x);
        NdArray copy = NdArray.empty(memoryFor(x), x.dtype(), x.order(), x.shape());
        try {
            if (!Double.isFinite(backend(x).copySum(x, copy))) {
                checkFinite(op, "X", x);
            }
            return copy;
        } catch (RuntimeException | Error e) {
            copy.close();
            throw e;
        }
    }

    /**
     * Checks that every element of floating array {@code a} (named {@code what}) is finite. The pass over the data
     * is one {@link Reduction#SUM} where the data lives: any NaN or infinity makes the sum non-finite. Only then are
     * the elements copied to the host, in pieces, to name the first bad one; a sum that merely overflowed (every
     * element finite) passes.
     *
     * @throws IllegalArgumentException naming {@code op}, {@code what}, the value and its position
     */
    protected static void checkFinite(String op, String what, NdArray a) {
        if (a.size() == 0 || Double.isFinite(backend(a).reduce(Reduction.SUM, a))) {
            return;
        }
        int piece = 1 << 16;
        double[] buf = new double[piece];
        float[] fbuf = a.dtype() == DType.FLOAT32 ? new float[piece] : null;
        for (long first = 0; first < a.size(); first += piece) {
            int count = (int) Math.min(piece, a.size() - first);
            if (fbuf != null) {
                a.copyStorageTo(first, fbuf, 0, count);
                for (int i = 0; i < count; i++) {
                    buf[i] = fbuf[i];
                }
            } else {
                a.copyStorageTo(first, buf, 0, count);
            }
            for (int i = 0; i < count; i++) {
                if (!Double.isFinite(buf[i])) {
                    long at = first + i;
                    String where = a.rank() == 2 ? "(" + at / a.dim(1) + ", " + at % a.dim(1) + ")" : "(" + at + ",)";
                    throw new IllegalArgumentException(
                            op + ": " + what + " holds " + buf[i] + " at " + where + " (expected: finite values)");
                }
            }
        }
    }

    /** Checks that {@code a} (named {@code what}) lives where the fitted state {@code model} does. */
    protected static void checkPlace(String op, String what, NdArray a, NdArray model) {
        String at = ComputeBackend.placeOf(a);
        String modelAt = ComputeBackend.placeOf(model);
        if (!at.equals(modelAt)) {
            throw new IllegalArgumentException(op + ": " + what + " is on " + at + " but the model is on " + modelAt
                    + " (expected: the data where the model was fitted; copy one to the other)");
        }
    }

    /** Checks a matrix to predict on: the features, dtype and place of the fitted state {@code model}. */
    protected static void checkInput(String op, NdArray x, long features, DType dtype, NdArray model) {
        checkInput(op, x, features, dtype);
        checkPlace(op, "X", x, model);
    }

    /** Checks a matrix to predict on: {@code features} columns, the dtype of the fitted state. */
    protected static void checkInput(String op, NdArray x, long features, DType dtype) {
        checkMatrix(op, "X", x);
        if (x.dim(1) != features) {
            throw new IllegalArgumentException(
                    op + ": X has " + x.dim(1) + " features (expected: " + features + ", as fitted)");
        }
        if (x.dtype() != dtype) {
            throw new IllegalArgumentException(op + ": X has dtype " + x.dtype().wireName() + " (expected: "
                    + dtype.wireName() + ", the dtype the estimator was fitted on)");
        }
    }

    /** Checks regression targets: a vector of {@code rows} elements of {@code x}'s dtype. */
    protected static void checkTargets(String op, NdArray y, NdArray x) {
        Objects.requireNonNull(y, "y");
        y.checkOpen();
        if (y.rank() != 1 || y.dim(0) != x.dim(0)) {
            throw new IllegalArgumentException(
                    op + ": y has shape " + shape(y) + " (expected: (" + x.dim(0) + ",), one target per sample)");
        }
        if (y.dtype() != x.dtype()) {
            throw new IllegalArgumentException(op + ": y has dtype " + y.dtype().wireName() + " (expected: "
                    + x.dtype().wireName() + ", the dtype of X)");
        }
        checkSamePlace(op, y, x);
        checkFinite(op, "y", y);
    }

    /** Checks class labels: an int32 vector of {@code rows} elements. */
    protected static void checkLabels(String op, NdArray y, NdArray x) {
        Objects.requireNonNull(y, "y");
        y.checkOpen();
        if (y.rank() != 1 || y.dim(0) != x.dim(0)) {
            throw new IllegalArgumentException(
                    op + ": y has shape " + shape(y) + " (expected: (" + x.dim(0) + ",), one label per sample)");
        }
        if (y.dtype() != DType.INT32) {
            throw new IllegalArgumentException(
                    op + ": y has dtype " + y.dtype().wireName() + " (expected: int32 class indices)");
        }
        checkSamePlace(op, y, x);
    }

    private static void checkSamePlace(String op, NdArray y, NdArray x) {
        String at = ComputeBackend.placeOf(y);
        String xAt = ComputeBackend.placeOf(x);
        if (!at.equals(xAt)) {
            throw new IllegalArgumentException(
                    op + ": y is on " + at + " but X is on " + xAt + " (expected: y where X is)");
        }
    }

    /**
     * The number of classes: {@code declared} when positive (every label must be below it), else the largest label
     * plus one. Labels below 0 are an error.
     */
    protected static int classes(String op, NdArray y, int declared) {
        ComputeBackend b = backend(y);
        if (y.size() == 0) {
            if (declared <= 0) {
                throw new IllegalArgumentException(
                        op + ": no labels to count the classes of; set the number of " + "classes");
            }
            return declared;
        }
        long min = (long) b.reduce(Reduction.MIN, y);
        long max = (long) b.reduce(Reduction.MAX, y);
        if (min < 0) {
            throw new IllegalArgumentException(op + ": y holds label " + min + " (expected: class indices >= 0)");
        }
        if (declared > 0 && max >= declared) {
            throw new IllegalArgumentException(
                    op + ": y holds label " + max + " (expected: < " + declared + ", the declared number of classes)");
        }
        return declared > 0 ? declared : Math.toIntExact(max + 1);
    }

    /** NumPy style shape for messages. */
    protected static String shape(NdArray a) {
        long[] s = a.shape();
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < s.length; i++) {
            sb.append(i > 0 ? ", " : "").append(s[i]);
        }
        return sb.append(s.length == 1 ? ",)" : ")").toString();
    }
}
