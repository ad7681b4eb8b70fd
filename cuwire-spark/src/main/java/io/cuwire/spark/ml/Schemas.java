package io.cuwire.spark.ml;

import java.util.List;
import org.apache.spark.ml.attribute.AttributeGroup;
import org.apache.spark.ml.attribute.NominalAttribute;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The schema checks and output columns of the stages, with Spark ML's messages: a features column of ml vectors or
 * arrays of numbers, a numeric label column, output columns that must not exist yet, and the ML attribute metadata
 * MLlib's models put on their columns (the number of classes of a prediction, the size of a vector).
 */
final class Schemas {
    private static final VectorUDT VECTOR = new VectorUDT();

    private Schemas() {}

    /**
     * {@code schema} with {@code fields} appended, after checking the features column.
     *
     * @throws IllegalArgumentException if the features column is missing or of another type, or an output column
     *     exists already
     */
    static StructType appended(StructType schema, String features, List<StructField> fields) {
        checkFeatures(schema, features);
        StructType out = schema;
        for (StructField f : fields) {
            if (List.of(out.fieldNames()).contains(f.name())) {
                throw new IllegalArgumentException("Column " + f.name() + " already exists.");
            }
            out = out.add(f);
        }
        return out;
    }

    /** Checks that {@code column} holds ml vectors or arrays of numbers. */
    static void checkFeatures(StructType schema, String column) {
        DataType t = field(schema, column).dataType();
        if (t instanceof VectorUDT || t instanceof ArrayType a && a.elementType() instanceof NumericType) {
            return;
        }
        throw new IllegalArgumentException("Column " + column + " must be of type equal to one of the following "
                + "types: [" + VECTOR.catalogString() + ", array<double>, array<float>, array of another numeric type]"
                + " but was actually of type " + t.catalogString() + ".");
    }

    /** Checks that {@code column} is numeric. */
    static void checkNumeric(StructType schema, String column) {
        DataType t = field(schema, column).dataType();
        if (!(t instanceof NumericType)) {
            throw new IllegalArgumentException("Column " + column + " must be of type numeric but was actually of "
                    + "type " + t.catalogString() + ".");
        }
    }

    /** The field {@code name} of {@code schema}. */
    static StructField field(StructType schema, String name) {
        for (StructField f : schema.fields()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException(
                "Column " + name + " does not exist. Available: " + String.join(", ", schema.fieldNames()));
    }

    /** A double column. */
    static StructField doubles(String name) {
        return new StructField(name, DataTypes.DoubleType, false, Metadata.empty());
    }

    /** A double column of class indices {@code 0 .. classes-1} (MLlib's nominal attribute), as classifiers make. */
    static StructField classes(String name, int classes) {
        StructField f = NominalAttribute.defaultAttr()
                .withName(name)
                .withNumValues(classes)
                .toStructField();
        return new StructField(name, DataTypes.DoubleType, false, f.metadata());
    }

    /** An integer column of cluster indices {@code 0 .. k-1}, as k-means makes. */
    static StructField clusters(String name, int k) {
        StructField f =
                NominalAttribute.defaultAttr().withName(name).withNumValues(k).toStructField();
        return new StructField(name, DataTypes.IntegerType, false, f.metadata());
    }

    /** A column of ml vectors of {@code size} elements ({@code size < 0}: not known). */
    static StructField vectors(String name, int size) {
        return size < 0
                ? new StructField(name, VECTOR, false, Metadata.empty())
                : new AttributeGroup(name, size).toStructField();
    }
}
