"""scikit-learn estimators to and from cuwire model files (docs/model-file.md), with NumPy and json only: no pickle.

    import cuwire_sklearn
    cuwire_sklearn.save(fitted_estimator, "model.cwm")    # for `ModelFile.read` / `cuwire model import`
    estimator = cuwire_sklearn.load("model.cwm")          # a file cuwire wrote (`ModelFile.write`)

    python3 cuwire_sklearn.py inspect model.cwm           # the header, and each array's dtype and shape

save() and load() know LinearRegression, Ridge, LogisticRegression, KMeans, PCA, MultinomialNB,
KNeighborsClassifier, RandomForestClassifier and RandomForestRegressor. load() rebuilds the first six from their
attributes, the neighbours classifier from its stored rows, and a forest's trees from the file's arrays through
scikit-learn's tree state (sklearn.tree._tree.Tree and its __setstate__, the node layout read from scikit-learn at run
time, as the installed version has it). Anything else raises ValueError naming what.
"""

import json
import struct
import sys

import numpy as np

MAGIC = b"CWMODEL\0"
FORMAT_VERSION = 1
DTYPES = {"float64": "<f8", "float32": "<f4", "int64": "<i8", "int32": "<i4"}


def _json_params(est):
    out = {}
    for k, v in est.get_params(deep=False).items():
        if v is None or isinstance(v, (bool, int, float, str)):
            out[k] = v
        elif isinstance(v, np.generic):
            out[k] = v.item()
    return out


def _require(cond, what):
    if not cond:
        raise ValueError("cuwire_sklearn: " + what)


def _arrays_of(est):
    """(estimator name, attributes, {name: array}) for a fitted estimator."""
    from sklearn import cluster, decomposition, ensemble, linear_model, naive_bayes, neighbors

    name = type(est).__name__
    attrs = {"n_features_in_": int(est.n_features_in_)}
    if isinstance(est, (linear_model.LinearRegression, linear_model.Ridge)) and name in ("LinearRegression", "Ridge"):
        _require(np.ndim(est.coef_) == 1, name + " with several targets (coef_ of shape %s)" % (est.coef_.shape,))
        return name, attrs, {"coef_": est.coef_, "intercept_": np.asarray(est.intercept_, dtype=np.float64)}
    if name == "LogisticRegression":
        k = len(est.classes_)
        # newer scikit-learn (1.9.1 on the GPU host) has no multi_class: always multinomial for more than two classes
        _require(k == 2 or getattr(est, "multi_class", "auto") in ("auto", "multinomial"),
                 "LogisticRegression with multi_class='ovr' for %d classes (cuwire's is multinomial)" % k)
        return name, attrs, {"coef_": est.coef_, "intercept_": est.intercept_, "classes_": est.classes_}
    if name == "KMeans":
        attrs.update(inertia_=float(est.inertia_), n_iter_=int(est.n_iter_))
        return name, attrs, {"cluster_centers_": est.cluster_centers_}
    if name == "PCA":
        attrs.update(noise_variance_=float(est.noise_variance_), n_samples_=int(est.n_samples_))
        return name, attrs, {
            "components_": est.components_, "mean_": est.mean_,
            "explained_variance_": est.explained_variance_,
            "explained_variance_ratio_": est.explained_variance_ratio_,
            "singular_values_": est.singular_values_}
    if name == "MultinomialNB":
        _require(est.class_prior is None, "MultinomialNB with class_prior (cuwire learns the prior or uses uniform)")
        return name, attrs, {
            "class_count_": est.class_count_, "feature_count_": est.feature_count_,
            "feature_log_prob_": est.feature_log_prob_, "class_log_prior_": est.class_log_prior_,
            "classes_": est.classes_}
    if name == "KNeighborsClassifier":
        _require(est.weights == "uniform", "KNeighborsClassifier weights=%r (cuwire votes uniformly)" % est.weights)
        _require(est.effective_metric_ == "euclidean",
                 "KNeighborsClassifier metric %r (cuwire measures euclidean distances)" % est.effective_metric_)
        _require(np.ndim(est._y) == 1, "KNeighborsClassifier with several outputs")
        return name, attrs, {"_fit_X": est._fit_X, "_y": est._y, "classes_": est.classes_}
    if name in ("RandomForestClassifier", "RandomForestRegressor"):
        _require(est.n_outputs_ == 1, name + " with %d outputs (cuwire's forests have one)" % est.n_outputs_)
        trees = [t.tree_ for t in est.estimators_]
        arrays = {
            "tree_node_count": np.array([t.node_count for t in trees], dtype=np.int64),
            "children_left": np.concatenate([t.children_left for t in trees]).astype(np.int64),
            "children_right": np.concatenate([t.children_right for t in trees]).astype(np.int64),
            "feature": np.concatenate([t.feature for t in trees]).astype(np.int64),
            "threshold": np.concatenate([t.threshold for t in trees]).astype(np.float64),
            "value": np.concatenate([t.value[:, 0, :] for t in trees]).astype(np.float64),
        }
        if name == "RandomForestClassifier":
            arrays["classes_"] = est.classes_
        return name, attrs, arrays
    raise ValueError("cuwire_sklearn: %s is not an estimator cuwire imports (expected one of: LinearRegression, "
                     "Ridge, LogisticRegression, KMeans, PCA, MultinomialNB, KNeighborsClassifier, "
                     "RandomForestClassifier, RandomForestRegressor)" % type(est).__module__ + "." + name)


