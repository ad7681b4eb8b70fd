# scikit-learn's random forest on data that cuwire wrote (io.cuwire.ml.bench.SklearnForests): fits on the first
# TRAIN rows, predicts every row, prints one line
#   SKLEARN version=... fit_ms=... predict_ms=... score=...
# where fit_ms and predict_ms are medians of REPEAT runs and score is the accuracy (classifier) or R^2 (regressor) on
# rows TRAIN.. (on the training rows when TRAIN is every row).
# usage: sklearn_forest.py DIR classifier|regressor ROWS COLS TRAIN TREES DEPTH MAX_FEATURES SEED REPEAT
# DIR holds x.f64 (ROWS x COLS float64, C order, little-endian) and y.f64 (ROWS float64: labels or values);
# MAX_FEATURES is sqrt or a share in (0, 1].
import os
import statistics
import sys
import time

import numpy as np
import sklearn
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.metrics import accuracy_score, r2_score


def main(argv):
    directory, kind = argv[0], argv[1]
    rows, cols, train, trees, depth = (int(a) for a in argv[2:7])
    max_features = argv[7] if argv[7] == "sqrt" else float(argv[7])
    seed, repeat = int(argv[8]), int(argv[9])
    x = np.fromfile(os.path.join(directory, "x.f64"), dtype="<f8").reshape(rows, cols)
    y = np.fromfile(os.path.join(directory, "y.f64"), dtype="<f8")
    classifier = kind == "classifier"
    if classifier:
        y = y.astype(np.int64)
        model_type = RandomForestClassifier
    else:
        model_type = RandomForestRegressor
    fits, predicts = [], []
    model, predicted = None, None
    for _ in range(repeat):
        model = model_type(n_estimators=trees, max_depth=depth, max_features=max_features, bootstrap=True,
                           n_jobs=-1, random_state=seed)
        t0 = time.perf_counter()
        model.fit(x[:train], y[:train])
        fits.append((time.perf_counter() - t0) * 1e3)
    for _ in range(repeat):
        t0 = time.perf_counter()
        predicted = model.predict(x)
        predicts.append((time.perf_counter() - t0) * 1e3)
    held = slice(train, rows) if train < rows else slice(0, rows)
    score = (accuracy_score if classifier else r2_score)(y[held], predicted[held])
    print("SKLEARN version=%s fit_ms=%.3f predict_ms=%.3f score=%.6f"
          % (sklearn.__version__, statistics.median(fits), statistics.median(predicts), score))


if __name__ == "__main__":
    main(sys.argv[1:])
