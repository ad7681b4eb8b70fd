"""SklearnModelFileTest's scikit-learn side, with cuwire_sklearn.py beside it in DIR.

    sklearn_models.py fit DIR SEED   fits each case, writes CASE.cwm (cuwire_sklearn.save) and CASE.json (the test
                                     rows and scikit-learn's predictions on them), and data.json (the training sets)
    sklearn_models.py reverse DIR    for each CASE.cuwire.cwm that cuwire wrote: cuwire_sklearn.load, predict the rows
                                     of CASE.cuwire.json, write CASE.sklearn.json
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, sys.argv[2])
import cuwire_sklearn  # noqa: E402
from sklearn import cluster, decomposition, ensemble, linear_model, naive_bayes, neighbors  # noqa: E402


def f32(a):
    # rows that float32 holds exactly, so scikit-learn's float32 trees and cuwire's doubles see the same numbers
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def data(seed):
    rng = np.random.RandomState(seed % (2**32))
    d = 5
    reg_x = f32(rng.normal(size=(240, d)))
    reg_y = reg_x @ rng.normal(size=d) + 0.1 * rng.normal(size=240) + 0.5
    centers = rng.normal(scale=3.0, size=(3, d))
    cls_y = rng.randint(0, 3, size=240)
    cls_x = f32(centers[cls_y] + rng.normal(size=(240, d)))
    bin_y = (cls_y == 0).astype(np.int64)
    counts_y = rng.randint(0, 3, size=240)
    rates = rng.uniform(0.5, 4.0, size=(3, 8))
    counts_x = rng.poisson(rates[counts_y]).astype(np.float64)
    return {
        "reg": (reg_x[:190], reg_y[:190], reg_x[190:]),
        "cls": (cls_x[:190], cls_y[:190], cls_x[190:]),
        "bin": (cls_x[:190], bin_y[:190], cls_x[190:]),
        "counts": (counts_x[:190], counts_y[:190], counts_x[190:]),
    }


def cases(seed):
    return {
        "linear": (linear_model.LinearRegression(), "reg"),
        "ridge": (linear_model.Ridge(alpha=0.5), "reg"),
        "logistic": (linear_model.LogisticRegression(max_iter=1000), "cls"),
        "logistic_binary": (linear_model.LogisticRegression(C=0.5), "bin"),
        "kmeans": (cluster.KMeans(n_clusters=3, n_init=3, random_state=seed % 1000), "cls"),
        "pca": (decomposition.PCA(n_components=3, whiten=True), "reg"),
        "nb": (naive_bayes.MultinomialNB(alpha=0.7), "counts"),
        "knn": (neighbors.KNeighborsClassifier(n_neighbors=5), "cls"),
        "forest_classifier": (ensemble.RandomForestClassifier(n_estimators=8, max_depth=8,
                                                              random_state=seed % 1000), "cls"),
        "forest_regressor": (ensemble.RandomForestRegressor(n_estimators=8, max_depth=8,
                                                            random_state=seed % 1000), "reg"),
    }


def outputs(est, x):
    out = {"X": x.tolist()}
    if hasattr(est, "predict"):
        out["predict"] = est.predict(x).tolist()
    if hasattr(est, "predict_proba"):
        out["proba"] = est.predict_proba(x).tolist()
    if hasattr(est, "transform"):
        out["transform"] = est.transform(x).tolist()
    return out


def write(path, value):
    with open(path, "w") as f:
        json.dump(value, f, allow_nan=False)


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "fit":
        seed = int(sys.argv[3])
        sets = data(seed)
        write(os.path.join(out, "data.json"),
              {k: {"X": v[0].tolist(), "y": v[1].tolist(), "test": v[2].tolist()} for k, v in sets.items()})
        for name, (est, kind) in cases(seed).items():
            x, y, test = sets[kind]
            est.fit(x) if name in ("kmeans", "pca") else est.fit(x, y)
            cuwire_sklearn.save(est, os.path.join(out, name + ".cwm"))
            result = outputs(est, test)
            result["estimator"] = type(est).__name__
            write(os.path.join(out, name + ".json"), result)
    elif mode == "reverse":
        for f in sorted(os.listdir(out)):
            if f.endswith(".cuwire.cwm"):
                name = f[: -len(".cuwire.cwm")]
                est = cuwire_sklearn.load(os.path.join(out, f))
                with open(os.path.join(out, name + ".cuwire.json")) as g:
                    x = np.asarray(json.load(g)["X"], dtype=np.float64)
                write(os.path.join(out, name + ".sklearn.json"), outputs(est, x))
    else:
        sys.exit("usage: sklearn_models.py fit DIR SEED | reverse DIR")


main()