def save(est, path):
    """Writes fitted scikit-learn estimator `est` to `path` as a cuwire model file."""
    import sklearn

    name, attrs, arrays = _arrays_of(est)
    entries, blobs, offset = {}, [], 0
    for key, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.kind == "f":
            a = a.astype("<f8" if a.dtype.itemsize == 8 else "<f4")
        elif a.dtype.kind in "iu":
            a = a.astype("<i8")
        else:
            raise ValueError("cuwire_sklearn: %s.%s has dtype %s (expected: numbers)" % (name, key, a.dtype))
        data = np.ascontiguousarray(a).tobytes()
        entries[key] = {"dtype": "float64" if a.dtype == np.dtype("<f8") else
                        "float32" if a.dtype == np.dtype("<f4") else "int64",
                        "shape": list(a.shape), "offset": offset}
        blobs.append(data + b"\0" * (-len(data) % 8))
        offset += len(blobs[-1])
    header = {"format_version": FORMAT_VERSION, "estimator": name,
              "producer": "scikit-learn " + sklearn.__version__,
              "params": _json_params(est), "attributes": attrs, "arrays": entries}
    text = json.dumps(header, allow_nan=False, sort_keys=False).encode("utf-8")
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(text)) + text + b"\0" * (-len(text) % 8))
        for b in blobs:
            f.write(b)


def read(path):
    """The header (a dict) and arrays (name -> numpy array) of a cuwire model file, checked."""
    with open(path, "rb") as f:
        raw = f.read()
    _require(raw[:8] == MAGIC, "%s is not a cuwire model file (magic %r)" % (path, raw[:8]))
    (length,) = struct.unpack("<Q", raw[8:16])
    _require(length <= len(raw) - 16, "%s: header of %d bytes in a file of %d" % (path, length, len(raw)))
    header = json.loads(raw[16:16 + length].decode("utf-8"))
    _require(header.get("format_version") == FORMAT_VERSION,
             "%s: format_version %r (expected: %d)" % (path, header.get("format_version"), FORMAT_VERSION))
    start = 16 + length + (-length % 8)
    arrays = {}
    for key, e in header["arrays"].items():
        _require(e["dtype"] in DTYPES, "%s: arrays.%s dtype %r" % (path, key, e["dtype"]))
        dt = np.dtype(DTYPES[e["dtype"]])
        count = int(np.prod(e["shape"], dtype=np.int64))
        at = start + e["offset"]
        _require(0 <= e["offset"] and at + count * dt.itemsize <= len(raw), "%s: arrays.%s outside the file" % (path, key))
        arrays[key] = np.frombuffer(raw, dtype=dt, count=count, offset=at).reshape(e["shape"]).copy()
    return header, arrays


