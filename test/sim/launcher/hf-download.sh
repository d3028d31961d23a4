#!/usr/bin/env bash
# Simulated launcher download script, shaped like the current upstream one (eugr/spark-vllm-docker
# hf-download.sh; facts in test/fixtures/downloads/README.md): the same flags (-c/--copy-to [hosts...],
# --copy-parallel, -u/--user, --config, -h) and messages; `uvx hf download` into
# ${HF_HOME:-$HOME/.cache/huggingface}/hub, then per peer
# `rsync -av --mkpath --progress "$model_dir" "${SSH_USER}@${host}:$HUB_PATH/"` — this node's hub path,
# SSH port 22. uvx and rsync are the sim's shims, which replay recorded output (test/sim/shims).
# Knobs (environment or a file of the same name in $SIM_STATE): download_bytes, download_steps,
# download_delay (see shims/uvx.mjs). Faults: hub_down, missing_repos, peer_unreachable.
set -e

HUB_PATH="${HF_HOME:-$HOME/.cache/huggingface}/hub"
COPY_HOSTS=()
SSH_USER="$USER"
PARALLEL_COPY=false

usage() {
    echo "Usage: $0 [OPTIONS] <model-name>"
    echo "  <model-name>                : HuggingFace model name (e.g., 'org/name')"
    echo "  -c, --copy-to [hosts]       : Copy the model. Omit hosts to use COPY_HOSTS from .env or autodiscovery."
    echo "      --copy-parallel         : With -c, copy to all resolved hosts concurrently."
    echo "  -u, --user <user>           : Username for ssh commands (default: \$USER)"
    echo "  --config <file>             : Path to .env configuration file"
    echo "  -h, --help                  : Show this help message"
    exit 1
}

copy_model_to_host() {
    local host="$1" model_name="$2" model_dir="$3" start t
    echo "Copying model '$model_name' to ${SSH_USER}@${host}..."
    start=$(date +%s)
    if rsync -av --mkpath --progress "$model_dir" "${SSH_USER}@${host}:$HUB_PATH/"; then
        t=$(( $(date +%s) - start ))
        printf "Copy to %s completed in %02d:%02d:%02d\n" "$host" $((t/3600)) $((t%3600/60)) $((t%60))
    else
        echo "Copy to $host failed."
        return 1
    fi
}

COPY_TO_FLAG=false
while [[ "$#" -gt 0 ]]; do
    case $1 in
        -c|--copy-to|--copy-to-host|--copy-to-hosts)
            COPY_TO_FLAG=true
            shift
            while [[ "$#" -gt 0 && "$1" != -* ]]; do
                IFS=',' read -ra parts <<< "$1"
                for p in "${parts[@]}"; do [ -n "$p" ] && COPY_HOSTS+=("$p"); done
                shift
            done
            continue ;;
        --copy-parallel) PARALLEL_COPY=true ;;
        -u|--user) SSH_USER="$2"; shift ;;
        --config) shift ;;
        -h|--help) usage ;;
        *)
            if [ -z "${MODEL_NAME:-}" ]; then MODEL_NAME="$1"; else echo "Error: Unknown parameter: $1"; usage; fi ;;
    esac
    shift
done

if [ -z "${MODEL_NAME:-}" ]; then echo "Error: Model name is required."; usage; fi
if [ "$COPY_TO_FLAG" = true ] && [ "${#COPY_HOSTS[@]}" -eq 0 ]; then
    echo "No hosts specified. Using autodiscovery..."
    COPY_HOSTS=("${SIM_PEER_IP:-192.168.177.12}")
    echo "Autodiscovered copy hosts: ${COPY_HOSTS[*]}"
fi

if ! command -v uvx &> /dev/null; then
    echo "Error: 'uvx' command not found."
    exit 1
fi

START_TIME=$(date +%s)
echo "Downloading model '$MODEL_NAME' using uvx..."
DOWNLOAD_START=$(date +%s)
if uvx hf download "$MODEL_NAME"; then
    DOWNLOAD_TIME=$(( $(date +%s) - DOWNLOAD_START ))
    printf "Download completed in %02d:%02d:%02d\n" $((DOWNLOAD_TIME/3600)) $((DOWNLOAD_TIME%3600/60)) $((DOWNLOAD_TIME%60))
else
    echo "Error: Failed to download model '$MODEL_NAME'."
    exit 1
fi

MODEL_DIR="$HUB_PATH/models--${MODEL_NAME%%/*}--${MODEL_NAME##*/}"
echo "Model directory: $MODEL_DIR"

COPY_TIME=0
if [ "${#COPY_HOSTS[@]}" -gt 0 ]; then
    echo ""
    echo "Copying model to ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
    [ "$PARALLEL_COPY" = true ] && echo "Parallel copy enabled."
    COPY_START=$(date +%s)
    if [ "$PARALLEL_COPY" = true ]; then
        PIDS=()
        for host in "${COPY_HOSTS[@]}"; do
            copy_model_to_host "$host" "$MODEL_NAME" "$MODEL_DIR" &
            PIDS+=($!)
        done
        COPY_FAILURE=0
        for pid in "${PIDS[@]}"; do wait "$pid" || COPY_FAILURE=1; done
        if [ "$COPY_FAILURE" -ne 0 ]; then echo "One or more copies failed."; exit 1; fi
    else
        for host in "${COPY_HOSTS[@]}"; do copy_model_to_host "$host" "$MODEL_NAME" "$MODEL_DIR"; done
    fi
    COPY_TIME=$(( $(date +%s) - COPY_START ))
    echo ""
    echo "Copy complete."
else
    echo "No host specified, skipping copy."
fi

TOTAL_TIME=$(( $(date +%s) - START_TIME ))
echo ""
echo "========================================="
echo "         TIMING STATISTICS"
echo "========================================="
echo "Download:   $(printf '%02d:%02d:%02d' $((DOWNLOAD_TIME/3600)) $((DOWNLOAD_TIME%3600/60)) $((DOWNLOAD_TIME%60)))"
[ "$COPY_TIME" -gt 0 ] && echo "Copy:      $(printf '%02d:%02d:%02d' $((COPY_TIME/3600)) $((COPY_TIME%3600/60)) $((COPY_TIME%60)))"
echo "Total:     $(printf '%02d:%02d:%02d' $((TOTAL_TIME/3600)) $((TOTAL_TIME%3600/60)) $((TOTAL_TIME%60)))"
echo "========================================="
echo "Done downloading $MODEL_NAME."
