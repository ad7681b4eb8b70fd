#!/usr/bin/env bash
# The Spark bundle: for a GPU host with no Java and no network, everything a standalone Spark cluster of cuwire
# executors needs, packed into xz parts of at most 55 MiB each (a device call carries 64 MiB, the checkout included).
#   build/spark-bundle.sh [--all-jars] [--jars-from TRACE_DIR] [--no-pack] [DIR]    (default DIR: .bundle/cuwire-spark)
# (also ./cuwire bundle spark [options] [DIR]). DIR holds:
#   runtime/          a Java runtime linked by jlink: the JDK modules the cuwire jars use (jdeps) and those the Spark
#                     JVMs loaded (build/spark-bundle/modules.txt, found by running them: --jars-from), stripped
#   lib/              the cuwire command's class path (cuwire-cli's: every cuwire module, cuwire-spark and cuwire-bench
#                     without its optional JMH, Kryo 5 and Fory)
#   spark/            SPARK_HOME: jars/ (the Spark 4.2.0 jars that a Master, a Worker, executors and the drivers of
#                     bin/spark-gpu-run loaded: build/spark-bundle/jars.txt, found by running them: --jars-from), RELEASE
#                     (so that Spark's launcher of executors takes jars/), conf/log4j2.properties, jvm-options.txt
#                     (Spark's module options, the POM's cuwire.spark.jvmArgs)
#   bin/              spark-gpu-run (a Master, a Worker with GPUs, the stages check, mllib and spark-broadcast; its
#                     header says how), gpu-discovery (Spark's GPU discovery script), cuwire (the command), ucx-env.bash
#   data/             scikit-learn's shipped digits, breast cancer and diabetes sets as CSV, when this host's Python
#                     has scikit-learn (cuwire bench mllib --real-dir; converted here, each build)
#   bundle.txt        the commit, the runtime, the sizes, the parts
# Every jar is stored uncompressed (build/spark-bundle/StoreJars.java, which also drops the native libraries for
# platforms other than Linux x86-64) and the runtime is linked uncompressed, so that one xz stream over the whole
# bundle packs it: DIR.parts/ gets cuwire-spark.tar.xz.part-aa, -ab, ... (55 MiB each, in name order), SHA256SUMS,
# PARTS.txt and unpack (build/spark-bundle/unpack: `unpack DIR.parts [DEST]`, which needs only tar and xz or python3).
# --all-jars keeps every Spark jar and links every JDK module (the untrimmed bundle a trace runs on; not packed);
# --jars-from TRACE_DIR writes jars.txt and modules.txt from the class-load logs of `bin/spark-gpu-run --trace
# TRACE_DIR ...` (the jars and JDK modules that gave a loaded class) and uses them; --no-pack leaves out DIR.parts.
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
jars_list="$root/build/spark-bundle/jars.txt"
modules_list="$root/build/spark-bundle/modules.txt"
part_mib=55
all=false trace="" pack=true
while (($#)); do
    case "$1" in
        --all-jars) all=true pack=false; shift ;;
        --jars-from) trace="$2"; shift 2 ;;
        --no-pack) pack=false; shift ;;
        -*) echo "usage: build/spark-bundle.sh [--all-jars] [--jars-from TRACE_DIR] [--no-pack] [DIR]" >&2; exit 2 ;;
        *) break ;;
    esac
done
dir="${1:-$root/.bundle/cuwire-spark}"
mkdir -p "$(dirname "$dir")"
dir="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
parts="$dir.parts"

if [[ -n "$trace" ]]; then
    # "... source: file:/.../spark/jars/x.jar" (or jar:file:...!/): the jar of each loaded class
    grep -ho 'source: \(jar:\)\?file:[^ ]*/spark/jars/[^ /!]*\.jar' "$trace"/*.log | sed 's:.*/::' | sort -u \
        >"$jars_list.new"
    # "... source: jrt:/java.sql": the JDK module of each loaded class, but those a full runtime's service lookups
    # load only because they are there: the console providers of jdk.jshell and jdk.internal.le (jdk.jshell would
    # bring jdk.compiler, ~20 MiB) and the locale data of jdk.localedata (java.base has the root and English locales)
    grep -ho 'source: jrt:/[a-z0-9.]*' "$trace"/*.log | sed 's:.*/::' | sort -u \
        | grep -vxE 'jdk\.jshell|jdk\.internal\.le|jdk\.localedata' >"$modules_list.new"
    [[ -s "$jars_list.new" && -s "$modules_list.new" ]] \
        || { echo "spark-bundle: no Spark jar or JDK module in the class-load logs of $trace" >&2; exit 1; }
    mv "$jars_list.new" "$jars_list"
    mv "$modules_list.new" "$modules_list"
    echo "spark-bundle: $(wc -l <"$jars_list") Spark jars and $(wc -l <"$modules_list") JDK modules loaded, listed in" \
        "$jars_list and $modules_list" >&2
fi