def load(path):
    """The scikit-learn estimator in cuwire model file `path`, rebuilt from its attributes."""
    from sklearn import cluster, decomposition, linear_model, naive_bayes, neighbors

    header, a = read(path)
    name, p, attrs = header["estimator"], header.get("params", {}), header.get("attributes", {})
    d = int(attrs["n_features_in_"])
    if name in ("LinearRegression", "Ridge"):
        est = getattr(linear_model, name)(**{k: v for k, v in p.items() if k in ("fit_intercept", "alpha")})
        est.coef_, est.intercept_ = a["coef_"], float(a["intercept_"])
    elif name == "LogisticRegression":
        est = linear_model.LogisticRegression(**{k: v for k, v in p.items() if k in ("C", "fit_intercept", "max_iter", "tol")})
        est.coef_, est.intercept_, est.classes_ = a["coef_"], a["intercept_"], a["classes_"]
    elif name == "KMeans":
        est = cluster.KMeans(n_clusters=a["cluster_centers_"].shape[0], n_init=1)
        est.cluster_centers_ = a["cluster_centers_"]
        est.inertia_, est.n_iter_ = attrs.get("inertia_", 0.0), attrs.get("n_iter_", 0)
        est._n_threads = 1
        est._n_features_out = est.cluster_centers_.shape[0]
    elif name == "PCA":
        est = decomposition.PCA(n_components=a["components_"].shape[0], whiten=bool(p.get("whiten", False)))
        est.components_, est.mean_ = a["components_"], a["mean_"]
        est.explained_variance_ = a["explained_variance_"]
        est.explained_variance_ratio_ = a["explained_variance_ratio_"]
        est.singular_values_ = a["singular_values_"]
        est.noise_variance_, est.n_samples_ = attrs.get("noise_variance_", 0.0), attrs.get("n_samples_", 0)
        est.n_components_ = est.components_.shape[0]
    elif name == "MultinomialNB":
        est = naive_bayes.MultinomialNB(**{k: v for k, v in p.items() if k in ("alpha", "fit_prior")})
        for key in ("class_count_", "feature_count_", "feature_log_prob_", "class_log_prior_", "classes_"):
            setattr(est, key, a[key])
    elif name == "KNeighborsClassifier":
        est = neighbors.KNeighborsClassifier(n_neighbors=int(p.get("n_neighbors", 5)))
        est.fit(a["_fit_X"], a["classes_"][a["_y"]])
    elif name in ("RandomForestClassifier", "RandomForestRegressor"):
        est = _forest(path, name, p, a, d)
    else:
        raise ValueError("cuwire_sklearn: %s: estimator %r is not one scikit-learn rebuilds from a cuwire file "
                         "(expected one of: LinearRegression, Ridge, LogisticRegression, KMeans, PCA, MultinomialNB, "
                         "KNeighborsClassifier, RandomForestClassifier, RandomForestRegressor)" % (path, name))
    est.n_features_in_ = d
    return est


# The node fields of scikit-learn's Tree that a cuwire file gives, and those it fills because no prediction reads them.
# A field outside both (a newer scikit-learn's) is refused by name rather than guessed.
_NODE_GIVEN = ("left_child", "right_child", "feature", "threshold")
_NODE_FILLED = {
    "impurity": np.nan,                 # not in the file: feature_importances_ comes out NaN, not a made-up ranking
    "n_node_samples": 0,                # not in the file
    "weighted_n_node_samples": np.nan,  # not in the file
    "missing_go_to_left": 0,            # scikit-learn >= 1.3: NaN goes right, as cuwire's x <= t sends it
}


