#!/bin/bash
# Simulated build-and-copy: builds the image and copies it to the peer nodes.
IMAGE="vllm-node"
COPY_HOSTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    -t) IMAGE="$2"; shift ;;
    -c|--copy-to) if [ -n "$2" ] && [[ "$2" != -* ]]; then COPY_HOSTS="$2"; shift; else COPY_HOSTS="${SIM_PEER_IP:-192.168.177.12}"; fi ;;
    --use-wheels|--vllm-ref) shift ;;
    *) echo "Unknown argument: $1" >&2; exit 1 ;;
  esac
  shift
done
[ -f "$SIM_STATE/build_fails" ] && { echo "ERROR: failed to solve: process \"/bin/sh -c pip install vllm\" did not complete successfully: exit code: 1" >&2; exit 1; }
echo "Building $IMAGE..."
for i in 1 2 3 4 5; do echo "#$((i+3)) [$i/5] RUN step $i"; sleep "${SIM_BUILD_DELAY:-0.1}"; echo "#$((i+3)) DONE $i.${i}s"; done
echo "#9 exporting to image"
echo "#9 naming to docker.io/library/$IMAGE:latest done"
if [ -n "$COPY_HOSTS" ]; then
  IFS=',' read -r -a hosts <<<"$COPY_HOSTS"
  for h in "${hosts[@]}"; do echo "Copying image $IMAGE to $h..."; sleep "${SIM_BUILD_DELAY:-0.1}"; echo "Loaded image: $IMAGE:latest"; done
fi
echo "Build complete."
