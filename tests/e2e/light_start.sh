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
echo "version and evaluate --maestro start without the heavy libraries"