def _forest(path, name, p, a, d):
    """A RandomForestClassifier / Regressor whose trees are the file's, built without pickle."""
    from sklearn import ensemble, tree
    from sklearn.tree._tree import Tree

    classifier = name == "RandomForestClassifier"
    counts = a["tree_node_count"].astype(np.int64)
    _require(counts.ndim == 1 and len(counts) >= 1 and (counts >= 1).all(),
             "%s: tree_node_count %s (expected: at least one tree, each of at least one node)" % (path, counts))
    total = int(counts.sum())
    for key in ("children_left", "children_right", "feature", "threshold"):
        _require(a[key].shape == (total,), "%s: %s of shape %s (expected: (%d,), the sum of tree_node_count)"
                 % (path, key, a[key].shape, total))
    classes = a["classes_"] if classifier else None
    k = len(classes) if classifier else 1
    _require(a["value"].shape == (total, k), "%s: value of shape %s (expected: (%d, %d))" % (path, a["value"].shape,
                                                                                           total, k))
    n_classes = np.array([k], dtype=np.intp)
    template = Tree(d, n_classes, 1).__getstate__()
    _require(set(template) == {"max_depth", "node_count", "nodes", "values"},
             "this scikit-learn's Tree state has %s (expected: max_depth, node_count, nodes, values)"
             % sorted(template))
    node_dtype = template["nodes"].dtype
    unknown = [f for f in node_dtype.names if f not in _NODE_GIVEN and f not in _NODE_FILLED]
    _require(not unknown, "this scikit-learn's tree nodes have the field(s) %s, which a cuwire file does not "
             "give (known: %s)" % (", ".join(unknown), ", ".join(_NODE_GIVEN + tuple(_NODE_FILLED))))
    params = {k2: v for k2, v in p.items() if k2 in ("max_depth", "min_samples_split", "min_samples_leaf",
                                                   "bootstrap", "random_state")}
    params["n_estimators"] = len(counts)
    tree_params = {k2: v for k2, v in params.items() if k2 not in ("n_estimators", "bootstrap")}
    trees, first = [], 0
    for t, n in enumerate(counts):
        n = int(n)
        left = a["children_left"][first:first + n].astype(np.int64)
        right = a["children_right"][first:first + n].astype(np.int64)
        leaf = (left == -1) & (right == -1)
        for side, c in (("children_left", left), ("children_right", right)):
            bad = np.flatnonzero(~leaf & ((c < 1) | (c >= n)))
            _require(len(bad) == 0, "%s: %s[%d] = %d in tree %d (expected: a node 1 .. %d of its tree)"
                     % (path, side, first + (bad[0] if len(bad) else 0), c[bad[0]] if len(bad) else 0, t, n - 1))
        nodes = np.zeros(n, dtype=node_dtype)
        nodes["left_child"] = left
        nodes["right_child"] = right
        nodes["feature"] = np.where(leaf, -2, a["feature"][first:first + n]).astype(np.int64)
        nodes["threshold"] = np.where(leaf, -2.0, a["threshold"][first:first + n])
        for field, fill in _NODE_FILLED.items():
            if field in node_dtype.names:
                nodes[field] = fill
        values = np.ascontiguousarray(a["value"][first:first + n].reshape(n, 1, k), dtype=np.float64)
        state = {"max_depth": _depth(left, right, leaf), "node_count": n, "nodes": nodes, "values": values}
        sk_tree = Tree(d, n_classes, 1)
        sk_tree.__setstate__(state)
        est = (tree.DecisionTreeClassifier if classifier else tree.DecisionTreeRegressor)(**tree_params)
        est.tree_, est.n_features_in_, est.n_outputs_, est.max_features_ = sk_tree, d, 1, d
        if classifier:
            est.classes_, est.n_classes_ = classes, k
        trees.append(est)
        first += n
    forest = (ensemble.RandomForestClassifier if classifier else ensemble.RandomForestRegressor)(**params)
    forest.estimators_, forest.n_outputs_, forest.n_features_in_ = trees, 1, d
    if classifier:
        forest.classes_, forest.n_classes_ = classes, k
    return forest


def _depth(left, right, leaf):
    """The depth of a tree from its children arrays, walked from the root with a queue (no recursion)."""
    depth, frontier, seen = 0, [0], 1
    while True:
        nxt = [c for i in frontier if not leaf[i] for c in (left[i], right[i])]
        if not nxt:
            return depth
        seen += len(nxt)
        _require(seen <= len(left), "a tree whose nodes are reached more than once (expected: a tree)")
        depth, frontier = depth + 1, nxt


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "inspect":
        sys.exit("usage: cuwire_sklearn.py inspect FILE")
    h, arrs = read(sys.argv[2])
    print(json.dumps({k: v for k, v in h.items() if k != "arrays"}, indent=2))
    for k, v in arrs.items():
        print("%s %s %s" % (k, v.dtype.name, list(v.shape)))
