#!/usr/bin/env bash
# Run the authors' public MATLAB code (https://github.com/ciwanceylan/CNCE-matlab) under GNU
# Octave with this project's drivers, and record the results with their provenance.
#
#   scripts/authors_code/run.sh CHECKOUT OUTDIR [AUTHORS_COMMIT]
#
# CHECKOUT: a checkout of their repository (nothing of it is copied into this one); its commit
# is read with git, or given as AUTHORS_COMMIT when CHECKOUT is an exported tree. OUTDIR gets
# ring-nce-fminunc.json and ring-nce-minimize.json (scripts/authors_code/ring_nce.m) and
# provenance.json (this repository's commit and whether its tree was clean, Octave's version,
# their commit). Needs octave-cli (Debian: apt-get install octave).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 CHECKOUT OUTDIR [AUTHORS_COMMIT]" >&2
  exit 2
fi
checkout=$(cd "$1" && pwd)
outdir=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ ! -f "$checkout/matlab/synthetic_data/bin/estimation/nce_loss.m" ]; then
  echo "$0: CHECKOUT must be a checkout of CNCE-matlab; $checkout has no matlab/synthetic_data/bin" >&2
  exit 2
fi
authors=${3:-$(git -C "$checkout" rev-parse HEAD 2>/dev/null || echo unknown)}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
S=100
NS="[100 500 1000 5000 10000 20000]"
for alg in fminunc minimize; do
  octave-cli --no-gui --eval "addpath('$here'); ring_nce('$checkout', '$outdir/ring-nce-$alg.json', $S, $NS, 10, '$alg')"
done
commit=$(git -C "$root" rev-parse HEAD)
dirty=$(test -z "$(git -C "$root" status --porcelain -- scripts/authors_code)" && echo false || echo true)
octave_version=$(octave-cli --no-gui --eval "disp(version())" | tail -1)
cat > "$outdir/provenance.json.part" <<JSON
{"project_commit": "$commit", "drivers_dirty": $dirty, "authors_repository": "https://github.com/ciwanceylan/CNCE-matlab",
 "authors_commit": "$authors", "octave": "$octave_version", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "scripts/authors_code/run.sh CHECKOUT OUTDIR"}
JSON
mv "$outdir/provenance.json.part" "$outdir/provenance.json"
