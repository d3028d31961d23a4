#!/bin/bash
# Simulated mod (Tandem's own stand-in for the launcher's mods/gpu-mem-util-gb): the real one patches
# vLLM's sources in the container to add --gpu-memory-utilization-gb; the stand-in vLLM reads the
# flags a mod added from $SIM_ROOTFS/.sim-vllm-flags (test/sim/container/python/vllm/engine/arg_utils.py).
set -euo pipefail
echo "--gpu-memory-utilization-gb float" >> "${SIM_ROOTFS:?}/.sim-vllm-flags"
echo "=====> You can now use --gpu-memory-utilization-gb to specify reserved memory in GiB"
