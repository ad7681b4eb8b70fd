/**
 * Fitted cuwire-ml estimators written as ONNX models ({@link io.cuwire.onnx.OnnxExport}). The protobuf classes
 * generated from ONNX's definitions and the graph builder stay in {@code io.cuwire.onnx.internal}, unexported.
 *
 * <p>protobuf-java ships no module descriptor: it is the automatic module {@code com.google.protobuf}, a name its
 * manifest declares ({@code Automatic-Module-Name}), not one derived from the jar's file name, so the warning that
 * such a name may change does not apply (suppressed for this one module). No protobuf type is in the API, so the
 * module is required, not required transitively.
 */
@SuppressWarnings("requires-automatic")
module io.cuwire.onnx {
    requires transitive io.cuwire.ml;
    requires com.google.protobuf;

    exports io.cuwire.onnx;
}
