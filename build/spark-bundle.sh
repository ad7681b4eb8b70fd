#!/usr/bin/env bash
# The Spark bundle: for a GPU host with no Java and no network, everything a standalone Spark cluster of cuwire
# executors needs, in parts of at most 60 MiB each (a device call's limit).
#   build/spark-bundle.sh [--all-jars] [--jars-from TRACE_DIR] [DIR]     (default DIR: .bundle/cuwire-spark)
# DIR holds:
#   runtime/          a Java runtime linked by jlink with the modules the cuwire and Spark jars use (jdeps), stripped
#   lib/              the cuwire command's class path (cuwire-cli's: every cuwire module, cuwire-spark and cuwire-bench
#                     without its optional JMH, Kryo 5 and Fory)
#   spark/jars/       the Spark 4.2.0 jars that a Master, a Worker, executors and the benchmarks' driver load (the
#                     list build/spark-bundle/jars.txt, found by running them: --jars-from); SPARK_HOME is spark/
#   spark/jvm-options.txt  Spark's module options (the POM's cuwire.spark.jvmArgs)
#   bin/              cuwire (the command), spark-bench (Master, Workers with GPUs, a benchmark; its header says how),
#                     gpu-discovery (Spark's GPU discovery script), ucx-env.bash
#   data/             scikit-learn's shipped digits, breast cancer and diabetes sets as CSV, when this host's Python
#                     has scikit-learn (cuwire bench mllib --real-dir; not committed: converted here, each build)
#   bundle.txt        the commit, the runtime, the jars, the parts
# and beside DIR: DIR.tar.part-aa, -ab, ... (split tar of DIR, each <= 60 MiB): carry them, then
#   cat cuwire-spark.tar.part-* | tar -xf -
# --all-jars keeps every Spark jar (the untrimmed bundle a trace runs on); --jars-from TRACE_DIR writes jars.txt from
# the class-load logs of `bin/spark-bench --trace TRACE_DIR ...` (the jars that gave a loaded class) and uses it.
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
list="$root/build/spark-bundle/jars.txt"
part_mib=60
all=false trace=""
while (($#)); do
    case "$1" in
        --all-jars) all=true; shift ;;
        --jars-from) trace="$2"; shift 2 ;;
        -*) echo "usage: build/spark-bundle.sh [--all-jars] [--jars-from TRACE_DIR] [DIR]" >&2; exit 2 ;;
        *) break ;;
    esac
done
dir="${1:-$root/.bundle/cuwire-spark}"
mkdir -p "$(dirname "$dir")"
dir="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"

if [[ -n "$trace" ]]; then
    # "... source: file:/.../spark/jars/x.jar" (or jar:file:...!/): the jar of each loaded class
    grep -ho 'source: \(jar:\)\?file:[^ ]*/spark/jars/[^ /!]*\.jar' "$trace"/*.log | sed 's:.*/::' | sort -u >"$list.new"
    [[ -s "$list.new" ]] || { echo "spark-bundle: no Spark jar in the class-load logs of $trace" >&2; exit 1; }
    mv "$list.new" "$list"
    echo "spark-bundle: $(wc -l <"$list") jars loaded, listed in $list" >&2
fi

