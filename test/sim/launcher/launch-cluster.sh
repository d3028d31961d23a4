#!/bin/bash
# Simulated launcher: same flags and actions as the upstream launch-cluster.sh; drives the
# simulated docker so container state is shared with everything else on the node.
IMAGE="vllm-node"
NAME="vllm_node"
SOLO=0
DAEMON=0
NODES="${SIM_NODES:-192.168.177.11,192.168.177.12}"
ACTION="start"
CHECK=0
while [ $# -gt 0 ]; do
  case "$1" in
    -t) IMAGE="$2"; shift ;;
    --name) NAME="$2"; shift ;;
    --solo) SOLO=1 ;;
    -d) DAEMON=1 ;;
    -n|--nodes) NODES="$2"; shift ;;
    --eth-if|--ib-if|--apply-mod) shift ;;
    --nccl-debug) [[ -n "$2" && "$2" != -* ]] && shift ;;
    --check-config) CHECK=1 ;;
    start|stop|status) ACTION="$1" ;;
    exec) ACTION="exec"; shift; break ;;
    -h|--help) echo "Usage: $0 [-n nodes] [-t image] [--name container] [--solo] [-d] [start|stop|status|exec <cmd>]"; exit 0 ;;
    *) echo "Unknown argument: $1" >&2; exit 1 ;;
  esac
  shift
done
IFS=',' read -r -a NODE_LIST <<<"$NODES"
echo "Auto-detecting interfaces..."
echo "  Detected IB_IF: rocep1s0f1,roceP2p1s0f1"
echo "  Detected ETH_IF: enp1s0f1np1"
echo "  Detected Local IP: ${NODE_LIST[0]}"
if [ "$SOLO" = 1 ]; then echo "Solo mode: running on this node only"; else echo "Head Node: ${NODE_LIST[0]}"; echo "Worker Nodes: ${NODE_LIST[*]:1}"; fi
[ "$CHECK" = 1 ] && { echo "Configuration check complete."; exit 0; }
running() { [ "$(docker inspect -f '{{.State.Running}}' "$NAME" 2>/dev/null)" = "true" ]; }
case "$ACTION" in
  status)
    if running; then echo "Container $NAME is running."; docker ps --filter "name=^${NAME}\$" --format '{{.Names}}\t{{.Status}}'; else echo "Container $NAME is not running."; fi ;;
  stop)
    echo "Stopping cluster..."
    docker rm -f "$NAME" >/dev/null 2>&1
    rm -f "$SIM_STATE/llm-serving"
    echo "Cluster stopped." ;;
  start|exec)
    if ! running; then
      docker rm -f "$NAME" >/dev/null 2>&1
      echo "Starting head node on ${NODE_LIST[0]}..."
      docker run -d --privileged --gpus all --ipc=host --network host --name "$NAME" \
        -v "$HOME/.cache/huggingface:/root/.cache/huggingface" $VLLM_SPARK_EXTRA_DOCKER_ARGS "$IMAGE" sleep infinity >/dev/null || exit 1
      [ "$SOLO" = 0 ] && echo "Starting worker nodes: ${NODE_LIST[*]:1}..."
      echo "Waiting for Ray cluster to be ready..."
      echo "Cluster is ready."
    fi
    if [ "$ACTION" = exec ]; then
      echo "Executing in $NAME: $*"
      if [ "$1" = vllm ] && [ "$2" = serve ]; then
        printf '%s\n' "$@" > "$SIM_STATE/llm-serving"
        echo "$(date +%s) $NAME serve $3" >> "$SIM_STATE/docker/events.log"
        echo "INFO:     Started server process"
        echo "INFO:     Uvicorn running on http://0.0.0.0:${SIM_LLM_PORT:-8888} (Press CTRL+C to quit)"
        exit 0
      fi
      exec docker exec "$NAME" "$@"
    fi ;;
esac
