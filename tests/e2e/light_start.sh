#!/usr/bin/env bash
# `mapex version` and `mapex evaluate --maestro` start without yaml-cpp,
# TBB, libmapex_io, Boost.ProgramOptions' shared library, HDF5 or MPI
# (issue 20: their mapping was about a seventh of a 66-layer run): neither
# the executable, libmapex nor the mdc plugin records them, and the loader
# opens none of them for those two commands. The other commands still load
# libmapex_cli.so (and through it the rest), which shows the loader's trace
# is read right.
set -euo pipefail
mapex="$1" case_dir="$2"
heavy='tbb|yaml|mapex_io|mapex_cli|mapex_store|boost_program_options|hdf5|mpi'
lib="$(dirname "$mapex")/../lib"
for f in "$mapex" "$lib/libmapex.so" "$lib/mapex/plugins/mdc.so"; do
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if echo "$needed" | grep -Eq "$heavy"; then
    echo "$f needs: $(echo "$needed" | grep -E "$heavy" | tr '\n' ' ')"; exit 1
  fi
done
# Nor does the executable carry Boost.ProgramOptions linked in (its option
# classes' type names would be in it, stripped or not): an evaluate line
# the plain reader declines goes to libmapex_cli.so.
if grep -aq '15program_options' "$mapex"; then
  echo "$mapex carries Boost.ProgramOptions"; exit 1
fi
# What evaluate --maestro maps is two segments per file, with packed
# relative relocations (-z noseparate-code, DT_RELR; framework/CMakeLists.txt).
for f in "$mapex" "$lib/libmapex.so" "$lib/mapex/plugins/mdc.so"; do
  segments=$(readelf -lW "$f" | grep -c '^ *LOAD')
  [ "$segments" -eq 2 ] || { echo "$f has $segments loadable segments, expected 2"; exit 1; }
  readelf -d "$f" | grep -q '(RELR)' || { echo "$f has no packed relative relocations"; exit 1; }
done
loaded() { LD_DEBUG=files "$mapex" "$@" 2>&1 >/dev/null | sed -n 's/.*file=\([^ ]*\).*/\1/p' | sort -u; }
for command in "version" \
    "evaluate --maestro $case_dir/mapping.m --hw $case_dir/hw.m --format csv"; do
  # shellcheck disable=SC2086
  files=$(loaded $command)
  echo "$files" | grep -q 'libmapex\.so' || { echo "no loader trace for '$command': $files"; exit 1; }
  if echo "$files" | grep -Eq "$heavy"; then
    echo "'mapex $command' loads: $(echo "$files" | grep -E "$heavy" | tr '\n' ' ')"; exit 1
  fi
done
loaded plugins | grep -q 'libmapex_cli\.so' || { echo "'mapex plugins' does not load libmapex_cli.so"; exit 1; }
# An evaluate line the executable does not read itself still runs (in
# libmapex_cli.so, which the loader's trace shows).
help=$(LD_DEBUG=files "$mapex" evaluate --help 2>&1)
echo "$help" | grep -q 'libmapex_cli\.so' || { echo "'mapex evaluate --help' does not load libmapex_cli.so"; exit 1; }
echo "$help" | grep -q -- '--maestro' || { echo "'mapex evaluate --help' lacks its options: $help"; exit 1; }
echo "version and evaluate --maestro start without the heavy libraries"
