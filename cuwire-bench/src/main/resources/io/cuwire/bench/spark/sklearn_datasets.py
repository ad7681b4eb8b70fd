"""Writes the data sets that scikit-learn ships (no download) as CSV for cuwire bench mllib.

usage: python3 sklearn_datasets.py DIR

DIR/digits.csv (1,797 rows: the digit, then 64 pixel counts 0..16), DIR/breast_cancer.csv (569 rows: 0 malignant or
1 benign, then 30 measurements) and DIR/diabetes.csv (442 rows: the disease progression, then 10 scaled
measurements); each line the label then the features, no header, floats as Python's repr (exact). Prints one
DATASET line per file with its rows, features and scikit-learn's version.
"""
import os
import sys

from sklearn import __version__
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits


def main(out):
    os.makedirs(out, exist_ok=True)
    for name, load in (("digits", load_digits), ("breast_cancer", load_breast_cancer), ("diabetes", load_diabetes)):
        data = load()
        path = os.path.join(out, name + ".csv")
        with open(path, "w", encoding="utf-8") as f:
            for x, y in zip(data.data, data.target):
                f.write(",".join(repr(float(v)) for v in [y, *x]) + "\n")
        print("DATASET name=%s rows=%d features=%d sklearn=%s path=%s"
              % (name, data.data.shape[0], data.data.shape[1], __version__, path))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: sklearn_datasets.py DIR")
    main(sys.argv[1])
