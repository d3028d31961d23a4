#!/bin/bash
# Simulated launcher download script: same flags and output style as the upstream one
# (hf download progress bars, then rsync to the peer nodes).
set -e
COPY_HOSTS=""
COPY=0
PARALLEL=0
REPO=""
while [ $# -gt 0 ]; do
  case "$1" in
    -c|--copy-to)
      COPY=1
      if [ -n "$2" ] && [[ "$2" != -* ]] && [[ "$2" != */* ]]; then COPY_HOSTS="$2"; shift; fi ;;
    --copy-parallel) PARALLEL=1 ;;
    -h|--help) echo "Usage: $0 [-c [host1,host2,...]] [--copy-parallel] <model-repo>"; exit 0 ;;
    -*) echo "Unknown option: $1" >&2; exit 1 ;;
    *) REPO="$1" ;;
  esac
  shift
done
[ -z "$REPO" ] && { echo "Error: model repository is required" >&2; echo "Usage: $0 [-c [host1,host2,...]] [--copy-parallel] <model-repo>" >&2; exit 1; }
if [[ ! "$REPO" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then echo "Error: invalid repository id '$REPO'" >&2; exit 1; fi
if [ -f "$SIM_STATE/hub_down" ]; then echo "Error: could not reach the model hub (connection refused)" >&2; exit 1; fi
if [ -f "$SIM_STATE/missing_repos" ] && grep -qx "$REPO" "$SIM_STATE/missing_repos"; then
  echo "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: https://huggingface.co/api/models/$REPO/revision/main." >&2; exit 1
fi
NAME="models--${REPO//\//--}"
CACHE="$HOME/.cache/huggingface/hub"
DEST="$CACHE/$NAME/snapshots/${SIM_SNAPSHOT:-5f0b02c75b57c5855da9ae460ce51323ea669d8a}"
mkdir -p "$DEST" "$CACHE/$NAME/refs"
echo "${SIM_SNAPSHOT:-5f0b02c75b57c5855da9ae460ce51323ea669d8a}" > "$CACHE/$NAME/refs/main"
echo "Downloading model $REPO..."
SHARD=$(( ${SIM_MODEL_BYTES:-8388608} / 2 ))
STEPS=${SIM_DOWNLOAD_STEPS:-10}
DELAY=${SIM_DOWNLOAD_DELAY:-0.15}
files=(config.json tokenizer.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors)
printf 'Fetching %d files:   0%%|          | 0/%d [00:00<?, ?it/s]\n' "${#files[@]}" "${#files[@]}"
human() { awk -v b="$1" 'BEGIN{ if (b>=1e9) printf "%.2fG", b/1e9; else if (b>=1e6) printf "%.1fM", b/1e6; else if (b>=1e3) printf "%.0fk", b/1e3; else printf "%d", b }'; }
n=0
for f in "${files[@]}"; do
  n=$((n+1))
  case "$f" in
    *.safetensors)
      total=$SHARD
      for s in $(seq 1 "$STEPS"); do
        done_b=$(( total * s / STEPS ))
        pct=$(( 100 * s / STEPS ))
        bars=$(( pct / 10 ))
        bar=$(printf '%*s' "$bars" '' | tr ' ' '#')$(printf '%*s' $((10 - bars)) '')
        printf '\r%s: %3d%%|%s| %s/%s [00:%02d<00:%02d, %sB/s]' "$f" "$pct" "$bar" "$(human "$done_b")" "$(human "$total")" "$s" $((STEPS - s)) "$(human $((total / STEPS * 7)))"
        sleep "$DELAY"
      done
      printf '\n'
      head -c "$total" /dev/zero > "$DEST/$f" ;;
    config.json) echo '{"architectures":["SimForCausalLM"],"model_type":"sim"}' > "$DEST/$f" ;;
    *) echo '{"version":"1.0"}' > "$DEST/$f" ;;
  esac
  printf 'Fetching %d files: %3d%%|##########| %d/%d [00:%02d<00:00, 1.00it/s]\n' "${#files[@]}" $(( 100 * n / ${#files[@]} )) "$n" "${#files[@]}" "$n"
done
echo "$DEST"
echo "Download complete: $REPO"
if [ "$COPY" = 1 ]; then
  [ -z "$COPY_HOSTS" ] && COPY_HOSTS="${SIM_PEER_IP:-192.168.177.12}"
  IFS=',' read -r -a hosts <<<"$COPY_HOSTS"
  for h in "${hosts[@]}"; do
    echo "Copying $NAME to $h..."
    [ -z "$SIM_PEER_HOME" ] && { echo "ssh: connect to host $h port 22: No route to host" >&2; exit 1; }
    peer="$SIM_PEER_HOME/.cache/huggingface/hub"
    mkdir -p "$peer"
    printf 'sending incremental file list\r\n'
    printf '%s/\r\n' "$NAME"
    for f in "${files[@]}"; do
      printf '%s/snapshots/%s/%s\r\n' "$NAME" "${DEST##*/}" "$f"
      sz=$(stat -c %s "$DEST/$f")
      for p in 0 50 100; do printf '\r %14s %3d%%   58.61MB/s    0:00:0%d  ' "$(printf "%'d" $((sz * p / 100)))" "$p" $(( (100 - p) / 50 )); sleep "$DELAY"; done
      printf '(xfr#1, to-chk=0/7)\r\n'
    done
    cp -a "$CACHE/$NAME" "$peer/"
    printf '\r\nsent %s bytes  received 132 bytes  51,824,701.29 bytes/sec\r\n' "$(printf "%'d" $((SHARD * 2)))"
    printf 'total size is %s  speedup is 1.00\r\n' "$(printf "%'d" $((SHARD * 2)))"
  done
  echo "Copy complete."
fi
