#!/usr/bin/env bash
# The paper-scale training of the neural image model (Sec. 4) on one CUDA GPU, as one
# resumable, time-boxed command.
#
#   OUT=/some/folder scripts/gpu-paper-images.sh [SECONDS]
#
# Writes $OUT/paper/{state.pt,provenance.json,compare.pt,compare-eps.pt} and $OUT/{setup,train,compare}.log.
# The state is written atomically after every meta-iteration: a run cut off by the time box
# resumes when the same command runs again with the same $OUT/paper (copy it back first).
# Copy the finished folder to data/weights/paper to commit it; find_weights("auto") then
# prefers it over data/weights/demo.
set -uo pipefail
OUT=${OUT:?set OUT to the output folder}
BUDGET=${1:-470}            # seconds for everything below
START=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}. PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
CONFIG=${CONFIG:-paper}   # CONFIG=smoke DEVICE=cpu: the CPU test of this script
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT/paper"
{
  nvidia-smi -L || true
  $PY -c "import torch, numpy, skimage; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-', 'numpy', numpy.__version__, 'skimage', skimage.__version__)"
} 2>&1 | tee "$OUT/setup.log"

# 1. the paper recipe at tiny sizes on the GPU (seconds): a device bug shows here first
timeout 60 $PY -m cnce image-train --config smoke --device "$DEVICE" --out /tmp/smoke --work /tmp/smoke-work \
  --compare --no-progress 2>&1 | tail -20 | tee -a "$OUT/setup.log" || { echo "smoke failed"; exit 1; }

# 2. the paper-scale network, layers 1-4 (resumes from $OUT/paper/state.pt)
timeout $(( $(left) - 60 )) $PY -m cnce image-train --config "$CONFIG" --device "$DEVICE" --out "$OUT/paper" 2>&1 \
  | tr '\r' '\n' | grep -v '^$' | awk 'NR % 5 == 0 || /Error|error|Traceback|written/' | tee "$OUT/train.log"

# 3. Supp. D.2: CNCE vs NCE first layer (and CNCE from other starting eps), if time is left
if [ "$(left)" -gt 30 ]; then
  timeout $(( $(left) - 5 )) $PY -m cnce image-train --config "$CONFIG" --device "$DEVICE" --out "$OUT/paper" \
    --work /tmp/paper-work --compare --compare-eps 1.0 2.0 --no-progress 2>&1 | tail -20 | tee "$OUT/compare.log"
fi
$PY - "$OUT/paper" <<'EOF' 2>&1 | tee -a "$OUT/compare.log"
import sys, torch
s = torch.load(sys.argv[1] + "/state.pt", map_location="cpu", weights_only=False)
for k, h in s["history"].items():
    print(f"layer {k}: {len(h)} meta-iterations, {s['seconds'][k]:.1f} s, "
          f"{s['seconds'][k] / max(len(h), 1):.2f} s each, last loss {h[-1]['loss']:.4f}, eps {h[-1]['eps']:.3f}")
EOF
ls -la "$OUT/paper"
