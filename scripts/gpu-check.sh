#!/usr/bin/env bash
# The device check (docs/scale-out.md, "The device check").
#
#   bash scripts/gpu-check.sh pack    here, in the checkout the device call sends: writes .gpu-check/ (Node, dawn.node,
#                                     the bundled check, the PEFT fixture, the Vulkan loader; needs .webgpu/ installed)
#   bash scripts/gpu-check.sh run     on the device (carry .gpu-check): unpacks into /tmp, runs HF PEFT on the fixture
#                                     (scripts/peft-check.py, the device's python3) and the WebGPU check (bench/gpu-check.ts),
#                                     in under 8 minutes; the log and both JSON results go to $OUT when it is set
#
# Environment for `run`: GPU_CHECK_PACK (default .gpu-check), GPU_CHECK_WORK (default /tmp/sesa-gpu-check),
# GPU_CHECK_BUDGET (seconds the WebGPU check may start stages in, default 270), PYTHON (default python3),
# SESA_WEBGPU_FLAGS (Dawn's options, src/tensor/webgpu.ts). Exit: 0 when both parts ran and met their goals; the
# WebGPU check's code otherwise (1 a stage failed, 2 no adapter), else the PEFT check's (1 over the goal, 2 no torch).
set -uo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  pack)
    shift
    exec npx tsx scripts/gpu-check-pack.ts "$@"
    ;;
  run) ;;
  *)
    echo "usage: bash scripts/gpu-check.sh pack|run" >&2
    exit 64
    ;;
esac

pack="${GPU_CHECK_PACK:-.gpu-check}"
work="${GPU_CHECK_WORK:-/tmp/sesa-gpu-check}"
out="${OUT:-$work/out}"
budget="${GPU_CHECK_BUDGET:-270}"
python="${PYTHON:-python3}"
mkdir -p "$work" "$out"

run() {
if [ ! -f "$pack/manifest.json" ] || [ ! -f "$pack/node.gz" ] || [ ! -f "$pack/check.mjs" ]; then
  echo "gpu-check: no pack in $pack: run 'bash scripts/gpu-check.sh pack' in the checkout first, and carry .gpu-check"
  return 1
fi
started=$(date +%s)
echo "gpu-check.sh: $(uname -srm), pack $pack, work $work, results $out"

gunzip -c "$pack/node.gz" >"$work/node" && chmod +x "$work/node" || { echo "gpu-check: cannot unpack $pack/node.gz"; return 1; }
gunzip -c "$pack/dawn.node.gz" >"$work/dawn.node" || { echo "gpu-check: cannot unpack $pack/dawn.node.gz"; return 1; }
"$work/node" --version >/dev/null || { echo "gpu-check: the packed Node does not run here"; return 1; }

# Vulkan: the loader from the pack when the machine has none (unpacked under $work, never into /), and NVIDIA's
# driver manifest when the loader would not find it by itself.
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'; then
  deb="$(ls "$pack"/libvulkan1_*.deb 2>/dev/null | head -n 1)"
  if [ -n "$deb" ] && dpkg -x "$deb" "$work/vulkan"; then
    export LD_LIBRARY_PATH="$work/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "vulkan loader: $(basename "$deb") from the pack"
  else
    echo "vulkan loader: none on this machine and none usable in the pack"
  fi
fi
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$nvidia_icd" ]; then
  export VK_DRIVER_FILES="$nvidia_icd"
  echo "vulkan driver: $nvidia_icd"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'
fi

# 1. HF PEFT on the fixture (CPU or CUDA through torch; bounded, so it runs first).
peft_status=0
if command -v "$python" >/dev/null 2>&1; then
  timeout 120 "$python" scripts/peft-check.py --fixture "$pack/peft" --json "$out/peft-check.json"
  peft_status=$?
  [ "$peft_status" = 124 ] && echo "peft check: stopped after 120 s"
else
  echo "peft check: $python not found"
  peft_status=2
fi

# 2. The WebGPU check: the adapter, matMul rates, webgpu against wasm, the 0.6B-shaped rates.
timeout $((budget + 60)) "$work/node" "$pack/check.mjs" --dawn-node "$work/dawn.node" --peft-dir "$pack/peft" --json "$out/gpu-check.json" --budget "$budget"
check_status=$?
[ "$check_status" = 124 ] && echo "webgpu check: stopped after $((budget + 60)) s"

echo "gpu-check.sh: webgpu check exit $check_status, peft check exit $peft_status, $(($(date +%s) - started)) s"
if [ "$check_status" != 0 ]; then return "$check_status"; fi
return "$peft_status"
}

# The log goes to the terminal and to $out; the pipeline ends only when tee has written all of it.
run 2>&1 | tee "$out/gpu-check.log"
exit "${PIPESTATUS[0]}"
