#!/usr/bin/env bash
# Run the authors' public MATLAB code (https://github.com/ciwanceylan/CNCE-matlab) under GNU
# Octave with this project's drivers, and record the results with their provenance.
#
#   scripts/authors_code/run.sh CHECKOUT OUTDIR [AUTHORS_COMMIT [EXPERIMENT ...]]
#
# CHECKOUT: a checkout of their repository (nothing of it is copied into this one); its commit
# is read with git, or given as AUTHORS_COMMIT ("-": read it with git) when CHECKOUT is an
# exported tree. EXPERIMENT: "ring" (scripts/authors_code/ring_nce.m: their NCE on their ring
# model, with fminunc and with their minimize) and/or "ica" (scripts/authors_code/ica_mle.m:
# their ICA maximum likelihood against the optimum of the same likelihood); default both.
# Each writes OUTDIR/EXPERIMENT/ with its JSON output and provenance.json (this repository's
# commit and whether its drivers were clean, Octave's version, their commit). Needs octave-cli
# (Debian: apt-get install octave).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 CHECKOUT OUTDIR [AUTHORS_COMMIT [EXPERIMENT ...]]" >&2
  exit 2
fi
checkout=$(cd "$1" && pwd)
outroot=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ ! -f "$checkout/matlab/synthetic_data/bin/estimation/nce_loss.m" ]; then
  echo "$0: CHECKOUT must be a checkout of CNCE-matlab; $checkout has no matlab/synthetic_data/bin" >&2
  exit 2
fi
authors=${3:--}
if [ "$authors" = "-" ]; then
  authors=$(git -C "$checkout" rev-parse HEAD 2>/dev/null || echo unknown)
fi
shift $(( $# < 3 ? $# : 3 ))
experiments=${*:-ring ica}
S=100
for exp in $experiments; do
  outdir="$outroot/$exp"
  mkdir -p "$outdir"
  outdir=$(cd "$outdir" && pwd)
  case $exp in
    ring)
      for alg in fminunc minimize; do
        octave-cli --no-gui --eval "addpath('$here'); ring_nce('$checkout', '$outdir/ring-nce-$alg.json', $S, [100 500 1000 5000 10000 20000], 10, '$alg')"
      done ;;
    ica)
      octave-cli --no-gui --eval "addpath('$here'); ica_mle('$checkout', '$outdir/ica-mle.json', $S, [1000 20000])" ;;
    *)
      echo "$0: EXPERIMENT must be ring or ica; got $exp" >&2
      exit 2 ;;
  esac
  commit=$(git -C "$root" rev-parse HEAD)
  dirty=$(test -z "$(git -C "$root" status --porcelain -- scripts/authors_code)" && echo false || echo true)
  octave_version=$(octave-cli --no-gui --eval "disp(version())" | tail -1)
  cat > "$outdir/provenance.json.part" <<JSON
{"project_commit": "$commit", "drivers_dirty": $dirty, "authors_repository": "https://github.com/ciwanceylan/CNCE-matlab",
 "authors_commit": "$authors", "octave": "$octave_version", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "scripts/authors_code/run.sh CHECKOUT OUTDIR AUTHORS_COMMIT $exp"}
JSON
  mv "$outdir/provenance.json.part" "$outdir/provenance.json"
done
