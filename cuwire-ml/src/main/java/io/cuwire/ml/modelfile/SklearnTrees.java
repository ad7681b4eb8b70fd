package io.cuwire.ml.modelfile;

import io.cuwire.memory.DType;
import io.cuwire.ml.ForestLayout;
import java.util.Arrays;
import java.util.List;

/**
 * One scikit-learn tree ({@code tree_.children_left}, {@code children_right}, {@code feature}, {@code threshold},
 * {@code value}) as a {@link ForestLayout.Tree}, checked node by node.
 *
 * <p>Numbering: scikit-learn numbers nodes depth first and keeps both children's numbers; cuwire's layout puts a
 * split's right child right after its left one. The nodes are renumbered breadth first from the root, so each pair
 * of children is adjacent; every node must be reached exactly once (no child outside the tree, none shared, none
 * left over), which also rules out cycles. The walk is a loop over a queue, not recursion: a hostile depth cannot
 * overflow the stack.
 *
 * <p>Thresholds: scikit-learn casts {@code X} to float32 and sends a row left when {@code float32(x) <= threshold}.
 * cuwire compares {@code x <= threshold} in double, for float32 and float64 inputs alike. So each threshold {@code t}
 * becomes the largest double {@code t'} with {@code x <= t'} exactly when {@code float32(x) <= t}: with {@code f}
 * the largest float32 at most {@code t}, the doubles that round to at most {@code f} are those below the midpoint of
 * {@code f} and the next float32, and the midpoint itself when the tie rounds to {@code f} (an even significand). A
 * float32 input goes the way it went in scikit-learn; so does a float64 one.
 *
 * <p>Leaves: a classifier's values are normalized to class probabilities (scikit-learn 1.2 stores weighted counts,
 * later versions fractions; {@code predict_proba} normalizes either way); a regressor's leaf is its one value.
 *
 * <p>The other way ({@link #arrays}), cuwire's trees become scikit-learn's arrays as they are: cuwire's node numbers
 * (a split's children adjacent), {@code -1} for a leaf's children, {@code -2} (scikit-learn's {@code TREE_UNDEFINED})
 * for its feature and threshold, and each threshold unchanged: scikit-learn sends a row left when
 * {@code float32(x) <= t}, cuwire when {@code x <= t}, which agree for every row that float32 holds exactly (every
 * row scikit-learn has cast). cuwire keeps values at the leaves only, so a split's {@code value} row is zeros (no
 * prediction reads it).
 */
final class SklearnTrees {
    private SklearnTrees() {}

    static ForestLayout.Tree convert(
            int tree,
            int first,
            int n,
            double[] left,
            double[] right,
            double[] feature,
            double[] threshold,
            double[] value,
            int outputs,
            int features,
            boolean classifier) {
        int[] order = new int[n];
        int[] newId = new int[n];
        Arrays.fill(newId, -1);
        newId[0] = 0;
        order[0] = 0;
        int placed = 1;
        int leaves = 0;
        int[] nodeFeature = new int[n];
        int[] nodeChild = new int[n];
        double[] nodeThreshold = new double[n];
        for (int at = 0; at < placed; at++) {
            int old = order[at];
            int g = first + old;
            String where = "tree " + tree + " node " + old;
            if (left[g] == -1 && right[g] == -1) {
                nodeFeature[at] = -1;
                nodeChild[at] = leaves++;
                continue;
            }
            int f = (int) feature[g];
            if (feature[g] != f || f < 0 || f >= features) {
                throw new ModelFileException(
                        "feature[" + g + "]", feature[g] + " in " + where + " (expected: 0 .. " + (features - 1) + ")");
            }
            if (!Double.isFinite(threshold[g])) {
                throw new ModelFileException(
                        "threshold[" + g + "]", threshold[g] + " in " + where + " (expected: a finite split)");
            }
            int l = place(left[g], "children_left", g, where, n, newId);
            newId[l] = placed;
            order[placed++] = l;
            int r = place(right[g], "children_right", g, where, n, newId);
            newId[r] = placed;
            order[placed++] = r;
            nodeFeature[at] = f;
            nodeChild[at] = newId[l];
            nodeThreshold[at] = float32Threshold(threshold[g]);
        }
        if (placed != n) {
            int lost = 0;
            while (newId[lost] >= 0) {
                lost++;
            }
            throw new ModelFileException(
                    "tree_node_count[" + tree + "]",
                    n + ", but node " + lost + " is not reached from the root (expected: every node in the tree)");
        }
        double[] values = new double[leaves * outputs];
        for (int at = 0; at < n; at++) {
            if (nodeFeature[at] >= 0) {
                continue;
            }
            int g = first + order[at];
            int o = nodeChild[at] * outputs;
            double sum = 0;
            for (int c = 0; c < outputs; c++) {
                double v = value[g * outputs + c];
                if (classifier && v < 0) {
                    throw new ModelFileException(
                            "value[" + g + ", " + c + "]", v + " (expected: >= 0, a class " + "weight)");
                }
                values[o + c] = v;
                sum += v;
            }
            if (classifier && sum > 0) {
                for (int c = 0; c < outputs; c++) {
                    values[o + c] /= sum;
                }
            }
        }
        return new ForestLayout.Tree(nodeFeature, nodeChild, nodeThreshold, values);
    }