if [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/jlink" ]]; then
    JAVA_HOME="$(ls -d /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*25* 2>/dev/null | head -n 1)"
fi
export JAVA_HOME
echo "spark-bundle: building with $JAVA_HOME ..." >&2
(cd "$root" && mvn -B -q -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true package -pl cuwire-cli -am)

if [[ -e "$dir" ]]; then
    if [[ -f "$dir/bundle.txt" || ( -d "$dir" && -z "$(ls -A "$dir")" ) ]]; then
        rm -rf "$dir" "$dir".tar.part-*
    else
        echo "spark-bundle: $dir exists and is not a cuwire bundle; not replacing it" >&2
        exit 1
    fi
fi
mkdir -p "$dir/lib" "$dir/bin" "$dir/spark/jars"
cp "$root/cuwire-cli/target/cuwire-cli.jar" "$root"/cuwire-cli/target/lib/*.jar "$dir/lib/"
spark_lib="$root/cuwire-bench/target/spark/lib"
if $all; then
    cp "$spark_lib"/*.jar "$dir/spark/jars/"
else
    [[ -f "$list" ]] || { echo "spark-bundle: no $list (build with --all-jars, trace, then --jars-from)" >&2; exit 1; }
    while read -r jar; do
        [[ -f "$spark_lib/$jar" ]] || { echo "spark-bundle: $jar of $list is not in $spark_lib (Spark's" \
            "dependencies changed: trace again)" >&2; exit 1; }
        [[ -e "$dir/lib/$jar" ]] || cp "$spark_lib/$jar" "$dir/spark/jars/"
    done <"$list"
fi
cp "$root/cuwire-bench/target/spark/jvm-options.txt" "$dir/spark/"
cp "$root/build/bundle/bin/cuwire" "$root/build/bundle/bin/ucx-env.bash" "$root"/build/spark-bundle/bin/* "$dir/bin/"
chmod +x "$dir"/bin/*

python=""
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import sklearn' 2>/dev/null; then python="$p"; break; fi
done
if [[ -n "$python" ]]; then
    "$python" "$root/cuwire-bench/src/main/resources/io/cuwire/bench/spark/sklearn_datasets.py" "$dir/data" >&2
else
    echo "spark-bundle: no Python with scikit-learn here: no data/ (cuwire bench mllib skips the real data sets)" >&2
fi

feature="$("$JAVA_HOME/bin/jlink" --version)"
feature="${feature%%[!0-9]*}"
# jdeps over the cuwire jars (as the GPU bundle does); Spark's jars it cannot take whole (arrow-vector is a named
# module whose requirements are not all there: "Module flatbuffers.java not found"), so their JDK modules are a fixed
# list: what Spark 4.2's jars use (java.sql, java.management, java.naming, java.desktop's java.beans for bean
# encoders, the security providers, ...) and what the runs found missing (jdk.security.auth: Hadoop's login, UnixLoginModule). jdk.unsupported
# (sun.misc.Unsafe), jdk.incubator.vector (the CPU backend), jdk.zipfs.
modules="$("$JAVA_HOME/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release "$feature" \
    "$dir"/lib/*.jar 2>/dev/null | grep -v '^Warning: ' | tail -n 1)"
modules="$( (tr , '\n' <<<"$modules"; tr ' ' '\n' <<<"java.base java.compiler java.desktop java.instrument java.logging \
    java.management java.naming java.net.http java.scripting java.security.jgss java.security.sasl java.sql \
    java.transaction.xa java.xml jdk.crypto.ec jdk.jfr jdk.management jdk.net jdk.security.auth jdk.security.jgss \
    jdk.unsupported jdk.incubator.vector \
    jdk.zipfs") | grep -v '^ *$' | sort -u | paste -sd,)"
echo "spark-bundle: linking a Java runtime with $modules" >&2
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=zip-9 \
    --output "$dir/runtime"
if command -v strip >/dev/null; then
    strip --strip-unneeded "$dir"/runtime/lib/server/*.so "$dir"/runtime/lib/*.so
fi

commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[[ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ]] || commit+=" (with uncommitted changes)"
mib() { local b; b="$(du -sb "$1" | cut -f1)"; echo "$((b * 10 / 1048576 / 10)).$((b * 10 / 1048576 % 10)) MiB"; }
{
    echo "cuwire Spark bundle: bin/spark-bench [--platform cuda|emulated] mllib|spark-broadcast (README: On Spark)"
    echo "commit: $commit"
    echo "runtime: $("$dir/runtime/bin/java" --version | head -n 1); modules $modules"
    echo "sizes: runtime $(mib "$dir/runtime"), lib $(mib "$dir/lib") ($(ls "$dir/lib" | wc -l) jars)," \
        "spark/jars $(mib "$dir/spark/jars") ($(ls "$dir/spark/jars" | wc -l) jars$($all && echo ", untrimmed"))," \
        "total $(mib "$dir")"
} >"$dir/bundle.txt"
(cd "$(dirname "$dir")" && tar -cf - "$(basename "$dir")" | split -b "${part_mib}m" - "$(basename "$dir").tar.part-")
{
    echo "parts (cat $(basename "$dir").tar.part-* | tar -xf -):"
    for p in "$dir".tar.part-*; do echo "  $(basename "$p") $(stat -c %s "$p") bytes"; done
} >>"$dir/bundle.txt"
cat "$dir/bundle.txt" >&2
