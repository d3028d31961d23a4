#!/bin/bash
# Simulated launcher, EARLY-2026 generation (upstream eugr/spark-vllm-docker as of commit 74c02c3,
# 2026-01-28; see test/fixtures/launcher/README.md). Our own re-implementation of its behaviour:
#  - no --solo: an argument it does not know makes the action `exec` and EVERYTHING from that
#    argument on becomes the command (so `--solo ... exec vllm serve …` runs `--solo …` in bash);
#  - the exec words are joined unquoted (COMMAND_TO_RUN="$@") and re-parsed by `bash -i -c`
#    inside the container, so a JSON engine argument is split and loses its quotes;
#  - the cleanup trap is set when not in daemon mode OR when the action is exec, so the cluster is
#    STOPPED when the exec'd command returns, even with -d; `start -d` leaves it running;
#  - the hub cache mount is always $HOME/.cache/huggingface (the hub-home variable is not read).
#  - the local IP is the node's cluster-link address; each worker (-n, or the nodes detected on the
#    link) gets its container on that node, started and stopped with the head's.
# It drives the simulated docker, so container state is shared with everything else on the node.
IMAGE_NAME="vllm-node"
DEFAULT_CONTAINER_NAME="vllm_node"
DOCKER_ARGS="-e NCCL_IGNORE_CPU_AFFINITY=1 -v $HOME/.cache/huggingface:/root/.cache/huggingface"
if [[ -n "${VLLM_SPARK_EXTRA_DOCKER_ARGS:-}" ]]; then
    DOCKER_ARGS="$DOCKER_ARGS $VLLM_SPARK_EXTRA_DOCKER_ARGS"
fi
ETH_IF=""
IB_IF=""
NCCL_DEBUG_VAL=""
NODES_ARG=""
CONTAINER_NAME="$DEFAULT_CONTAINER_NAME"
COMMAND_TO_RUN=""
DAEMON_MODE="false"
CHECK_CONFIG="false"
ACTION="start"
CLUSTER_WAS_RUNNING="false"
MOD_PATHS=()

usage() {
    echo "Usage: $0 [-n <node_ips>] [-t <image_name>] [--name <container_name>] [--eth-if <if_name>] [--ib-if <if_name>] [--nccl-debug <level>] [--check-config] [-d] [action] [command]"
    echo "  action          start | stop | status | exec (default: start)"
    echo "  -d              daemon mode (start only)"
    exit 1
}

# Sim only: what `ssh <worker> …` reaches on the real launcher is the worker's own docker; here the
# worker's container state, found by its cluster-link address.
worker_state() {
    local var="SIM_STATE_AT_${1//[^A-Za-z0-9]/_}"
    echo "${!var:-}"
}
on_worker() {
    local state
    state="$(worker_state "$1")"
    shift
    [[ -n "$state" ]] || return 1
    SIM_STATE="$state" "$@"
}

while [[ "$#" -gt 0 ]]; do
    case $1 in
        -n|--nodes) NODES_ARG="$2"; shift ;;
        -t) IMAGE_NAME="$2"; shift ;;
        --name) CONTAINER_NAME="$2"; shift ;;
        --eth-if) ETH_IF="$2"; shift ;;
        --ib-if) IB_IF="$2"; shift ;;
        --apply-mod) MOD_PATHS+=("$2"); shift ;;
        --nccl-debug)
            if [[ -n "${2:-}" && "$2" =~ ^(VERSION|WARN|INFO|TRACE)$ ]]; then NCCL_DEBUG_VAL="$2"; shift; else NCCL_DEBUG_VAL="INFO"; fi
            ;;
        --check-config) CHECK_CONFIG="true" ;;
        -d) DAEMON_MODE="true" ;;
        -h|--help) usage ;;
        start|stop|status) ACTION="$1" ;;
        exec)
            ACTION="exec"
            shift
            COMMAND_TO_RUN="$@"
            break
            ;;
        *)
            # Anything else (an unknown flag too) is taken as the start of a command to exec.
            ACTION="exec"
            COMMAND_TO_RUN="$@"
            break
            ;;
    esac
    shift