if [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/jlink" ]]; then
    JAVA_HOME="$(ls -d /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*25* 2>/dev/null | head -n 1)"
fi
export JAVA_HOME
java="$JAVA_HOME/bin/java"
"$java" -version 2>&1 | grep -q 'version "2[5-9]' || { echo "spark-bundle: needs a JDK 25 (JAVA_HOME=$JAVA_HOME)" >&2; exit 1; }
echo "spark-bundle: building with $JAVA_HOME ..." >&2
(cd "$root" && mvn -B -q -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true package -pl cuwire-cli -am)

if [[ -e "$dir" ]]; then
    if [[ -f "$dir/bundle.txt" || ( -d "$dir" && -z "$(ls -A "$dir")" ) ]]; then
        rm -rf "$dir" "$parts"
    else
        echo "spark-bundle: $dir exists and is not a cuwire bundle; not replacing it" >&2
        exit 1
    fi
fi
mkdir -p "$dir/lib" "$dir/bin" "$dir/spark/jars" "$dir/spark/conf"
store() { "$java" "$root/build/spark-bundle/StoreJars.java" "$@"; }
store "$dir/lib" "$root/cuwire-cli/target/cuwire-cli.jar" "$root"/cuwire-cli/target/lib/*.jar >/dev/null
spark_lib="$root/cuwire-bench/target/spark/lib"
spark_jars=()
if $all; then
    spark_jars=("$spark_lib"/*.jar)
else
    [[ -f "$jars_list" ]] || { echo "spark-bundle: no $jars_list (build with --all-jars, trace, then --jars-from)" >&2
        exit 1; }
    while read -r jar; do
        [[ -f "$spark_lib/$jar" ]] || { echo "spark-bundle: $jar of $jars_list is not in $spark_lib (Spark's" \
            "dependencies changed: trace again)" >&2; exit 1; }
        [[ -e "$dir/lib/$jar" ]] || spark_jars+=("$spark_lib/$jar")
    done <"$jars_list"
fi
store "$dir/spark/jars" "${spark_jars[@]}" >"$dir/spark/jars.txt"
dropped="$(awk '{n += $(NF - 6)} END {print n + 0}' "$dir/spark/jars.txt")"
mv "$dir/spark/jars.txt" "$dir/spark/stored-jars.txt"
spark_version="$(ls "$dir/spark/jars" | sed -n 's/^spark-core_2\.13-\(.*\)\.jar$/\1/p')"
# Spark's launcher (AbstractCommandBuilder.findJarsDir) takes $SPARK_HOME/jars when $SPARK_HOME/RELEASE exists
echo "Spark $spark_version (the jars of a Master, a Worker, executors and cuwire's drivers; cuwire Spark bundle)" \
    >"$dir/spark/RELEASE"
cp "$root/build/spark-bundle/log4j2.properties" "$dir/spark/conf/"
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
if $all; then
    # every module of the JDK but jlink's own (a JDK without packaged modules cannot link them again)
    modules="$("$java" --list-modules | sed 's/@.*//' | grep -vxE 'jdk\.jlink|jdk\.jpackage' | paste -sd,)"
else
    [[ -f "$modules_list" ]] || { echo "spark-bundle: no $modules_list (build with --all-jars, trace, then" \
        "--jars-from)" >&2; exit 1; }
    # jdeps over the cuwire jars (as the GPU bundle does: paths the emulated runs of a trace never take, CUDA's
    # among them); Spark's from the trace (jdeps cannot take Spark's jars whole). jdk.unsupported: sun.misc.Unsafe
    # and the generic serializer's ReflectionFactory; jdk.incubator.vector: the CPU backend; jdk.zipfs; and the
    # security providers (jdk.crypto.ec, jdk.security.auth: Hadoop's login), which a trace of one run may not load.
    modules="$("$JAVA_HOME/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release "$feature" \
        "$dir"/lib/*.jar 2>/dev/null | grep -v '^Warning: ' | tail -n 1)"
    modules="$( (tr , '\n' <<<"$modules"; cat "$modules_list"
        printf '%s\n' jdk.unsupported jdk.incubator.vector jdk.zipfs jdk.crypto.ec jdk.security.auth) \
        | grep -v '^ *$' | sort -u | paste -sd,)"
fi
echo "spark-bundle: linking a Java runtime with $modules" >&2
# uncompressed (--compress=zip-0): xz packs the modules file better than jlink's zip does
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=zip-0 \
    --output "$dir/runtime"
if command -v strip >/dev/null; then
    strip --strip-unneeded "$dir"/runtime/lib/server/*.so "$dir"/runtime/lib/*.so
fi

commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[[ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ]] || commit+=" (with uncommitted changes)"
mib() { local b; b="$(du -sb "$1" | cut -f1)"; echo "$((b * 10 / 1048576 / 10)).$((b * 10 / 1048576 % 10)) MiB"; }
{
    echo "cuwire Spark bundle: bin/spark-gpu-run OUTDIR (README: On a GPU host: the Spark bundle)"
    echo "commit: $commit"
    echo "runtime: $("$dir/runtime/bin/java" --version | head -n 1); modules $modules"
    echo "spark: $spark_version, $(ls "$dir/spark/jars" | wc -l) jars$($all && echo ", untrimmed") ($dropped native" \
        "libraries of other platforms dropped)"
    echo "sizes (jars stored, runtime uncompressed): runtime $(mib "$dir/runtime"), lib $(mib "$dir/lib")" \
        "($(ls "$dir/lib" | wc -l) jars), spark/jars $(mib "$dir/spark/jars"), total $(mib "$dir")"
} >"$dir/bundle.txt"
if $pack; then
    mkdir -p "$parts"
    echo "spark-bundle: packing with xz -9 (a few minutes) ..." >&2
    (cd "$(dirname "$dir")" && tar -cf - "$(basename "$dir")" | xz -9 -T0 \
        | split -b "${part_mib}m" - "$parts/cuwire-spark.tar.xz.part-")
    cp "$root/build/spark-bundle/unpack" "$parts/"
    (cd "$parts" && sha256sum cuwire-spark.tar.xz.part-* >SHA256SUMS)
    {
        echo "parts (unpack DIR.parts [DEST], or: cat cuwire-spark.tar.xz.part-* | xz -dc | tar -xf -):"
        for p in "$parts"/cuwire-spark.tar.xz.part-*; do echo "  $(basename "$p") $(stat -c %s "$p") bytes"; done
    } | tee "$parts/PARTS.txt" >>"$dir/bundle.txt"
fi
cat "$dir/bundle.txt" >&2
