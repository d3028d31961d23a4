#!/usr/bin/env bash
# Simulated launcher download script: the upstream flags (-c/--copy-to [hosts...], --copy-parallel,
# -u/--user, --config, -h) and its output; the hub CLI's tqdm bars on stderr, then rsync --progress
# lines while copying to the peer. Writes real files of a small declared size into the hub cache.
# Knobs (environment or a file of the same name in $SIM_STATE): download_bytes (model size, default
# 8 MiB), download_steps (bar redraws per shard), download_delay (seconds per redraw).
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

knob() { local v="${!1:-}"; [ -z "$v" ] && [ -f "$SIM_STATE/$2" ] && v=$(cat "$SIM_STATE/$2"); echo "${v:-$3}"; }
MODEL_BYTES=$(knob SIM_MODEL_BYTES download_bytes 8388608)
STEPS=$(knob SIM_DOWNLOAD_STEPS download_steps 10)
DELAY=$(knob SIM_DOWNLOAD_DELAY download_delay 0.1)
SNAPSHOT="${SIM_SNAPSHOT:-5f0b02c75b57c5855da9ae460ce51323ea669d8a}"

START_TIME=$(date +%s)
echo "Downloading model '$MODEL_NAME' using uvx..."

# --- what `uvx hf download` does: tqdm bars on stderr, the snapshot path on stdout ---
hf_download() {
    if [[ ! "$MODEL_NAME" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
        echo "huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' are forbidden: '$MODEL_NAME'." >&2
        return 1
    fi
    if [ -f "$SIM_STATE/hub_down" ]; then
        echo "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models/$MODEL_NAME/revision/main\"))" >&2
        return 1
    fi
    if [ -f "$SIM_STATE/missing_repos" ] && grep -qx "$MODEL_NAME" "$SIM_STATE/missing_repos"; then
        echo "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: https://huggingface.co/api/models/$MODEL_NAME/revision/main." >&2
        return 1
    fi
    local name="models--${MODEL_NAME//\//--}" dest
    dest="$HUB_PATH/$name/snapshots/$SNAPSHOT"
    mkdir -p "$dest" "$HUB_PATH/$name/refs" "$HUB_PATH/$name/blobs"
    echo "$SNAPSHOT" > "$HUB_PATH/$name/refs/main"
    local n=4 shard=$(( MODEL_BYTES / 2 ))
    # tqdm's format_sizeof (powers of 1000, three significant digits) and clock (MM:SS).
    size() { awk -v b="$1" 'BEGIN{ split(",k,M,G,T",u,","); i=1; while (b>=999.5 && i<5) { b/=1000; i++ } if (b<9.995) f="%.2f"; else if (b<99.95) f="%.1f"; else f="%.0f"; printf f "%s", b, u[i] }'; }
    clk() { printf '%02d:%02d' $(( $1 / 60 )) $(( $1 % 60 )); }
    local shards=(model-00001-of-00002.safetensors model-00002-of-00002.safetensors)
    fetch_bar() {
        printf '\rFetching %d files: %3d%%|%s| %d/%d [%s<00:00, 1.00it/s]' "$n" $(( 100 * $1 / n )) \
            "$(printf '%*s' $(( 10 * $1 / n )) '' | sed 's/ /█/g')$(printf '%*s' $(( 10 - 10 * $1 / n )) '')" "$1" "$n" "$(clk "$1")" >&2
    }
    printf 'Fetching %d files:   0%%|          | 0/%d [00:00<?, ?it/s]' "$n" "$n" >&2
    echo '{"architectures":["SimForCausalLM"],"model_type":"sim","num_hidden_layers":24}' > "$dest/config.json"
    echo '{"version":"1.0"}' > "$dest/tokenizer.json"
    fetch_bar 2
    # The hub CLI fetches files in parallel: the shard bars advance together, stacked (cursor up between).
    local s rate=$(( shard / STEPS * 10 )) bar done_b pct bars f k
    for s in $(seq 0 "$STEPS"); do
        done_b=$(( shard * s / STEPS )); pct=$(( 100 * s / STEPS )); bars=$(( pct / 10 ))
        bar=$(printf '%*s' "$bars" '' | sed 's/ /█/g')$(printf '%*s' $((10 - bars)) '')
        k=0
        for f in "${shards[@]}"; do
            k=$((k + 1))
            printf '\n' >&2
            if [ "$s" = 0 ]; then
                printf '\r%s: %3d%%|%s| %s/%s [00:00<?, ?B/s]' "$f" 0 "$bar" "$(size 0)" "$(size "$shard")" >&2
            else
                printf '\r%s: %3d%%|%s| %s/%s [%s<%s, %sB/s]' "$f" "$pct" "$bar" "$(size "$done_b")" "$(size "$shard")" \
                    "$(clk "$s")" "$(clk $((STEPS - s)))" "$(size "$rate")" >&2
            fi
            head -c "$done_b" /dev/zero > "$HUB_PATH/$name/blobs/$f.incomplete"
        done
        printf '\033[A\033[A' >&2
        sleep "$DELAY"
    done
    for f in "${shards[@]}"; do mv "$HUB_PATH/$name/blobs/$f.incomplete" "$dest/$f"; done
    printf '\n\n' >&2
    fetch_bar "$n"
    printf '\n' >&2
    echo "$dest"
}

DOWNLOAD_START=$(date +%s)
if hf_download; then
    DOWNLOAD_TIME=$(( $(date +%s) - DOWNLOAD_START ))
    printf "Download completed in %02d:%02d:%02d\n" $((DOWNLOAD_TIME/3600)) $((DOWNLOAD_TIME%3600/60)) $((DOWNLOAD_TIME%60))
else
    echo "Error: Failed to download model '$MODEL_NAME'."
    exit 1
fi

MODEL_DIR="$HUB_PATH/models--${MODEL_NAME%%/*}--${MODEL_NAME##*/}"
echo "Model directory: $MODEL_DIR"

# --- what `rsync -av --mkpath --progress` prints (lines end in \r\n, redraws in \r) ---
copy_model_to_host() {
    local host="$1"
    echo "Copying model '$MODEL_NAME' to ${SSH_USER}@${host}..."
    local start; start=$(date +%s)
    if [ -z "${SIM_PEER_HOME:-}" ] || [ -f "$SIM_STATE/peer_unreachable" ]; then
        echo "ssh: connect to host $host port 22: No route to host" >&2
        echo "rsync: connection unexpectedly closed (0 bytes received so far) [sender]" >&2
        echo "rsync error: unexplained error (code 255) at io.c(232) [sender=3.2.7]" >&2
        echo "Copy to $host failed."
        return 1
    fi
    local peer="$SIM_PEER_HOME/.cache/huggingface/hub" base rel sz total=0 k=0 count
    base=$(basename "$MODEL_DIR")
    mkdir -p "$peer"
    printf 'sending incremental file list\r\n%s/\r\n' "$base"
    count=$(find "$MODEL_DIR" -type f | wc -l)
    while IFS= read -r rel; do
        k=$((k + 1))
        sz=$(stat -c %s "$MODEL_DIR/$rel")
        total=$((total + sz))
        printf '%s/%s\r\n' "$base" "$rel"
        for p in 0 50; do
            printf '\r %14s %3d%%   58.61MB/s    0:00:%02d  ' "$(printf "%'d" $((sz * p / 100)))" "$p" $(( (100 - p) / 50 ))
            sleep "$DELAY"
        done
        printf '\r %14s 100%%   58.61MB/s    0:00:01 (xfr#%d, to-chk=%d/%d)\r\n' "$(printf "%'d" "$sz")" "$k" $((count - k)) "$count"
    done < <(cd "$MODEL_DIR" && find . -type f | sed 's|^\./||' | sort)
    cp -a "$MODEL_DIR" "$peer/"
    printf '\r\nsent %s bytes  received 132 bytes  51,824,701.29 bytes/sec\r\n' "$(printf "%'d" "$total")"
    printf 'total size is %s  speedup is 1.00\r\n' "$(printf "%'d" "$total")"
    local t=$(( $(date +%s) - start ))
    printf "Copy to %s completed in %02d:%02d:%02d\n" "$host" $((t/3600)) $((t%3600/60)) $((t%60))
}

COPY_TIME=0
if [ "${#COPY_HOSTS[@]}" -gt 0 ]; then
    echo ""
    echo "Copying model to ${#COPY_HOSTS[@]} host(s): ${COPY_HOSTS[*]}"
    [ "$PARALLEL_COPY" = true ] && echo "Parallel copy enabled."
    COPY_START=$(date +%s)
    for host in "${COPY_HOSTS[@]}"; do copy_model_to_host "$host" || { echo "One or more copies failed."; exit 1; }; done
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
