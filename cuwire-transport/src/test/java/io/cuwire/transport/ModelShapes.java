package io.cuwire.transport;

import static java.lang.constant.ConstantDescs.CD_Class;
import static java.lang.constant.ConstantDescs.CD_MethodHandle;
import static java.lang.constant.ConstantDescs.CD_MethodHandles_Lookup;
import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_String;
import static java.lang.constant.ConstantDescs.CD_boolean;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_void;
import static java.lang.constant.ConstantDescs.INIT_NAME;
import static java.lang.constant.ConstantDescs.MTD_void;

import io.cuwire.memory.NdArray;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import java.lang.classfile.ClassBuilder;
import java.lang.classfile.ClassFile;
import java.lang.classfile.TypeKind;
import java.lang.classfile.attribute.RecordAttribute;
import java.lang.classfile.attribute.RecordComponentInfo;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDesc;
import java.lang.constant.DirectMethodHandleDesc;
import java.lang.constant.DynamicCallSiteDesc;
import java.lang.constant.MethodHandleDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.reflect.AccessFlag;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * User-model classes made at test time with the ClassFile API, deterministically from a seed: two JVMs that call
 * {@link #generate} with the same seed, count and exclusions define classes of the same names with the same fields,
 * and {@link #register} names them in their registries the same way. Every {@link Feature} that is not excluded
 * appears in at least one class (class {@code i} is built around feature {@code i}, then features are mixed at
 * random); a class only ever nests classes made before it, so no class contains itself.
 *
 * <p>The classes are public, implement {@link GeneratedModel} (the base the generic serializer is registered for),
 * declare no methods beyond their constructors (records: the accessors and the {@code ObjectMethods}-made
 * {@code equals}, {@code hashCode} and {@code toString}) and live in a class loader of their own per call.
 */
final class ModelShapes {
    private static final ClassDesc CD_RECORD = ClassDesc.of("java.lang.Record");

    /** Where the generated classes live. */
    static final String PACKAGE = "cuwire.generated";

    /** Elements per size class of a primitive array are counted from this: the registry's frame threshold. */
    static final int FRAME_THRESHOLD = 64 * 1024;

    private ModelShapes() {}

    /** The base of every generated class: what {@link TypeRegistry#registerGeneric} is called with. */
    public interface GeneratedModel {}

    /** The enum of the generated models' enum fields, {@code EnumSet}s and {@code EnumMap}s. */
    public enum Color {
        RED,
        GREEN,
        BLUE,
        CYAN,
        MAGENTA,
        YELLOW,
        BLACK,
        WHITE
    }

    /** How a generated class is built. */
    enum ClassKind {
        /** Fields set after a public no-argument constructor (there is an all-arguments one too). */
        CLASS,
        /** Only a constructor taking every field: what a model with required arguments looks like. */
        CLASS_WITHOUT_NO_ARG_CONSTRUCTOR,
        /** A record: {@code Record} attribute, private final fields, canonical constructor, accessors. */
        RECORD
    }

    /**
     * What the elements (or map keys) of a collection field hold; sets and map keys take only strings, longs, ints
     * and enum constants (values that compare and hash by value).
     */
    enum Element {
        STRING,
        LONG,
        INT,
        DOUBLE,
        ENUM,
        NESTED,
        NDARRAY,
        DOUBLE_ARRAY
    }

    /**
     * A shape a user model has: a field type, or a property of a class or of its fields. The unit of
     * {@link ModelShapeConformanceSuite#UNSUPPORTED_YET}.
     */
    enum Feature {
        BOOLEAN(boolean.class),
        BYTE(byte.class),
        SHORT(short.class),
        CHAR(char.class),
        INT(int.class),
        LONG(long.class),
        FLOAT(float.class),
        DOUBLE(double.class),
        BOXED_BOOLEAN(Boolean.class),
        BOXED_BYTE(Byte.class),
        BOXED_SHORT(Short.class),
        BOXED_CHARACTER(Character.class),
        BOXED_INTEGER(Integer.class),
        BOXED_LONG(Long.class),
        BOXED_FLOAT(Float.class),
        BOXED_DOUBLE(Double.class),
        STRING(String.class),
        ENUM(Color.class),
        BOOLEAN_ARRAY(boolean[].class),
        BYTE_ARRAY(byte[].class),
        SHORT_ARRAY(short[].class),
        CHAR_ARRAY(char[].class),
        INT_ARRAY(int[].class),
        LONG_ARRAY(long[].class),
        FLOAT_ARRAY(float[].class),
        DOUBLE_ARRAY(double[].class),
        NDARRAY(NdArray.class),
        ARRAY_LIST(List.class, ArrayList.class),
        LINKED_LIST(List.class, LinkedList.class),
        ARRAY_DEQUE(Deque.class, ArrayDeque.class),
        HASH_SET(Set.class, HashSet.class),
        LINKED_HASH_SET(Set.class, LinkedHashSet.class),
        TREE_SET(SortedSet.class, TreeSet.class),
        HASH_MAP(Map.class, HashMap.class),
        LINKED_HASH_MAP(Map.class, LinkedHashMap.class),
        TREE_MAP(SortedMap.class, TreeMap.class),
        CONCURRENT_HASH_MAP(ConcurrentMap.class, ConcurrentHashMap.class),
        ENUM_MAP(Map.class, EnumMap.class),
        ENUM_SET(Set.class, EnumSet.class),
        LIST_OF(List.class, null),
        SET_OF(Set.class, null),
        MAP_OF(Map.class, null),
        OPTIONAL(Optional.class, null),
        /** A field whose type is an earlier generated class (a nested model). */
        NESTED(null),
        /** A second field pointing at the object, array or collection of an earlier one. */
        SHARED_REFERENCE(null),
        /** {@code final} fields (records' are always final). */
        FINAL_FIELD(null),
        /** {@code transient} fields: never sent, the receiver's value is the type's default. */
        TRANSIENT_FIELD(null),
        /** {@link ClassKind#RECORD}. */
        RECORD(null),
        /** {@link ClassKind#CLASS_WITHOUT_NO_ARG_CONSTRUCTOR}. */
        NO_NO_ARG_CONSTRUCTOR(null);

        /** The declared type of a field of this feature (an interface for collections), or null. */
        final Class<?> declared;
        /** The concrete collection class, also usable as the declared type; null where there is none. */
        final Class<?> concrete;

        Feature(Class<?> declared) {
            this(declared, null);
        }

        Feature(Class<?> declared, Class<?> concrete) {
            this.declared = declared;
            this.concrete = concrete;
        }

        boolean isScalar() {
            return ordinal() <= ENUM.ordinal();
        }

        boolean isPrimitiveArray() {
            return declared != null && declared.isArray();
        }

        boolean isCollection() {
            return ordinal() >= ARRAY_LIST.ordinal() && ordinal() <= OPTIONAL.ordinal();
        }

        boolean isMap() {
            return this == HASH_MAP
                    || this == LINKED_HASH_MAP
                    || this == TREE_MAP
                    || this == CONCURRENT_HASH_MAP
                    || this == ENUM_MAP
                    || this == MAP_OF;
        }

        /** A field type (as opposed to a property of a class or of a field). */
        boolean isFieldType() {
            return declared != null || this == NESTED;
        }

        /** Whether values of this field keep their identity on the wire, so that two fields can share one. */
        boolean isShareable() {
            return isPrimitiveArray() || this == NDARRAY || this == NESTED || (isCollection() && this != OPTIONAL);
        }
    }

    /**
     * One field of a generated class.
     *
     * @param name the field's (and record component's) name
     * @param feature what it holds
     * @param type its declared type, or null for {@link Feature#NESTED} (then {@code nested} names the class)
     * @param nested the index of the nested class ({@link Feature#NESTED}, or an {@link Element#NESTED} collection)
     * @param element what a collection's elements (a map's values) are
     * @param key what a map's keys are
     * @param isFinal {@code final}
     * @param isTransient {@code transient}
     * @param sharesWith the index of the earlier field this one points at when values are drawn with sharing, or -1
     */
    record FieldSpec(
            String name,
            Feature feature,
            Class<?> type,
            int nested,
            Element element,
            Element key,
            boolean isFinal,
            boolean isTransient,
            int sharesWith) {
        FieldSpec withModifiers(boolean fin, boolean trans) {
            return new FieldSpec(name, feature, type, nested, element, key, fin, trans, sharesWith);
        }

        FieldSpec sharing(String newName, int index) {
            return new FieldSpec(newName, feature, type, nested, element, key, false, false, index);
        }
    }

    /** One generated class: its binary name, how it is built, its fields in declaration order. */
    record ClassSpec(int index, String name, ClassKind kind, Feature focus, List<FieldSpec> fields) {
        String simpleName() {
            return name.substring(PACKAGE.length() + 1);
        }
    }

    /** The classes of one {@link #generate} call, defined in a class loader of their own. */
    static final class Generated {
        private final int count;
        private final List<ClassSpec> specs;
        private final List<Class<?>> classes;
        private final List<Constructor<?>> constructors;

        private Generated(int count, List<ClassSpec> specs, List<Class<?>> classes, List<Constructor<?>> constructors) {
            this.count = count;
            this.specs = specs;
            this.classes = classes;
            this.constructors = constructors;
        }

        /** Every class: the generated ones, then the probes. */
        List<ClassSpec> specs() {
            return specs;
        }

        /** The generated classes (without the probes). */
        List<ClassSpec> models() {
            return specs.subList(0, count);
        }

        /** The probe class of {@code feature}: the smallest class that has it. */
        ClassSpec probe(Feature feature) {
            return specs.get(count + 1 + feature.ordinal());
        }

        Class<?> type(int index) {
            return classes.get(index);
        }

        /** A new instance of class {@code index} through its all-arguments (canonical) constructor. */
        Object construct(int index, Object[] fieldValues) {
            try {
                return constructors.get(index).newInstance(fieldValues);
            } catch (InvocationTargetException e) {
                throw new IllegalStateException(
                        "constructing " + specs.get(index).name() + ": " + e.getCause(), e.getCause());
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(
                        "constructing " + specs.get(index).name() + ": " + e, e);
            }
        }

        /** Names the generated classes and the enum, and registers the generic serializer for them. */
        TypeRegistry register(TypeRegistry registry) {
            registry.registerGeneric(GeneratedModel.class, Family.CUDA, Family.HOST);
            registry.register(Color.class, "models.Color");
            for (Class<?> c : classes) {
                registry.register(c);
            }
            return registry;
        }
    }

    /**
     * Makes {@code count} class specifications from {@code seed}, using every feature but {@code excluded}, plus one
     * probe class per feature ({@link Generated#probe}), and defines them all in a new class loader.
     */
    static Generated generate(long seed, int count, Set<Feature> excluded) {
        List<ClassSpec> specs = new ArrayList<>(specify(seed, count, excluded));
        specs.addAll(probes(count));
        Loader loader = new Loader(ModelShapes.class.getClassLoader());
        for (ClassSpec spec : specs) {
            loader.add(spec.name(), bytecode(spec, specs));
        }
        List<Class<?>> classes = new ArrayList<>();
        List<Constructor<?>> constructors = new ArrayList<>();
        try {
            for (ClassSpec spec : specs) {
                Class<?> c = Class.forName(spec.name(), true, loader);
                classes.add(c);
                Class<?>[] types = new Class<?>[spec.fields().size()];
                for (int i = 0; i < types.length; i++) {
                    FieldSpec f = spec.fields().get(i);
                    types[i] = f.type() != null ? f.type() : classes.get(f.nested());
                }
                constructors.add(c.getConstructor(types));
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("generated classes do not load: " + e, e);
        }
        return new Generated(count, List.copyOf(specs), List.copyOf(classes), List.copyOf(constructors));
    }

    /**
     * The probe classes, numbered from {@code first}: an inner class with one {@code int}, then per feature the
     * smallest class that has it (one field of a field type — two for a collection with a concrete class, declared
     * both ways —, or two {@code int}/{@code String} fields in a record, a class without a no-argument constructor,
     * a class with final or transient fields, a class with two fields sharing one {@code double[]}).
     */
    private static List<ClassSpec> probes(int first) {
        List<ClassSpec> out = new ArrayList<>();
        FieldSpec id = new FieldSpec("id", Feature.INT, int.class, -1, null, null, false, false, -1);
        FieldSpec label = new FieldSpec("label", Feature.STRING, String.class, -1, null, null, false, false, -1);
        out.add(new ClassSpec(first, PACKAGE + ".PInner", ClassKind.CLASS, null, List.of(id)));
        for (Feature f : Feature.values()) {
            ClassKind kind = ClassKind.CLASS;
            List<FieldSpec> fields = new ArrayList<>();
            if (f == Feature.NESTED) {
                fields.add(new FieldSpec("inner", f, null, first, null, null, false, false, -1));
            } else if (f.isCollection()) {
                Element key = f == Feature.ENUM_MAP || f == Feature.ENUM_SET ? Element.ENUM : Element.STRING;
                Element element = f.isMap() || isList(f) || f == Feature.OPTIONAL ? Element.INT : key;
                fields.add(new FieldSpec(
                        "declared", f, f.declared, -1, element, f.isMap() ? key : null, false, false, -1));
                if (f.concrete != null) {
                    fields.add(new FieldSpec(
                            "concrete", f, f.concrete, -1, element, f.isMap() ? key : null, false, false, -1));
                }
            } else if (f.isFieldType()) {
                fields.add(new FieldSpec("value", f, f.declared, -1, null, null, false, false, -1));
            } else {
                switch (f) {
                    case RECORD -> kind = ClassKind.RECORD;
                    case NO_NO_ARG_CONSTRUCTOR -> kind = ClassKind.CLASS_WITHOUT_NO_ARG_CONSTRUCTOR;
                    default -> {}
                }
                boolean fin = f == Feature.FINAL_FIELD;
                boolean trans = f == Feature.TRANSIENT_FIELD;
                if (f == Feature.SHARED_REFERENCE) {
                    FieldSpec a = new FieldSpec(
                            "weights", Feature.DOUBLE_ARRAY, double[].class, -1, null, null, false, false, -1);
                    fields.add(a);
                    fields.add(a.sharing("sameWeights", 0));
                } else {
                    fields.add(id.withModifiers(fin, false));
                    fields.add(label.withModifiers(fin, trans));
                }
            }
            out.add(new ClassSpec(first + out.size(), PACKAGE + ".P" + camel(f), kind, f, List.copyOf(fields)));
        }
        return out;
    }

    /** The specifications alone (what {@link #generate} defines), deterministic in its arguments. */
    static List<ClassSpec> specify(long seed, int count, Set<Feature> excluded) {
        SplittableRandom r = new SplittableRandom(seed);
        List<Feature> allowed = new ArrayList<>();
        for (Feature f : Feature.values()) {
            if (!excluded.contains(f)) {
                allowed.add(f);
            }
        }
        List<Feature> fieldTypes = allowed.stream().filter(Feature::isFieldType).toList();
        List<ClassSpec> specs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Feature focus = i < allowed.size() ? allowed.get(i) : null;
            specs.add(specifyClass(r, i, focus, allowed, fieldTypes));
        }
        return specs;
    }

    private static ClassSpec specifyClass(
            SplittableRandom r, int index, Feature focus, List<Feature> allowed, List<Feature> fieldTypes) {
        ClassKind kind;
        if (focus == Feature.RECORD) {
            kind = ClassKind.RECORD;
        } else if (focus == Feature.NO_NO_ARG_CONSTRUCTOR) {
            kind = ClassKind.CLASS_WITHOUT_NO_ARG_CONSTRUCTOR;
        } else if (focus == Feature.TRANSIENT_FIELD || focus == Feature.FINAL_FIELD) {
            kind = ClassKind.CLASS;
        } else {
            int k = r.nextInt(4);
            kind = k == 0 && allowed.contains(Feature.RECORD)
                    ? ClassKind.RECORD
                    : k == 1 && allowed.contains(Feature.NO_NO_ARG_CONSTRUCTOR)
                            ? ClassKind.CLASS_WITHOUT_NO_ARG_CONSTRUCTOR
                            : ClassKind.CLASS;
        }
        List<FieldSpec> fields = new ArrayList<>();
        if (focus != null && focus.isFieldType() && (focus != Feature.NESTED || index > 0)) {
            fields.add(field(r, fields.size(), focus, index, allowed, false));
            if (focus.isCollection() && focus.concrete != null) {
                fields.add(field(r, fields.size(), focus, index, allowed, true));
            }
        }
        for (int n = 1 + r.nextInt(5); n > 0; n--) {
            Feature f = fieldTypes.get(r.nextInt(fieldTypes.size()));
            if (f == Feature.NESTED && index == 0) {
                f = Feature.STRING;
            }
            fields.add(field(r, fields.size(), f, index, allowed, r.nextBoolean()));
        }
        if (focus == Feature.SHARED_REFERENCE || (allowed.contains(Feature.SHARED_REFERENCE) && r.nextInt(4) == 0)) {
            List<Integer> shareable = new ArrayList<>();
            for (int i = 0; i < fields.size(); i++) {
                if (fields.get(i).feature().isShareable()) {
                    shareable.add(i);
                }
            }
            if (shareable.isEmpty()) {
                Feature f = fieldTypes.stream()
                        .filter(t -> t.isShareable() && (t != Feature.NESTED || index > 0))
                        .findFirst()
                        .orElseThrow();
                fields.add(field(r, fields.size(), f, index, allowed, false));
                shareable.add(fields.size() - 1);
            }
            int target = shareable.get(r.nextInt(shareable.size()));
            fields.add(fields.get(target).sharing("f" + fields.size() + "Shares" + target, target));
        }
        if (kind != ClassKind.RECORD) {
            boolean finals =
                    focus == Feature.FINAL_FIELD || (allowed.contains(Feature.FINAL_FIELD) && r.nextInt(3) == 0);
            boolean transients = focus == Feature.TRANSIENT_FIELD
                    || (allowed.contains(Feature.TRANSIENT_FIELD) && r.nextInt(3) == 0);
            for (int i = 0; i < fields.size(); i++) {
                FieldSpec f = fields.get(i);
                boolean fin = finals && (i == 0 && focus == Feature.FINAL_FIELD || r.nextInt(2) == 0);
                // a field another one shares with (or that shares) keeps travelling: sharing needs both ends
                boolean trans = transients && f.sharesWith() < 0 && !isSharedBy(fields, i) && r.nextInt(3) == 0;
                fields.set(i, f.withModifiers(fin, trans));
            }
            if (focus == Feature.TRANSIENT_FIELD && fields.stream().noneMatch(FieldSpec::isTransient)) {
                fields.add(field(r, fields.size(), Feature.STRING, index, allowed, false)
                        .withModifiers(false, true));
            }
        }
        String name = PACKAGE + ".M" + (index < 10 ? "0" : "") + index + (focus == null ? "Mixed" : camel(focus));
        return new ClassSpec(index, name, kind, focus, List.copyOf(fields));
    }

    private static boolean isSharedBy(List<FieldSpec> fields, int index) {
        return fields.stream().anyMatch(f -> f.sharesWith() == index);
    }

    private static FieldSpec field(
            SplittableRandom r, int position, Feature f, int classIndex, List<Feature> allowed, boolean concrete) {
        String name = "f" + position + camel(f);
        if (f == Feature.NESTED) {
            return new FieldSpec(name, f, null, r.nextInt(classIndex), null, null, false, false, -1);
        }
        if (!f.isCollection()) {
            return new FieldSpec(name, f, f.declared, -1, null, null, false, false, -1);
        }
        Class<?> type = concrete && f.concrete != null ? f.concrete : f.declared;
        Element key = f == Feature.ENUM_MAP || f == Feature.ENUM_SET ? Element.ENUM : keyLike(r);
        Element element;
        if (f == Feature.ENUM_SET || (!f.isMap() && !isList(f) && f != Feature.OPTIONAL)) {
            element = key;
        } else {
            do {
                element = Element.values()[r.nextInt(Element.values().length)];
            } while (element == Element.NESTED && classIndex == 0
                    || element == Element.NESTED && !allowed.contains(Feature.NESTED)
                    || element == Element.NDARRAY && !allowed.contains(Feature.NDARRAY)
                    || element == Element.DOUBLE_ARRAY && !allowed.contains(Feature.DOUBLE_ARRAY));
        }
        int nested = element == Element.NESTED ? r.nextInt(classIndex) : -1;
        return new FieldSpec(
                name + (type == f.declared ? "" : "Concrete"),
                f,
                type,
                nested,
                element,
                f.isMap() ? key : null,
                false,
                false,
                -1);
    }

    /** Lists and deques: ordered, any elements. */
    static boolean isList(Feature f) {
        return f == Feature.ARRAY_LIST || f == Feature.LINKED_LIST || f == Feature.ARRAY_DEQUE || f == Feature.LIST_OF;
    }

    private static Element keyLike(SplittableRandom r) {
        Element[] keys = {Element.STRING, Element.LONG, Element.INT, Element.ENUM};
        return keys[r.nextInt(keys.length)];
    }

    private static String camel(Feature f) {
        StringBuilder b = new StringBuilder();
        for (String part : f.name().toLowerCase(java.util.Locale.ROOT).split("_")) {
            b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
        }
        return b.toString();
    }

    private static ClassDesc descOf(FieldSpec f, List<ClassSpec> specs) {
        if (f.type() != null) {
            return f.type().describeConstable().orElseThrow();
        }
        return ClassDesc.of(specs.get(f.nested()).name());
    }

    /** The class file of {@code spec}. */
    static byte[] bytecode(ClassSpec spec, List<ClassSpec> specs) {
        ClassDesc self = ClassDesc.of(spec.name());
        boolean record = spec.kind() == ClassKind.RECORD;
        ClassDesc superclass = record ? CD_RECORD : CD_Object;
        List<FieldSpec> fields = spec.fields();
        ClassDesc[] types = fields.stream().map(f -> descOf(f, specs)).toArray(ClassDesc[]::new);
        return ClassFile.of().build(self, cb -> {
            cb.withFlags(ClassFile.ACC_PUBLIC | ClassFile.ACC_FINAL | ClassFile.ACC_SUPER);
            cb.withSuperclass(superclass);
            cb.withInterfaceSymbols(GeneratedModel.class.describeConstable().orElseThrow());
            for (int i = 0; i < fields.size(); i++) {
                FieldSpec f = fields.get(i);
                int flags = (record ? ClassFile.ACC_PRIVATE : ClassFile.ACC_PUBLIC)
                        | (record || f.isFinal() ? ClassFile.ACC_FINAL : 0)
                        | (f.isTransient() ? ClassFile.ACC_TRANSIENT : 0);
                cb.withField(f.name(), types[i], flags);
            }
            if (spec.kind() == ClassKind.CLASS) {
                cb.withMethodBody(
                        INIT_NAME,
                        MTD_void,
                        ClassFile.ACC_PUBLIC,
                        code -> code.aload(0)
                                .invokespecial(superclass, INIT_NAME, MTD_void)
                                .return_());
            }
            cb.withMethodBody(INIT_NAME, MethodTypeDesc.of(CD_void, types), ClassFile.ACC_PUBLIC, code -> {
                code.aload(0).invokespecial(superclass, INIT_NAME, MTD_void);
                int slot = 1;
                for (int i = 0; i < fields.size(); i++) {
                    TypeKind kind = TypeKind.from(types[i]);
                    code.aload(0)
                            .loadLocal(kind, slot)
                            .putfield(self, fields.get(i).name(), types[i]);
                    slot += kind.slotSize();
                }
                code.return_();
            });
            if (record) {
                recordMembers(cb, self, fields, types);
            }
        });
    }

    private static void recordMembers(ClassBuilder cb, ClassDesc self, List<FieldSpec> fields, ClassDesc[] types) {
        List<RecordComponentInfo> components = new ArrayList<>();
        ConstantDesc[] bootstrapArgs = new ConstantDesc[2 + fields.size()];
        bootstrapArgs[0] = self;
        StringBuilder names = new StringBuilder();
        for (int i = 0; i < fields.size(); i++) {
            String name = fields.get(i).name();
            ClassDesc type = types[i];
            components.add(RecordComponentInfo.of(name, type));
            names.append(i == 0 ? "" : ";").append(name);
            bootstrapArgs[2 + i] = MethodHandleDesc.ofField(DirectMethodHandleDesc.Kind.GETTER, self, name, type);
            cb.withMethodBody(
                    name,
                    MethodTypeDesc.of(type),
                    ClassFile.ACC_PUBLIC,
                    code -> code.aload(0).getfield(self, name, type).return_(TypeKind.from(type)));
        }
        bootstrapArgs[1] = names.toString();
        cb.with(RecordAttribute.of(components));
        DirectMethodHandleDesc objectMethods = MethodHandleDesc.ofMethod(
                DirectMethodHandleDesc.Kind.STATIC,
                ClassDesc.of("java.lang.runtime.ObjectMethods"),
                "bootstrap",
                MethodTypeDesc.of(
                        CD_Object,
                        CD_MethodHandles_Lookup,
                        CD_String,
                        ClassDesc.of("java.lang.invoke.TypeDescriptor"),
                        CD_Class,
                        CD_String,
                        CD_MethodHandle.arrayType()));
        objectMethod(cb, objectMethods, bootstrapArgs, "toString", MethodTypeDesc.of(CD_String, self), 1);
        objectMethod(cb, objectMethods, bootstrapArgs, "hashCode", MethodTypeDesc.of(CD_int, self), 1);
        objectMethod(cb, objectMethods, bootstrapArgs, "equals", MethodTypeDesc.of(CD_boolean, self, CD_Object), 2);
    }

    private static void objectMethod(
            ClassBuilder cb,
            DirectMethodHandleDesc bootstrap,
            ConstantDesc[] args,
            String name,
            MethodTypeDesc indyType,
            int loads) {
        MethodTypeDesc own = indyType.dropParameterTypes(0, 1);
        cb.withMethodBody(name, own, ClassFile.ACC_PUBLIC | ClassFile.ACC_FINAL, code -> {
            for (int i = 0; i < loads; i++) {
                code.aload(i);
            }
            code.invokedynamic(DynamicCallSiteDesc.of(bootstrap, name, indyType, args))
                    .return_(TypeKind.from(indyType.returnType()));
        });
    }

    /** Whether {@code field} of a generated class is transient (read from the class, not the spec). */
    static boolean isTransient(java.lang.reflect.Field field) {
        return field.accessFlags().contains(AccessFlag.TRANSIENT);
    }

    /** Defines the class files given to it, on demand, in its own namespace. */
    private static final class Loader extends ClassLoader {
        private final Map<String, byte[]> files = new HashMap<>();

        Loader(ClassLoader parent) {
            super("cuwire-generated-models", parent);
        }

        void add(String name, byte[] bytes) {
            files.put(name, bytes);
        }

        @Override
        protected Class<?> findClass(String name) throws ClassNotFoundException {
            byte[] b = files.get(name);
            if (b == null) {
                throw new ClassNotFoundException(name);
            }
            return defineClass(name, b, 0, b.length);
        }
    }
}
