#!/bin/bash
# Simulated launcher, MID-2026 generation (upstream eugr/spark-vllm-docker; see
# test/fixtures/launcher/README.md). Our own re-implementation of its behaviour:
#  - accepts --solo (one node, no Ray), -t <image>, --name <container>, -d, --apply-mod, --no-ray,
#    --launch-script <file> (copied into the head container and run there after the mods);
#  - an unknown argument is refused ("Error: Unknown argument or action") with the usage;
#  - exec quotes its words with printf %q, so engine arguments reach vllm intact;
#  - in cluster (Ray) mode a `vllm serve` without a backend gets --distributed-executor-backend ray;
#  - `-d exec` dispatches `docker exec -d <c> bash -c "<cmd> >> /proc/1/fd/1 2>&1"` (the output goes
#    to the container log) and returns with the containers running; without -d the cleanup trap
#    stops the cluster when the command returns;
#  - the hub cache mount follows HF_HOME (default $HOME/.cache/huggingface).
#  - the local IP is the node's cluster-link address; each worker (-n, or the nodes detected on the
#    link) gets its container on that node, started and stopped with the head's.
# It drives the simulated docker, so container state is shared with everything else on the node.
IMAGE_NAME="vllm-node"
DEFAULT_CONTAINER_NAME="vllm_node"
HF_CACHE_DIR="${HF_HOME:-$HOME/.cache/huggingface}"
DOCKER_ARGS="-e NCCL_IGNORE_CPU_AFFINITY=1 -v $HF_CACHE_DIR:/root/.cache/huggingface"
if [[ -n "${VLLM_SPARK_EXTRA_DOCKER_ARGS:-}" ]]; then
    DOCKER_ARGS="$DOCKER_ARGS $VLLM_SPARK_EXTRA_DOCKER_ARGS"
fi
ETH_IF=""
IB_IF=""
NCCL_DEBUG_VAL=""
MASTER_PORT="29501"
NODES_ARG=""
CONTAINER_NAME="$DEFAULT_CONTAINER_NAME"
COMMAND_TO_RUN=""
DAEMON_MODE="false"
CHECK_CONFIG="false"
ACTION="start"
CLUSTER_WAS_RUNNING="false"
MOD_PATHS=()
SOLO_MODE="false"
NO_RAY_MODE="false"

usage() {
    echo "Usage: $0 [-n <node_ips>] [-t <image_name>] [--name <container_name>] [--eth-if <if_name>] [--ib-if <if_name>] [--nccl-debug <level>] [--check-config] [--solo] [--no-ray] [-d] [action] [command]"
    echo "  action          start | stop | status | exec (default: start)"
    echo "  --solo          this node only, no Ray cluster"
    echo "  -d              daemon mode: leave the containers running (start, exec)"
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
        -e|--env) DOCKER_ARGS="$DOCKER_ARGS -e $2"; shift ;;
        --apply-mod) MOD_PATHS+=("$2"); shift ;;
        --launch-script) LAUNCH_SCRIPT_PATH="$2"; shift ;;
        --nccl-debug)
            if [[ -n "${2:-}" && "$2" =~ ^(VERSION|WARN|INFO|TRACE)$ ]]; then NCCL_DEBUG_VAL="$2"; shift; else NCCL_DEBUG_VAL="INFO"; fi
            ;;
        --master-port|--head-port) MASTER_PORT="$2"; shift ;;
        --check-config) CHECK_CONFIG="true" ;;
        --solo) SOLO_MODE="true" ;;
        --no-ray) NO_RAY_MODE="true" ;;
        -d) DAEMON_MODE="true" ;;
        -h|--help) usage ;;
        start|stop|status) ACTION="$1" ;;
        exec)
            ACTION="exec"
            shift
            COMMAND_TO_RUN=$(printf "%q " "$@")
            break
            ;;
        *)
            echo "Error: Unknown argument or action: $1"
            usage
            ;;
    esac
    shift
done

[[ -n "$NCCL_DEBUG_VAL" ]] && DOCKER_ARGS="$DOCKER_ARGS -e NCCL_DEBUG=$NCCL_DEBUG_VAL"

# A launch script is copied into the head container and run there: exec is the action.
if [[ -n "${LAUNCH_SCRIPT_PATH:-}" ]]; then
    if [[ ! -f "$LAUNCH_SCRIPT_PATH" ]]; then
        echo "Error: Launch script '$LAUNCH_SCRIPT_PATH' not found."
        exit 1
    fi
    echo "Using launch script: $LAUNCH_SCRIPT_PATH"
    ACTION="exec"
    # The real script runs /workspace/exec-script.sh; the sim's container commands run in the
    # container's own directory, so the copy is named relative to it.
    COMMAND_TO_RUN="bash workspace/exec-script.sh"
fi

for mod_path in "${MOD_PATHS[@]}"; do
    if [[ ! -e "$mod_path" ]]; then
        echo "Error: Mod path '$mod_path' does not exist."
        exit 1
    fi
done

if [[ "$SOLO_MODE" == "true" ]]; then
    if [[ -n "$NODES_ARG" ]]; then
        echo "Error: --solo is incompatible with -n/--nodes."
        exit 1
    fi
    LOCAL_IP="127.0.0.1"
    NODES_ARG="$LOCAL_IP"
    PEER_NODES=()
    echo "Solo mode enabled. Skipping node detection."