    /**
     * The file's forest arrays of {@code trees} ({@code tree_node_count}, {@code children_left},
     * {@code children_right}, {@code feature}, {@code threshold}, {@code value}), the inverse of {@link #convert}
     * up to the numbering of the nodes.
     */
    static List<ModelFile.Array> arrays(List<ForestLayout.Tree> trees, ForestLayout.Info info) {
        int outputs = info.outputs();
        int nodes = Math.toIntExact(info.nodes());
        double[] counts = new double[trees.size()];
        double[] left = new double[nodes];
        double[] right = new double[nodes];
        double[] feature = new double[nodes];
        double[] threshold = new double[nodes];
        double[] value = new double[Math.multiplyExact(nodes, outputs)];
        int g = 0;
        for (int t = 0; t < trees.size(); t++) {
            ForestLayout.Tree tree = trees.get(t);
            counts[t] = tree.feature().length;
            for (int i = 0; i < tree.feature().length; i++, g++) {
                int f = tree.feature()[i];
                int c = tree.child()[i];
                boolean leaf = f < 0;
                left[g] = leaf ? -1 : c;
                right[g] = leaf ? -1 : c + 1;
                feature[g] = leaf ? -2 : f;
                threshold[g] = leaf ? -2 : tree.threshold()[i];
                if (leaf) {
                    System.arraycopy(tree.values(), c * outputs, value, g * outputs, outputs);
                }
            }
        }
        return List.of(
                new ModelFile.Array("tree_node_count", DType.INT64, new long[] {counts.length}, counts),
                new ModelFile.Array("children_left", DType.INT64, new long[] {nodes}, left),
                new ModelFile.Array("children_right", DType.INT64, new long[] {nodes}, right),
                new ModelFile.Array("feature", DType.INT64, new long[] {nodes}, feature),
                new ModelFile.Array("threshold", DType.FLOAT64, new long[] {nodes}, threshold),
                new ModelFile.Array("value", DType.FLOAT64, new long[] {nodes, outputs}, value));
    }

    /** {@code value}, a child of global node {@code g}, as a node of the tree not placed yet. */
    private static int place(double value, String side, int g, String where, int n, int[] newId) {
        if (!(value >= 1 && value < n)) {
            throw new ModelFileException(
                    side + "[" + g + "]",
                    (long) value + " in " + where + " (expected: a node 1 " + ".. " + (n - 1)
                            + " of its tree, or -1 on both sides for a leaf)");
        }
        int child = (int) value;
        if (newId[child] >= 0) {
            throw new ModelFileException(
                    side + "[" + g + "]",
                    child + " in " + where
                            + " is reached a second time (expected: a tree, each node the child of one split)");
        }
        return child;
    }

    /** The largest double {@code t'} with {@code x <= t'} exactly when {@code (float) x <= t}. */
    static double float32Threshold(double t) {
        float f = (float) t;
        if (f > t) {
            f = Math.nextDown(f);
        }
        if (f == Float.POSITIVE_INFINITY) {
            return Double.POSITIVE_INFINITY;
        }
        float up = Math.nextUp(f);
        double mid = up == Float.POSITIVE_INFINITY ? f + Math.ulp(f) / 2.0 : ((double) f + (double) up) / 2;
        return (Float.floatToRawIntBits(f) & 1) == 0 ? mid : Math.nextDown(mid);
    }
}
