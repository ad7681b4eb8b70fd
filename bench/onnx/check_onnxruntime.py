#!/usr/bin/env python3
"""Checks the ONNX models that cuwire exported with Python's ONNX tools (numpy and the standard library besides).

    python3 bench/onnx/check_onnxruntime.py DIR [--require-onnxruntime]

DIR is what cuwire-onnx's OnnxRuntimeAgreementTest writes (cuwire-onnx/target/onnx-agreement after
`mvn -pl cuwire-onnx -am verify -Dtest=OnnxRuntimeAgreementTest`): per model NAME.onnx, its input NAME.X.f32 and
cuwire's own outputs on it (raw little-endian float32 / int64), named in NAME.json. For each model:

- `onnx.checker.check_model` (full check), where the `onnx` package imports (Debian's python3-onnx does);
- Python's `onnxruntime` runs the model on the input, and each output is compared with cuwire's: labels exactly,
  values within the tolerance that NAME.json states, relative to 1 + |value|.

It prints one line per model and output, then a summary line `N passed, N failed`, and exits 1 on any failure (or
when --require-onnxruntime is given and onnxruntime does not import).
"""
import json
import pathlib
import sys

import numpy as np


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    require_ort = "--require-onnxruntime" in argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(args[0])
    manifests = sorted(root.glob("*.json"))
    if not manifests:
        print(f"error: no model manifests (*.json) in {root}", file=sys.stderr)
        return 2
    try:
        import onnx
        import onnx.checker
    except ImportError as e:
        onnx = None
        print(f"INFO onnx.checker skipped: {e}")
    try:
        import onnxruntime as ort
        print(f"INFO onnxruntime {ort.__version__}, providers {ort.get_available_providers()}")
    except ImportError as e:
        ort = None
        print(f"INFO onnxruntime skipped: {e}")
        if require_ort:
            print("error: --require-onnxruntime and onnxruntime does not import", file=sys.stderr)
            return 1
    passed = failed = 0
    for manifest in manifests:
        spec = json.loads(manifest.read_text())
        model = root / spec["model"]
        name = manifest.stem
        if onnx is not None:
            try:
                onnx.checker.check_model(onnx.load(str(model)), full_check=True)
                print(f"PASS {name}: onnx.checker {onnx.__version__}")
                passed += 1
            except Exception as e:  # the checker raises its own ValidationError and others
                print(f"FAIL {name}: onnx.checker: {e}")
                failed += 1
        if ort is None:
            continue
        x = np.fromfile(root / spec["input"]["file"], dtype="<f4").reshape(spec["input"]["shape"])
        session = ort.InferenceSession(str(model), providers=ort.get_available_providers())
        names = [o.name for o in session.get_outputs()]
        got = dict(zip(names, session.run(names, {"X": x})))
        tol = float(spec["tolerance"])
        for output, file in spec["outputs"].items():
            if file.endswith(".i64"):
                want = np.fromfile(root / file, dtype="<i8")
                diff = int(np.count_nonzero(got[output].reshape(-1) != want))
                ok = diff == 0
                detail = f"{want.size} labels, {diff} differ"
            else:
                want = np.fromfile(root / file, dtype="<f4")
                have = got[output].reshape(-1).astype(np.float64)
                rel = np.abs(have - want) / (1 + np.abs(want))
                ok = have.shape == want.shape and bool(np.all(rel <= tol))
                detail = f"{want.size} values, worst relative difference {rel.max():.3g} (tolerance {tol:g})"
            print(f"{'PASS' if ok else 'FAIL'} {name} {output}: {detail}")
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
