#!/usr/bin/env python3
"""scikit-learn on the data of `cuwire bench estimators`, with the bench's settings: the peer of `--peer sklearn`.

`cuwire bench knn --peer sklearn` runs it too, for NearestNeighbors alone, on its rows and queries (float32 or float64).

The bench writes its data sets to a directory (DIR/data.txt names each file, its dtype and shape; each file holds the
raw little-endian elements, rows in order) and runs

    python3 bench/sklearn_peer.py DIR --repeat R [--warmup W] --neighbors K [--estimators NAME,NAME]

which prints one line per estimator, the median fit and predict time of R runs each (the same steps the bench
times), and the iterations where the estimator iterates:

    INFO peer=sklearn sklearn=1.2.1 numpy=1.24.2 threads=2 blas=openblas 0.3.21 (pthreads, 2 threads, Zen)
    PEER estimator=KMeans fit_ms=... predict_ms=... n_iter=12 settings=n_clusters=8,init=given,n_init=1,...

Settings match the bench's: n_jobs=-1 wherever the estimator takes it; equal tol, max_iter and n_init.
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
import sklearn
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.naive_bayes import MultinomialNB
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors


def load(directory):
    data = {}
    with open(os.path.join(directory, "data.txt"), encoding="ascii") as f:
        for line in f:
            name, dtype, *shape = line.split()
            shape = tuple(int(s) for s in shape)
            data[name] = np.fromfile(os.path.join(directory, name + ".bin"), dtype="<" + dtype).reshape(shape)
    return data


def blas():
    try:
        from threadpoolctl import threadpool_info
        parts = []
        for p in threadpool_info():
            parts.append("%s %s (%s, %s threads, %s)" % (p.get("internal_api"), p.get("version"),
                                                          p.get("threading_layer"), p.get("num_threads"),
                                                          p.get("architecture")))
        return "; ".join(parts) or "unknown"
    except ImportError:
        return "unknown (no threadpoolctl)"


def benches(d, k):
    """name -> (fit(), predict(model), settings, iterations(model))."""
    return {
        "LinearRegression": (lambda: LinearRegression(n_jobs=-1).fit(d["x"], d["y"]),
                             lambda m: m.predict(d["x"]), "n_jobs=-1", None),
        "Ridge": (lambda: Ridge(alpha=1.0).fit(d["x"], d["y"]), lambda m: m.predict(d["x"]),
                  "alpha=1.0,solver=auto", None),
        "LogisticRegression": (lambda: LogisticRegression(tol=1e-8, max_iter=200, C=1.0, n_jobs=-1)
                               .fit(d["x"], d["labels"]), lambda m: m.predict_proba(d["x"]),
                               "solver=lbfgs,multinomial,C=1.0,tol=1e-8,max_iter=200,n_jobs=-1",
                               lambda m: int(np.max(m.n_iter_))),
        "KMeans": (lambda: KMeans(n_clusters=d["init"].shape[0], init=d["init"], n_init=1, tol=0.0, max_iter=100,
                                  algorithm="lloyd").fit(d["blobs"]), lambda m: m.predict(d["blobs"]),
                   "n_clusters=8,init=given,n_init=1,tol=0,max_iter=100,algorithm=lloyd", lambda m: int(m.n_iter_)),
        "PCA": (lambda: PCA(n_components=min(8, d["scaled"].shape[1])).fit(d["scaled"]),
                lambda m: m.transform(d["scaled"]), "n_components=8,svd_solver=auto",
                lambda m: m._fit_svd_solver),
        "MultinomialNB": (lambda: MultinomialNB().fit(d["counts"], d["labels"]),
                          lambda m: m.predict_proba(d["counts"]), "alpha=1.0", None),
        "NearestNeighbors": (lambda: NearestNeighbors(n_neighbors=k, n_jobs=-1).fit(d["x"]),
                             lambda m: m.kneighbors(d["queries"], return_distance=True)[1],
                             "n_neighbors=%d,algorithm=auto,n_jobs=-1" % k, lambda m: m._fit_method),
        "KNeighborsClassifier": (lambda: KNeighborsClassifier(n_neighbors=k, n_jobs=-1).fit(d["x"], d["labels"]),
                                 lambda m: m.predict(d["queries"]),
                                 "n_neighbors=%d,algorithm=auto,n_jobs=-1" % k, lambda m: m._fit_method),
    }


def median_ms(f, repeat):
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = f()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=0, help="untimed fits and predicts before the timed ones")
    p.add_argument("--neighbors", type=int, default=5)
    p.add_argument("--estimators", default="")
    a = p.parse_args()
    d = load(a.data)
    if "labels" in d:  # cuwire bench knn writes the rows and queries alone
        d["labels"] = d["labels"].astype(np.int64)
    print("INFO peer=sklearn sklearn=%s numpy=%s python=%s threads=%d blas=%s"
          % (sklearn.__version__, np.__version__, platform.python_version(), os.cpu_count(), blas()), flush=True)
    wanted = [e for e in a.estimators.split(",") if e]
    all_benches = benches(d, a.neighbors)
    for name in wanted:
        if name not in all_benches:
            print("sklearn_peer: unknown estimator '%s' (expected: %s)" % (name, ", ".join(all_benches)),
                  file=sys.stderr)
            return 2
    for name, (fit, predict, settings, iterations) in all_benches.items():
        if wanted and name not in wanted:
            continue
        for _ in range(a.warmup):
            predict(fit())
        fit_ms, model = median_ms(fit, a.repeat)
        predict_ms, _ = median_ms(lambda: predict(model), a.repeat)
        it = iterations(model) if iterations else "-"
        print("PEER estimator=%s fit_ms=%.3f predict_ms=%.3f n_iter=%s settings=%s"
              % (name, fit_ms, predict_ms, it, settings), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
