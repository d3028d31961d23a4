#!/bin/bash
# Simulated build-and-copy.sh: the real script's flags and the shape of its output. By default it
# pulls the prebuilt runner image (docker pull lines); --use-wheels or a rebuild flag prints a
# BuildKit build instead. -c copies the image to the peers, -u names the ssh user.
set -e
IMAGE_TAG="vllm-node"
PREBUILT_RUNNER_IMAGE="eugr/spark-vllm:latest"
COPY_HOSTS=()
COPY_TO_FLAG=false
SSH_USER="$USER"
LOCAL_BUILD=false
PARALLEL_COPY=false
NO_BUILD=false
DELAY="${SIM_BUILD_DELAY:-0.05}"
while [[ "$#" -gt 0 ]]; do
  case $1 in
    -t|--tag) IMAGE_TAG="$2"; shift ;;
    --use-wheels|--rebuild-vllm|--rebuild-flashinfer) LOCAL_BUILD=true ;;
    --vllm-ref|--flashinfer-ref|--gpu-arch|-j|--build-jobs|--network|--config) LOCAL_BUILD=true; shift ;;
    -c|--copy-to|--copy-to-host|--copy-to-hosts)
      COPY_TO_FLAG=true
      shift
      while [[ "$#" -gt 0 && "$1" != -* ]]; do
        IFS=',' read -ra parts <<<"$1"
        for p in "${parts[@]}"; do [ -n "$p" ] && COPY_HOSTS+=("$p"); done
        shift
      done
      continue
      ;;
    -u|--user) SSH_USER="$2"; shift ;;
    --copy-parallel) PARALLEL_COPY=true ;;
    --no-build) NO_BUILD=true ;;
    *) echo "Unknown parameter passed: $1"; exit 1 ;;
  esac
  shift
done
if [ "$COPY_TO_FLAG" = true ] && [ "${#COPY_HOSTS[@]}" -eq 0 ]; then
  COPY_HOSTS=("${SIM_PEER_IP:-192.168.177.12}")
  echo "Autodiscovered hosts: ${COPY_HOSTS[*]}"
fi
# A test holds the build here (deterministic "while it runs" checks) until it removes the file.
while [ -f "$SIM_STATE/build_hold" ]; do sleep 0.05; done
if [ "$NO_BUILD" = true ]; then
  echo "Skipping build (--no-build specified)"
elif [ "$LOCAL_BUILD" = true ]; then
  echo "Building runner image with command: docker build -t $IMAGE_TAG --build-arg BUILD_JOBS=16 --build-context flashinfer_wheels=./.wheel-cache/flashinfer/regular --build-context vllm_wheels=./.wheel-cache/vllm/regular ."
  for i in 1 2 3 4 5 6 7 8; do
    echo "#$((i + 4)) [runner $i/8] RUN step $i"
    sleep "$DELAY"
    echo "#$((i + 4)) DONE $i.${i}s"
  done
  [ -f "$SIM_STATE/build_fails" ] && { echo "ERROR: failed to solve: process \"/bin/sh -c pip install vllm\" did not complete successfully: exit code: 1" >&2; exit 1; }
  echo "#13 exporting to image"
  echo "#13 naming to docker.io/library/$IMAGE_TAG:latest done"
else
  echo "Using prebuilt runner image ${PREBUILT_RUNNER_IMAGE}..."
  echo "latest: Pulling from eugr/spark-vllm"
  layers="3f4ca61aafcd 9c7d4a1b2e35 51a0c0e4f7b8 d2e8f1a3b4c5"
  for l in $layers; do echo "$l: Pulling fs layer"; done
  for l in $layers; do
    sleep "$DELAY"
    echo "$l: Download complete"
    [ -f "$SIM_STATE/build_fails" ] && { echo "failed to register layer: write /usr/local/lib/python3.12/dist-packages/vllm/_C.abi3.so: no space left on device" >&2; exit 1; }
    echo "$l: Pull complete"
  done
  echo "Digest: sha256:7e1b0f4c2d9a8b6e5f3c1a0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f"
  echo "Status: Downloaded newer image for ${PREBUILT_RUNNER_IMAGE}"
  echo "docker.io/${PREBUILT_RUNNER_IMAGE}"
fi
if [ "${#COPY_HOSTS[@]}" -gt 0 ]; then
  echo "Checking image '$IMAGE_TAG' on ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
  for h in "${COPY_HOSTS[@]}"; do echo "Image '$IMAGE_TAG' not found on ${SSH_USER}@${h}; will copy."; done
  echo "Copying image '$IMAGE_TAG' to ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
  [ "$PARALLEL_COPY" = true ] && echo "Parallel copy enabled."
  echo "Saving image locally to /tmp/vllm_image.sim0001..."
  for h in "${COPY_HOSTS[@]}"; do
    echo "Loading image into ${SSH_USER}@${h}..."
    sleep "$DELAY"
    echo "Loaded image: $IMAGE_TAG:latest"
    echo "Copy to $h completed in 00:00:01"
  done
  echo "Copy complete."
else
  echo "No host specified, skipping copy."
fi
echo ""
echo "========================================="
echo "         TIMING STATISTICS"
echo "========================================="
echo "Total Time:       00:00:02"
echo "========================================="
echo "Done preparing $IMAGE_TAG."
