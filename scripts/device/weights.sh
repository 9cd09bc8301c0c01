#!/usr/bin/env bash
# GPU evidence for real weights (docs/models.md): cnn-eval's logits against timm (convnext_tiny, convnext_tiny with
# 31x31 kernels, convmixer_768_32) and against bench/torch_models (RepLKNet-31B, SLaK-T, plus the cnn-export
# --reparam deploy form), 64 images, FP32 and AMP; then the dwconv tool on CUDA against its CPU result.
# Run from the repository root on the GPU machine; carry .device/bundle.tar.xz (scripts/device-bundle.sh).
# Writes $OUT/weights_logs.tgz (JSON lines, tool logs); prints the comparison table last. About 2-3 minutes.
set -u
out=${OUT:-/tmp/weights-out}
logs=/tmp/weights-logs
rm -rf "$logs"
mkdir -p "$logs" "$out"
trap 'tar -C /tmp -czf "$out/weights_logs.tgz" weights-logs' EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
# shellcheck disable=SC1091
source .device/bundle/env.sh
bin=$PWD/.device/bundle/bin
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
nvidia-smi -L > "$logs/nvidia-smi.txt" 2>&1
python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)' | tee "$logs/versions.txt"

# The dwconv tool on CUDA vs on the CPU (one op each, FP32, a 31x31 filter, stride 1 and 2).
python3 - "$logs" <<'PY' > "$logs/dwconv_tool.log" 2>&1
import sys, torch
from safetensors.torch import save_file
g = torch.Generator().manual_seed(0)
save_file({"x": torch.randn(2, 45, 38, 72, generator=g), "w": torch.randn(31, 31, 72, generator=g),
           "dy": torch.randn(2, 45, 38, 72, generator=g)}, sys.argv[1] + "/dwconv_in.safetensors")
save_file({"x": torch.randn(2, 45, 38, 72, generator=g), "w": torch.randn(7, 7, 72, generator=g),
           "dy": torch.randn(2, 23, 19, 72, generator=g)}, sys.argv[1] + "/dwconv_s2_in.safetensors")
PY
dw_status=0
extra() { case $1 in bdc) echo "--input-size 45,38" ;; bfc) echo "--filter-size $2,$2" ;; esac; }
for op in fwd bdc bfc; do
  for dev in cpu cuda; do
    # shellcheck disable=SC2046
    "$bin/dwconv" $op --in "$logs/dwconv_in.safetensors" --out "$logs/dw_${op}_$dev.safetensors" --padding 15,15,15,15 \
      $(extra $op 31) --device $dev >> "$logs/dwconv_tool.log" 2>&1 || dw_status=1
    # shellcheck disable=SC2046
    "$bin/dwconv" $op --in "$logs/dwconv_s2_in.safetensors" --out "$logs/dw2_${op}_$dev.safetensors" --stride 2,2 \
      --padding 3,3,3,3 $(extra $op 7) --device $dev >> "$logs/dwconv_tool.log" 2>&1 || dw_status=1
  done
done
# FP16 kernels (reported, not gated: FP16 inputs carry 2^-11 relative rounding).
"$bin/dwconv" fwd --in "$logs/dwconv_in.safetensors" --out "$logs/dw_fwd_f16.safetensors" --padding 15,15,15,15 \
  --dtype f16 --device cuda >> "$logs/dwconv_tool.log" 2>&1 || dw_status=1
"$bin/dwconv" bfc --in "$logs/dwconv_in.safetensors" --out "$logs/dw_bfc_f16ha.safetensors" --padding 15,15,15,15 \
  --filter-size 31,31 --dtype f16 --bfc-accum ha --device cuda >> "$logs/dwconv_tool.log" 2>&1 || dw_status=1
python3 - "$logs" <<'PY' >> "$logs/dwconv_tool.log" 2>&1 || dw_status=1
import sys, torch
from safetensors.torch import load_file
worst = 0.0
for pre in ("dw", "dw2"):
    for op, key in (("fwd", "y"), ("bdc", "dx"), ("bfc", "dw")):
        a = load_file(f"{sys.argv[1]}/{pre}_{op}_cpu.safetensors")[key]
        b = load_file(f"{sys.argv[1]}/{pre}_{op}_cuda.safetensors")[key]
        rel = ((a - b).abs().max() / a.abs().max()).item()
        worst = max(worst, rel)
        print(f"dwconv tool {pre} {op}: cuda vs cpu max rel diff {rel:.2e}")
for name, key, ref in (("dw_fwd_f16", "y", "dw_fwd_cpu"), ("dw_bfc_f16ha", "dw", "dw_bfc_cpu")):
    a = load_file(f"{sys.argv[1]}/{ref}.safetensors")[key]
    b = load_file(f"{sys.argv[1]}/{name}.safetensors")[key]
    print(f"dwconv tool {name} (not gated): vs cpu f32 max rel diff {((a - b).abs().max() / a.abs().max()).item():.2e}")
# FP32 sums of up to 961 (fwd/bdc) or 3420 (bfc) products in different orders: 1e-5 of the largest value.
sys.exit(0 if worst < 1e-5 else 1)
PY
echo "dwconv tool rc=$dw_status ${SECONDS}s"

timeout 240 python3 bench/check_weights_interop.py --bin "$bin" --work /tmp/weights-work 2>&1 | tee "$logs/interop.log"
rc=${PIPESTATUS[0]}
cp "$logs/interop.log" "$out/interop.log"
echo
echo "==== weights.sh summary (${SECONDS}s) ===="
grep -E "^dwconv tool" "$logs/dwconv_tool.log"
echo "dwconv tool rc=$dw_status; interop rc=$rc"
sed -n '/^model /,$p' "$logs/interop.log"
[ "$rc" -eq 0 ] && [ "$dw_status" -eq 0 ]
