#!/bin/bash
# Simulated build-and-copy.sh, MID-2026 generation: the real script's flags and the shape of its
# output, driving the simulated docker. By default it pulls the prebuilt runner image and tags it
# as the image (-t/--tag, default vllm-node); --use-wheels or a rebuild flag builds it instead
# (`docker build -t <tag>`). -c copies the image to the peers (docker save, then docker load on
# each), -u names the ssh user. The early generation lives in test/sim/launcher-early/.
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
  CMD=(docker build -t "$IMAGE_TAG" --build-arg BUILD_JOBS=16 --build-context flashinfer_wheels=./.wheel-cache/flashinfer/regular --build-context vllm_wheels=./.wheel-cache/vllm/regular .)
  echo "Building runner image with command: ${CMD[*]}"
  SIM_BUILD_DELAY="$DELAY" "${CMD[@]}"
else
  echo "Using prebuilt runner image ${PREBUILT_RUNNER_IMAGE}..."
  SIM_PULL_DELAY="$DELAY" docker pull "$PREBUILT_RUNNER_IMAGE"
  if [ "$IMAGE_TAG" != "$PREBUILT_RUNNER_IMAGE" ]; then
    docker tag "$PREBUILT_RUNNER_IMAGE" "$IMAGE_TAG"
  fi
fi
if [ "${#COPY_HOSTS[@]}" -gt 0 ]; then
  echo "Checking image '$IMAGE_TAG' on ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
  for h in "${COPY_HOSTS[@]}"; do echo "Image '$IMAGE_TAG' not found on ${SSH_USER}@${h}; will copy."; done
  echo "Copying image '$IMAGE_TAG' to ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
  [ "$PARALLEL_COPY" = true ] && echo "Parallel copy enabled."
  TMP_IMAGE=$(mktemp -t vllm_image.XXXXXX)
  trap 'rm -f "$TMP_IMAGE"' EXIT
  echo "Saving image locally to $TMP_IMAGE..."
  docker save -o "$TMP_IMAGE" "$IMAGE_TAG"
  for h in "${COPY_HOSTS[@]}"; do
    echo "Loading image into ${SSH_USER}@${h}..."
    sleep "$DELAY"
    # The peer's docker (the sim reaches the peer's state directly instead of over ssh).
    if [ -n "${SIM_PEER_STATE:-}" ]; then SIM_STATE="$SIM_PEER_STATE" docker load -i "$TMP_IMAGE"; else echo "Loaded image: $IMAGE_TAG:latest"; fi
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