done

[[ -n "$NCCL_DEBUG_VAL" ]] && DOCKER_ARGS="$DOCKER_ARGS -e NCCL_DEBUG=$NCCL_DEBUG_VAL"

for mod_path in "${MOD_PATHS[@]}"; do
    if [[ ! -e "$mod_path" ]]; then
        echo "Error: Mod path '$mod_path' does not exist."
        exit 1
    fi
done

# Node detection (the sim's stand-in for autodiscover.sh): interfaces, then the nodes on the link.
[[ -z "$ETH_IF" ]] && ETH_IF="enp1s0f1np1"
[[ -z "$IB_IF" ]] && IB_IF="rocep1s0f1,roceP2p1s0f1"
echo "Auto-detecting interfaces..."
echo "  Detected IB_IF: $IB_IF"
echo "  Detected ETH_IF: $ETH_IF"
LOCAL_IP="${SIM_LINK_IP:-192.168.177.11}"
echo "  Detected Local IP: $LOCAL_IP ($LOCAL_IP/24)"
if [[ -z "$NODES_ARG" ]]; then
    echo "Auto-detecting nodes..."
    NODES_ARG="${SIM_NODES:-$LOCAL_IP}"
fi
IFS=',' read -r -a ALL_NODES <<<"$NODES_ARG"
PEER_NODES=()
FOUND_HEAD=false
for ip in "${ALL_NODES[@]}"; do
    if [[ "$ip" == "$LOCAL_IP" ]]; then FOUND_HEAD=true; else PEER_NODES+=("$ip"); fi
done
if [[ "$FOUND_HEAD" == false ]]; then
    echo "Error: Local IP ($LOCAL_IP) is not in the list of nodes ($NODES_ARG)."
    exit 1
fi
HEAD_IP="$LOCAL_IP"

echo "Head Node: $HEAD_IP"
echo "Worker Nodes: ${PEER_NODES[*]}"
echo "Container Name: $CONTAINER_NAME"
echo "Image Name: $IMAGE_NAME"
echo "Action: $ACTION"

