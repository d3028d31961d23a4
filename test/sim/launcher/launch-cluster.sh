#!/bin/bash
# Simulated launcher: same flags, actions and output style as the upstream launch-cluster.sh; drives
# the simulated docker so container state is shared with everything else on the node. Like
# upstream, `exec` starts the container (sleep infinity) when it is not running, splices
# VLLM_SPARK_EXTRA_DOCKER_ARGS into `docker run` unquoted, and with -d dispatches the command in
# the background with its output in the container log. A `vllm serve` is announced to the sim
# (events.log) so the simulated engine loads the model it names.
IMAGE_NAME="vllm-node"
CONTAINER_NAME="vllm_node"
SOLO_MODE="false"
DAEMON_MODE="false"
NODES_ARG="${SIM_NODES:-192.168.177.11,192.168.177.12}"
ACTION=""
CHECK_CONFIG="false"
DOCKER_ARGS="-e NCCL_IGNORE_CPU_AFFINITY=1 -v $HOME/.cache/huggingface:/root/.cache/huggingface"
if [[ -n "$VLLM_SPARK_EXTRA_DOCKER_ARGS" ]]; then
  DOCKER_ARGS="$DOCKER_ARGS $VLLM_SPARK_EXTRA_DOCKER_ARGS"
fi
usage() {
  echo "Usage: $0 [-n <node_ips>] [-t <image_name>] [--name <container_name>] [--eth-if <if_name>] [--ib-if <if_name>] [--nccl-debug <level>] [--check-config] [--solo] [-d] [action] [command]"
  exit 1
}
while [[ "$#" -gt 0 ]]; do
  case $1 in
    -n|--nodes) NODES_ARG="$2"; shift ;;
    -t) IMAGE_NAME="$2"; shift ;;
    --name) CONTAINER_NAME="$2"; shift ;;
    --eth-if|--ib-if|--apply-mod|--master-port|-e|--env) shift ;;
    --nccl-debug) [[ -n "$2" && "$2" =~ ^(VERSION|WARN|INFO|TRACE)$ ]] && shift ;;
    --check-config) CHECK_CONFIG="true" ;;
    --solo) SOLO_MODE="true" ;;
    -d) DAEMON_MODE="true" ;;
    -h|--help) usage ;;
    start|stop|status) ACTION="$1" ;;
    exec) ACTION="exec"; shift; break ;;
    *) echo "Error: Unknown argument or action: $1"; usage ;;
  esac
  shift
done
IFS=',' read -r -a ALL_NODES <<<"$NODES_ARG"
if [[ "$SOLO_MODE" == "true" ]]; then
  echo "Solo mode enabled. Skipping node detection."
  HEAD_IP="127.0.0.1"
  PEER_NODES=()
else
  echo "Auto-detecting interfaces..."
  echo "  Detected IB_IF: rocep1s0f1,roceP2p1s0f1"
  echo "  Detected ETH_IF: enp1s0f1np1"
  echo "  Detected Local IP: ${ALL_NODES[0]}"
  HEAD_IP="${ALL_NODES[0]}"
  PEER_NODES=("${ALL_NODES[@]:1}")
fi
echo "Head Node: $HEAD_IP"
echo "Worker Nodes: ${PEER_NODES[*]}"
echo "Container Name: $CONTAINER_NAME"
echo "Image Name: $IMAGE_NAME"
echo "Action: ${ACTION:-start}"
if [[ "$CHECK_CONFIG" == "true" ]]; then
  echo "Configuration Check Complete."
  echo "  Docker Args: $DOCKER_ARGS"
  exit 0
fi
[[ -z "$ACTION" ]] && { echo "Error: No action specified. Use: start | stop | status | exec"; usage; }
running() { [ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER_NAME" 2>/dev/null)" = "true" ]; }
log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$1" >> "$SIM_STATE/docker/logs/$CONTAINER_NAME.log"; }
case "$ACTION" in
  status)
    echo "Checking status..."
    if running; then echo "[HEAD] $HEAD_IP: Container '$CONTAINER_NAME' is RUNNING."; else echo "[HEAD] $HEAD_IP: Container '$CONTAINER_NAME' is NOT running."; fi
    ;;
  stop)
    echo ""
    echo "Stopping cluster..."
    echo "Stopping head node ($HEAD_IP)..."
    # Upstream runs the container with --rm, so stopping it removes it.
    docker rm -f "$CONTAINER_NAME" >/dev/null 2>&1
    for worker in "${PEER_NODES[@]}"; do echo "Stopping worker node ($worker)..."; done
    rm -f "$SIM_STATE/llm-serving"
    echo "Cluster stopped."
    ;;
  start|exec)
    COMMAND_TO_RUN=$(printf "%q " "$@")
    if running; then
      echo "Warning: Container '$CONTAINER_NAME' is already running on head node ($HEAD_IP)."
      echo "Cluster containers are already running. Skipping launch."
    else
      docker rm -f "$CONTAINER_NAME" >/dev/null 2>&1
      echo "Starting Head Node on $HEAD_IP..."
      # Unquoted on purpose, as upstream: the extra args are split into words here.
      docker run --privileged --ipc=host --gpus all -d --rm --network host --name "$CONTAINER_NAME" \
        $DOCKER_ARGS "$IMAGE_NAME" sleep infinity >/dev/null || exit 1
      for worker in "${PEER_NODES[@]}"; do echo "Starting Worker Node on $worker..."; done
    fi
    if [[ "$ACTION" == "start" ]]; then
      echo "Cluster started in background (Daemon mode)."
      exit 0
    fi
    echo "Executing command: $COMMAND_TO_RUN"
    if [[ "$1" == "vllm" && "$2" == "serve" ]]; then
      printf '%s\n' "$@" > "$SIM_STATE/llm-serving"
      SERVED="$3"
      prev=""
      for a in "$@"; do
        [[ "$prev" == "--served-model-name" || "$prev" == "--served_model_name" ]] && SERVED="$a"
        [[ "$a" == --served[-_]model[-_]name=* ]] && SERVED="${a#*=}"
        prev="$a"
      done
      log "INFO [api_server.py] vLLM API server version 0.11.0+sim"
      log "INFO [utils.py] non-default args: $COMMAND_TO_RUN"
      echo "$(date +%s) $CONTAINER_NAME serve $SERVED" >> "$SIM_STATE/docker/events.log"
      if [[ "$DAEMON_MODE" == "true" ]]; then
        echo "Command dispatched in background (Daemon mode). Container: $CONTAINER_NAME"
      else
        echo "INFO:     Started server process"
        echo "INFO:     Uvicorn running on http://0.0.0.0:${SIM_LLM_PORT:-8888} (Press CTRL+C to quit)"
      fi
      exit 0
    fi
    exec docker exec "$CONTAINER_NAME" "$@"
    ;;
esac