else
    # Node detection (the sim's stand-in for autodiscover.sh).
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
fi
HEAD_IP="$LOCAL_IP"

if [[ "$SOLO_MODE" == "false" && ${#PEER_NODES[@]} -eq 0 ]]; then
    echo "Only local node detected/configured. Activating solo mode (no Ray cluster)."
    SOLO_MODE="true"
fi
if [[ "$NO_RAY_MODE" == "true" && "$SOLO_MODE" == "true" ]]; then
    echo "Warning: Only one node detected; --no-ray has no effect in solo mode. Proceeding normally."
    NO_RAY_MODE="false"
fi

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
    echo "  Docker Args: $DOCKER_ARGS"
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

# Daemon mode leaves the containers running, for start and exec alike.
if [[ "$DAEMON_MODE" == "false" ]]; then
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
    mkdir -p "$HF_CACHE_DIR"
    # Unquoted on purpose, as upstream: DOCKER_ARGS (and the extra args in it) are split into words.
    docker run --privileged --ipc=host --gpus all -d --rm --network host --name "$CONTAINER_NAME" \
        $DOCKER_ARGS "$IMAGE_NAME" sleep infinity >/dev/null || exit 1
    for worker in "${PEER_NODES[@]}"; do
        echo "Starting Worker Node on $worker..."
        on_worker "$worker" docker run --privileged --ipc=host --gpus all -d --rm --network host --name "$CONTAINER_NAME" \
            $DOCKER_ARGS "$IMAGE_NAME" sleep infinity >/dev/null || exit 1
    done
    # Each mod's run.sh runs in the head container, WORKSPACE_DIR its working directory (the real
    # script copies the mod into the container first; the sim's container commands see the node's files).
    for mod_path in "${MOD_PATHS[@]}"; do
        echo "Applying mod '$(basename "$mod_path")' to $HEAD_IP..."
        docker exec "$CONTAINER_NAME" bash -c "export WORKSPACE_DIR=\$PWD && cd $(realpath "$mod_path") && ./run.sh" || { echo "Error: Patch script failed on $HEAD_IP"; exit 1; }
    done
    if [[ "$SOLO_MODE" == "false" && "$NO_RAY_MODE" == "false" ]]; then
        echo "Starting Ray HEAD node on $HEAD_IP..."
        for worker in "${PEER_NODES[@]}"; do echo "Starting Ray WORKER node on $worker..."; done
        echo "Waiting for cluster to be ready..."
        echo $((1 + ${#PEER_NODES[@]})) >"$SIM_STATE/ray_nodes"
        echo "Cluster head is responsive."
    else
        rm -f "$SIM_STATE/ray_nodes"
    fi
}

exec_on_head() {
    local cmd="$1"
    if [[ "$DAEMON_MODE" == "true" ]]; then
        docker exec -d "$CONTAINER_NAME" bash -c "$cmd >> /proc/1/fd/1 2>&1"
        echo "Command dispatched in background (Daemon mode). Container: $CONTAINER_NAME"
    else
        if [ -t 0 ]; then DOCKER_EXEC_FLAGS="-it"; else DOCKER_EXEC_FLAGS="-i"; fi
        docker exec $DOCKER_EXEC_FLAGS "$CONTAINER_NAME" bash -c "$cmd"
    fi
}

if [[ "$ACTION" == "exec" ]]; then
    if [[ "$SOLO_MODE" == "false" && "$NO_RAY_MODE" == "false" ]] \
        && [[ "$COMMAND_TO_RUN" =~ (^|[[:space:]])vllm[[:space:]]+serve([[:space:]]|$) ]] \
        && [[ ! "$COMMAND_TO_RUN" =~ --distributed-executor-backend ]]; then
        echo "Ray mode: appending --distributed-executor-backend ray to the vllm serve command." >&2
        COMMAND_TO_RUN="$COMMAND_TO_RUN --distributed-executor-backend ray"
    fi
    start_cluster
    if [[ -n "${LAUNCH_SCRIPT_PATH:-}" ]]; then
        echo "Copying launch script to head node..."
        docker cp "$LAUNCH_SCRIPT_PATH" "$CONTAINER_NAME:/workspace/exec-script.sh" || exit 1
    fi
    echo "Executing command: $COMMAND_TO_RUN"
    if [[ "$NO_RAY_MODE" == "true" && ${#PEER_NODES[@]} -gt 0 && "$COMMAND_TO_RUN" == *"vllm serve"* ]]; then
        # Without Ray every node runs vllm serve with its rank; the head is rank 0.
        base=$(echo "$COMMAND_TO_RUN" | sed -E 's/--distributed-executor-backend[[:space:]]+[^[:space:]]+//')
        total=$((1 + ${#PEER_NODES[@]}))
        rank=1
        for worker in "${PEER_NODES[@]}"; do
            echo "Launching worker (rank $rank) on $worker..."
            rank=$((rank + 1))
        done
        head_cmd="$base --nnodes $total --node-rank 0 --master-addr $HEAD_IP --master-port $MASTER_PORT"
        echo "Executing command on head node (rank 0): $head_cmd"
        exec_on_head "$head_cmd"
    else
        exec_on_head "$COMMAND_TO_RUN"
    fi
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