if [[ "$ACTION" == "start" || "$ACTION" == "exec" || "$CHECK_CONFIG" == "true" ]] && [[ ${#PEER_NODES[@]} -gt 0 ]]; then
    echo "Checking SSH connectivity to worker nodes..."
    for worker in "${PEER_NODES[@]}"; do
        if [[ -z "$(worker_state "$worker")" ]]; then
            echo "  SSH to $worker: FAILED"
            echo "Error: Cannot SSH to worker node $worker."
            exit 1
        fi
        echo "  SSH to $worker: OK"
    done
fi

if [[ "$CHECK_CONFIG" == "true" ]]; then
    echo "Configuration Check Complete."
    echo "  Image Name: $IMAGE_NAME"
    echo "  ETH Interface: $ETH_IF"
    echo "  IB Interface: $IB_IF"
    exit 0
fi

cleanup() {
    trap - EXIT INT TERM HUP
    if [[ "$CLUSTER_WAS_RUNNING" == "true" ]]; then
        echo "Cluster was already running when script started. Skipping cleanup."
        return
    fi
    echo ""
    echo "Stopping cluster..."
    echo "Stopping head node ($HEAD_IP)..."
    # The container runs with --rm: stopping it removes it.
    docker stop "$CONTAINER_NAME" >/dev/null 2>&1 || true
    for worker in "${PEER_NODES[@]}"; do
        echo "Stopping worker node ($worker)..."
        on_worker "$worker" docker stop "$CONTAINER_NAME" >/dev/null 2>&1 || true
    done
    rm -f "$SIM_STATE/llm-serving" "$SIM_STATE/ray_nodes"
    echo "Cluster stopped."
}

if [[ "$ACTION" == "stop" ]]; then
    cleanup
    exit 0
fi

if [[ "$ACTION" == "status" ]]; then
    echo "Checking status..."
    if docker ps | grep -q "$CONTAINER_NAME"; then
        echo "[HEAD] $HEAD_IP: Container '$CONTAINER_NAME' is RUNNING."
    else
        echo "[HEAD] $HEAD_IP: Container '$CONTAINER_NAME' is NOT running."
    fi
    for worker in "${PEER_NODES[@]}"; do
        if on_worker "$worker" docker ps --format '{{.Names}}' 2>/dev/null | grep -q "^${CONTAINER_NAME}$"; then
            echo "[WORKER] $worker: Container '$CONTAINER_NAME' is RUNNING."
        else
            echo "[WORKER] $worker: Container '$CONTAINER_NAME' is NOT running."
        fi
    done
    exit 0
fi

# The early generation cleans up after exec whatever -d says.
if [[ "$DAEMON_MODE" == "false" ]] || [[ "$ACTION" == "exec" ]]; then
    trap cleanup EXIT INT TERM HUP
fi

check_cluster_running() {
    if docker ps --format '{{.Names}}' | grep -q "^${CONTAINER_NAME}$"; then
        echo "Warning: Container '$CONTAINER_NAME' is already running on head node ($HEAD_IP)."
        echo "Cluster containers are already running. Skipping launch."
        CLUSTER_WAS_RUNNING="true"
    fi
}

start_cluster() {
    check_cluster_running
    [[ "$CLUSTER_WAS_RUNNING" == "true" ]] && return 0
    echo "Starting Head Node on $HEAD_IP..."
    # Sim only: the seeded llm container is not --rm (tests stop and start it), so a stopped one
    # may be left over; a real launcher's containers are --rm and never are.
    [ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER_NAME" 2>/dev/null)" = "false" ] && docker rm "$CONTAINER_NAME" >/dev/null
    # Unquoted on purpose, as upstream: DOCKER_ARGS (and the extra args in it) are split into words.
    docker run -d --privileged --gpus all --rm --ipc=host --network host --name "$CONTAINER_NAME" \
        $DOCKER_ARGS "$IMAGE_NAME" \
        ./run-cluster-node.sh --role head --host-ip "$HEAD_IP" --eth-if "$ETH_IF" --ib-if "$IB_IF" || exit 1
    for worker in "${PEER_NODES[@]}"; do
        echo "Starting Worker Node on $worker..."
        on_worker "$worker" docker run -d --privileged --gpus all --rm --ipc=host --network host --name "$CONTAINER_NAME" \
            $DOCKER_ARGS "$IMAGE_NAME" \
            ./run-cluster-node.sh --role worker --host-ip "$worker" --eth-if "$ETH_IF" --ib-if "$IB_IF" >/dev/null || exit 1
    done
    for mod_path in "${MOD_PATHS[@]}"; do echo "Applying mod '$(basename "$mod_path")' to $HEAD_IP..."; done
    echo "Waiting for cluster to be ready..."
    echo $((1 + ${#PEER_NODES[@]})) >"$SIM_STATE/ray_nodes"
    echo "Cluster head is responsive."
}

if [[ "$ACTION" == "exec" ]]; then
    start_cluster
    echo "Executing command on head node: $COMMAND_TO_RUN"
    if [ -t 0 ]; then DOCKER_EXEC_FLAGS="-it"; else DOCKER_EXEC_FLAGS="-i"; fi
    docker exec $DOCKER_EXEC_FLAGS "$CONTAINER_NAME" bash -i -c "$COMMAND_TO_RUN"
elif [[ "$ACTION" == "start" ]]; then
    start_cluster
    if [[ "$DAEMON_MODE" == "true" ]]; then
        echo "Cluster started in background (Daemon mode)."
    else
        echo "Cluster started. Tailing logs from head node..."
        echo "Press Ctrl+C to stop the cluster."
        docker logs -f "$CONTAINER_NAME"
    fi
fi
