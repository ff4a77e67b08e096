#!/usr/bin/env bash
# Builds a plugin template against a mapex build tree with nothing but its
# own CMakeLists.txt, then checks that mapex lists it and evaluates with it.
set -euo pipefail
template="$1" mapex_build="$2" work="$3" mapex="$4" data="$5" cxx="$6"
rm -rf "$work"
cmake -S "$template" -B "$work" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -Dmapex_DIR="$mapex_build" >/dev/null
cmake --build "$work" >/dev/null
test -f "$work/ideal_compute.so"
listing=$(MAPEX_PLUGIN_PATH="$work" "$mapex" plugins)
abi=$("$mapex" version | sed -n 's/.*plugin ABI \([0-9]*\).*/\1/p')
echo "$listing" | grep -E "^\| ideal_compute \| costmodel \| 1\.0\.0 \| $abi \|" >/dev/null || {
  echo "template plugin not listed:"; echo "$listing"; exit 1; }
out=$(MAPEX_PLUGIN_PATH="$work" "$mapex" evaluate --workload "$data/tiny_net.yaml" --layer conv \
  --arch "$data/tiny_arch.yaml" --mapping "$data/tiny_conv_mapping.yaml" --costmodel ideal_compute \
  --format json)
echo "$out" | grep -q '"bound_by": "compute"' || { echo "unexpected output: $out"; exit 1; }
echo "template plugin built out of tree, listed and used"
