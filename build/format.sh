#!/usr/bin/env bash
# Formats every Java source of the tree with the root pom's Spotless configuration (palantir-java-format, its import
# order, unused imports removed): what `mvn verify` (./cuwire test) checks and fails on.
#   build/format.sh           rewrites the files that are not formatted, then lists what changed (git diff --stat)
#   build/format.sh --check   changes nothing; fails, naming the files, where one is not formatted
# Extra arguments go to Maven (e.g. -o). It runs from any directory.
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"

goal=apply
if [[ "${1:-}" == --check ]]; then
    goal=check
    shift
fi

# A JDK 25 or newer: $JAVA_HOME, else the first under /usr/lib/jvm (as examples/consumer/run looks).
jdk=""
for java in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} /usr/lib/jvm/*/bin/java; do
    [[ -x "$java" ]] || continue
    version="$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
    if [[ "${version%%.*}" =~ ^[0-9]+$ && "${version%%.*}" -ge 25 ]]; then
        jdk="$(dirname "$(dirname "$java")")"
        break
    fi
done
[[ -n "$jdk" ]] || { echo "format: needs a JDK 25 or newer (JAVA_HOME or /usr/lib/jvm)" >&2; exit 1; }
export JAVA_HOME="$jdk"
command -v mvn >/dev/null || { echo "format: needs Maven 3.8 or newer on PATH" >&2; exit 1; }

# -N: the root project alone, where the configuration is (it covers every module, cuwire-onnx whether its profile is
# on or not, examples/consumer and build/*.java), so the modules need not be resolvable.
(cd "$root" && mvn -B -q -N "com.diffplug.spotless:spotless-maven-plugin:$goal" "$@")
if [[ "$goal" == apply ]] && git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" diff --stat -- '*.java' | tail -1
fi
