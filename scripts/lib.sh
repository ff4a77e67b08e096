#!/usr/bin/env bash
# Shared set-up for scripts/run and scripts/test: install the Debian packages
# mapex needs when any is missing, then configure and build.
set -euo pipefail

MAPEX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAPEX_PACKAGES=(
  cmake ninja-build g++ pkg-config
  libboost-program-options-dev libboost-filesystem-dev libtbb-dev
  libhdf5-dev hdf5-tools libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format python3 python3-h5py python3-numpy python3-pandas python3-matplotlib
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-dev python3-onnx python3-yaml
)

mapex_install_dependencies() {
  local missing=()
  for pkg in "${MAPEX_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "mapex: installing ${missing[*]}" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "mapex: missing packages (${missing[*]}) and neither root nor sudo; install them and retry" >&2
      exit 2
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# mapex_build BUILD_DIR [extra cmake args...]
mapex_build() {
  local build_dir="$1"
  shift
  cmake -S "$MAPEX_ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  # Two cores, 24 GiB: at most two compilers at a time.
  cmake --build "$build_dir" --parallel "${MAPEX_JOBS:-2}"
}
