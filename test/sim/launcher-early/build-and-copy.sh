#!/bin/bash
# Simulated build-and-copy.sh, EARLY-2026 generation: no prebuilt image yet, the default is a
# build from source (`docker build -t <tag> … .`); -t/--tag names the image, -c copies it to the
# peers (docker save, then docker load on each), -u names the ssh user, --no-build only copies.
set -e
IMAGE_TAG="vllm-node"
COPY_HOSTS=()
SSH_USER="$USER"
NO_BUILD=false
PARALLEL_COPY=false
USE_WHEELS_MODE=""
BUILD_ARGS=()
while [[ "$#" -gt 0 ]]; do
    case $1 in
        -t|--tag) IMAGE_TAG="$2"; shift ;;
        --rebuild-deps|--rebuild-vllm|--pre-flashinfer|--pre-tf|--pre-transformers) ;;
        --triton-ref|--vllm-ref) BUILD_ARGS+=("--build-arg" "${1#--}=$2"); shift ;;
        -j|--build-jobs) BUILD_ARGS+=("--build-arg" "BUILD_JOBS=$2"); shift ;;
        --use-wheels)
            if [[ -n "${2:-}" && "$2" != -* ]]; then USE_WHEELS_MODE="$2"; shift; else USE_WHEELS_MODE="nightly"; fi
            ;;
        -c|--copy-to|--copy-to-host|--copy-to-hosts)
            shift
            while [[ "$#" -gt 0 && "$1" != -* ]]; do
                IFS=',' read -ra parts <<<"$1"
                for p in "${parts[@]}"; do [ -n "$p" ] && COPY_HOSTS+=("$p"); done
                shift
            done
            if [ "${#COPY_HOSTS[@]}" -eq 0 ]; then
                echo "No hosts specified. Using autodiscovery..."
                COPY_HOSTS=("${SIM_PEER_IP:-192.168.177.12}")
                echo "Autodiscovered hosts: ${COPY_HOSTS[*]}"
            fi
            continue
            ;;
        -u|--user) SSH_USER="$2"; shift ;;
        --copy-parallel) PARALLEL_COPY=true ;;
        --no-build) NO_BUILD=true ;;
        -h|--help) echo "Usage: $0 [-t <tag>] [-c <hosts>] [-u <user>] [--use-wheels [mode]] [--no-build]"; exit 1 ;;
        *) echo "Unknown parameter passed: $1"; exit 1 ;;
    esac
    shift
done
if [ "$NO_BUILD" = true ] && [ "${#COPY_HOSTS[@]}" -eq 0 ]; then
    echo "Error: --no-build requires --copy-to to be specified"
    exit 1
fi
# A test holds the build here (deterministic "while it runs" checks) until it removes the file.
while [ -f "$SIM_STATE/build_hold" ]; do sleep 0.05; done
if [ "$NO_BUILD" = false ]; then
    CMD=(docker build -t "$IMAGE_TAG")
    if [ -n "$USE_WHEELS_MODE" ]; then
        echo "Using pre-built vLLM wheels (mode: $USE_WHEELS_MODE)"
        CMD+=(-f Dockerfile.wheels)
    else
        echo "Building vLLM from source"
    fi
    CMD+=("${BUILD_ARGS[@]}" .)
    echo "Building image with command: ${CMD[*]}"
    SIM_BUILD_DELAY="${SIM_BUILD_DELAY:-0.05}" "${CMD[@]}"
else
    echo "Skipping build (--no-build specified)"
fi
if [ "${#COPY_HOSTS[@]}" -gt 0 ]; then
    echo "Copying image '$IMAGE_TAG' to ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
    [ "$PARALLEL_COPY" = true ] && echo "Parallel copy enabled."
    TMP_IMAGE=$(mktemp -t vllm_image.XXXXXX)
    trap 'rm -f "$TMP_IMAGE"' EXIT
    echo "Saving image locally to $TMP_IMAGE..."
    docker save -o "$TMP_IMAGE" "$IMAGE_TAG"
    for h in "${COPY_HOSTS[@]}"; do
        echo "Loading image into ${SSH_USER}@${h}..."
        # The peer's docker (the sim reaches the peer's state directly instead of over ssh).
        if [ -n "${SIM_PEER_STATE:-}" ]; then SIM_STATE="$SIM_PEER_STATE" docker load -i "$TMP_IMAGE"; else docker load -i "$TMP_IMAGE" >/dev/null; fi
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
echo "Total Time:    00:00:02"
echo "========================================="
echo "Done building $IMAGE_TAG."
