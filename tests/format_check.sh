#!/usr/bin/env bash
# Fails when a C++ file of the project is not clang-formatted.
set -euo pipefail
cd "$1"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find framework costmodels searchers plugins tests -name '*.[ch]pp')
clang-format --dry-run -Werror "${files[@]}"
echo "${#files[@]} files formatted"
