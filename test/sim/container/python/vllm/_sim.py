"""Simulator glue of the stand-in vLLM (not part of vLLM's layout).

path_visible(): the sim runs python on the node's own filesystem, so a path is judged the way the
container would see it: the docker shim passes the container's bind mounts (SIM_BINDS, a JSON list
of "host:container[:opts]") and its private files (SIM_ROOTFS). A path is visible when it lies under
a bind's container path and the mapped host path exists, or when it exists under the rootfs.
Outside a simulated container (no SIM_BINDS) the host's view is used.

serve(): what `vllm serve` does in the sim once its arguments are parsed: it records the arguments
($SIM_STATE/llm-serving, one per line) and the VLLM_* environment ($SIM_STATE/llm-serving.env), checks that the parallel layout fits the GPUs it can see
(one GB10 per node; Ray's nodes from $SIM_STATE/ray_nodes) and announces the load to the sim
($SIM_STATE/docker/events.log), whose fake llm then loads (or fails to load) the model.
"""
import json
import os
import sys
import time

import vllm


def _binds():
    raw = os.environ.get("SIM_BINDS")
    if raw is None:
        return None
    try:
        out = []
        for b in json.loads(raw):
            parts = b.split(":")
            if len(parts) >= 2 and parts[1].startswith("/"):
                out.append((parts[0], parts[1].rstrip("/") or "/"))
        return sorted(out, key=lambda hc: len(hc[1]), reverse=True)
    except (ValueError, AttributeError):
        return []


def host_path(p):
    """The host path behind container path `p`, or p itself outside a simulated container."""
    binds = _binds()
    if binds is None:
        return p
    p = os.path.normpath(os.path.join("/", p))
    for host, cont in binds:
        if cont == "/" or p == cont or p.startswith(cont + "/"):
            return os.path.join(host, os.path.relpath(p, cont)) if p != cont else host
    return os.path.join(os.environ.get("SIM_ROOTFS", "/nonexistent"), p.lstrip("/"))


def path_visible(p, kind="file"):
    h = host_path(p)
    return os.path.isfile(h) if kind == "file" else os.path.exists(h)


def _lines(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip()]
    except OSError:
        return []


def _fail(*lines):
    sys.stdout.flush()
    for l in lines:
        print(l, file=sys.stderr)
    sys.exit(1)


def serve(args):
    state = os.environ.get("SIM_STATE")
    container = os.environ.get("SIM_CONTAINER", "vllm_node")
    model = args.model_tag or args.model
    if not model:
        _fail("ValueError: No model specified: give it as the first argument of `vllm serve` or with --model")
    # Every name answers (vLLM's BaseModelPath per served name); the sim's event carries them all.
    served = ",".join(args.served_model_name or [model])
    argv = ["vllm"] + sys.argv[1:]
    print(f"INFO [api_server.py] vLLM API server version {vllm.__version__}", flush=True)
    print(f"INFO [utils.py] non-default args: {' '.join(argv[2:])}", flush=True)
    if state is None:
        return 0
    with open(os.path.join(state, "llm-serving"), "w") as f:
        f.write("".join(a + "\n" for a in argv))
    with open(os.path.join(state, "llm-serving.owner"), "w") as f:
        f.write(container + "\n")
    # The vLLM settings the engine was started with (a recipe's env reaches it through the launch script).
    with open(os.path.join(state, "llm-serving.env"), "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in sorted(os.environ.items()) if k.startswith("VLLM_")))

    tp = args.tensor_parallel_size or 1
    pp = args.pipeline_parallel_size or 1
    world = tp * pp
    backend = args.distributed_executor_backend
    nnodes = args.nnodes or 1
    if backend == "ray":
        ray = _lines(os.path.join(state, "ray_nodes"))
        gpus = int(ray[0]) if ray and ray[0].isdigit() else 1
        if world > gpus:
            _fail(
                "Traceback (most recent call last):",
                "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.",
            )
    elif world > max(1, nnodes):
        _fail(
            "Traceback (most recent call last):",
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig",
            f"  Value error, World size ({world}) is larger than the number of available GPUs (1) in this node. "
            "If this is intentional and you are using:",
            "  - ray, set '--distributed-executor-backend ray'.",
            "  - multiprocessing, set '--nnodes' appropriately.",
        )
    # A model that needs both nodes' memory does not fit one GB10: its load runs out of memory.
    failure = ""
    if model in _lines(os.path.join(state, "cluster_only_models")) and tp < 2:
        failure = " oom"
    with open(os.path.join(state, "docker", "events.log"), "a") as f:
        f.write(f"{int(time.time() * 1000)} {container} serve {served}{failure}\n")
    return 0
