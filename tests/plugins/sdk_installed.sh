#!/usr/bin/env bash
# Installs mapex into a fresh prefix, builds both plugin templates against
# that prefix alone (no build tree named anywhere), and uses them through
# the installed `mapex`: listed, evaluating, searching, and the search the
# same at one and two threads.
set -euo pipefail
src="$1" build="$2" work="$3" data="$4" cxx="$5"
prefix="$work/prefix"
rm -rf "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/mapex lib/cmake/mapex/mapexConfig.cmake lib/cmake/mapex/mapexConfigVersion.cmake \
         lib/cmake/mapex/MapexPlugin.cmake lib/cmake/mapex/mapexTargets.cmake \
         include/mapex/plugin.hpp lib/mapex/plugins/mdc.so lib/mapex/plugins/marvel.so; do
  test -e "$prefix/$f" || { echo "not installed: $f"; exit 1; }
done
if ls "$prefix/lib/mapex/plugins" | grep -q -e broken_abi -e failing_searcher; then
  echo "test plugins were installed:"; ls "$prefix/lib/mapex/plugins"; exit 1
fi
mapex="$prefix/bin/mapex"
# The installed binary runs on the installed core library.
core=$(realpath -m "$(ldd "$mapex" | sed -n 's/.*libmapex\.so[^ ]* => \([^ ]*\).*/\1/p')")
case "$core" in "$prefix"/lib/*) ;; *) echo "installed mapex loads the core from '$core'"; exit 1;; esac

for t in costmodel searcher; do
  # No CMAKE_BUILD_TYPE: the templates must default to Release.
  cmake -S "$src/plugins/templates/$t" -B "$work/$t" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$work/$t/CMakeCache.txt" ||
    { echo "template $t does not default to Release"; exit 1; }
  found=$(sed -n 's/^mapex_DIR:PATH=//p' "$work/$t/CMakeCache.txt")
  [ "$found" = "$prefix/lib/cmake/mapex" ] || { echo "template $t found mapex at '$found'"; exit 1; }
  cmake --build "$work/$t" >/dev/null
done
export MAPEX_PLUGIN_PATH="$work/costmodel:$work/searcher"
listing=$("$mapex" plugins)
for p in "ideal_compute | costmodel" "order_descent | searcher" "mdc | costmodel"; do
  echo "$listing" | grep -q "^| $p |" || { echo "not listed: $p"; echo "$listing"; exit 1; }
done
out=$("$mapex" evaluate --workload "$data/tiny_net.yaml" --layer conv --arch "$data/tiny_arch.yaml" \
  --mapping "$data/tiny_conv_mapping.yaml" --costmodel ideal_compute --format json)
echo "$out" | grep -q '"bound_by": "compute"' || { echo "unexpected evaluation: $out"; exit 1; }
search() {
  "$mapex" search --workload "$data/tiny_net.yaml" --layer conv --arch "$data/tiny_arch.yaml" \
    --searcher order_descent --param restarts=3 --costmodel roofline --seed 7 \
    --max-evaluations 400 --format json -j "$1"
}
one=$(search 1)
two=$(search 2)
echo "$one" | grep -q '"latency_cycles"' || { echo "unexpected search: $one"; exit 1; }
strip() { grep -v -e seconds -e '"threads"'; }
[ "$(echo "$one" | strip)" = "$(echo "$two" | strip)" ] ||
  { echo "order_descent differs at 1 and 2 threads"; diff <(echo "$one" | strip) <(echo "$two" | strip); exit 1; }
echo "installed SDK: both templates built against $prefix alone, listed and used"
