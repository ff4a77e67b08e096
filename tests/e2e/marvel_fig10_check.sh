#!/usr/bin/env bash
# Runs the Fig. 10 study quickly and checks the table it prints.
set -euo pipefail
out=$(/usr/bin/python3 "$1" --quick)
echo "$out"
for row in original offchip_decoupled onchip_decoupled offchip_pruned onchip_pruned; do
  grep -q "^| $row | [0-9]" <<<"$out" || { echo "missing row $row"; exit 1; }
done
# Off-chip after pruning: the paper's range is 9.9e5 .. 6.3e8; the maximum
# here must be of the same order as the paper's.
max=$(grep "^| offchip_pruned |" <<<"$out" | awk -F'|' '{print $5}')
/usr/bin/python3 -c "import sys; v=float('$max'); sys.exit(0 if 6.3e7 <= v <= 6.3e9 else 1)" \
  || { echo "offchip_pruned max $max is not within 10x of the paper's 6.3e8"; exit 1; }
