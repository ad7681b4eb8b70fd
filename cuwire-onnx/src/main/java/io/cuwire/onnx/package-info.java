/**
 * Fitted cuwire-ml estimators written as ONNX models ({@link io.cuwire.onnx.OnnxExport}), for ONNX Runtime, Triton
 * or any other ONNX runtime. The protobuf classes are generated at build time from ONNX's own definitions and stay in
 * {@code io.cuwire.onnx.internal.proto}.
 */
package io.cuwire.onnx;
