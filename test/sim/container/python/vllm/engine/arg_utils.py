"""The engine's serve flags (a subset of vLLM's EngineArgs, with vLLM's types and choices)."""
import argparse
import json
import os
import re


def human_readable_int(value):
    value = value.strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG])", value)
    if m:
        number, suffix = m.groups()
        mult = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}[suffix]
        return int(float(number) * mult)
    return int(value)


def human_readable_int_or_auto(value):
    if value.strip() in ("-1", "auto"):
        return -1
    return human_readable_int(value)


def json_arg(value):
    return json.loads(value)


def _flag(group, names, **kw):
    group.add_argument(*names, **kw)


def _mod_flags(group):
    """Flags a launcher mod patched into this container's vLLM (the sim's mods list them in
    $SIM_ROOTFS/.sim-vllm-flags, one `--name type` a line), as the patched EngineArgs would add them."""
    root = os.environ.get("SIM_ROOTFS")
    if root is None:
        return
    try:
        with open(os.path.join(root, ".sim-vllm-flags")) as f:
            lines = [l.split() for l in f if l.strip()]
    except OSError:
        return
    types = {"float": float, "int": int, "str": str}
    seen = set()
    for name, kind in (l[:2] for l in lines if len(l) >= 2):
        if name not in seen:
            seen.add(name)
            group.add_argument(name, type=types.get(kind, str))


class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        g = parser.add_argument_group("ModelConfig")
        _flag(g, ["--model"], type=str, default=None)
        _flag(g, ["--tokenizer"], type=str)
        _flag(g, ["--tokenizer-mode"], choices=["auto", "slow", "mistral", "custom"])
        _flag(g, ["--trust-remote-code"], action="store_true")
        _flag(g, ["--dtype"], choices=["auto", "half", "float16", "bfloat16", "float", "float32"])
        _flag(g, ["--seed"], type=int)
        _flag(g, ["--revision"], type=str)
        _flag(g, ["--max-model-len"], type=human_readable_int_or_auto)
        _flag(g, ["--quantization", "-q"], type=str)
        _flag(g, ["--enforce-eager"], action="store_true")
        _flag(g, ["--served-model-name"], nargs="+", type=str)
        _flag(g, ["--hf-overrides"], type=json_arg)
        _flag(g, ["--generation-config"], type=str)
        _flag(g, ["--override-generation-config"], type=json_arg)
        _flag(g, ["--rope-scaling"], type=json_arg)
        _flag(g, ["--logits-processors"], nargs="+", type=str)
        _flag(g, ["--skip-tokenizer-init"], action="store_true")
        g = parser.add_argument_group("LoadConfig")
        _flag(g, ["--load-format"], choices=["auto", "pt", "safetensors", "npcache", "dummy", "gguf", "bitsandbytes", "sharded_state", "mistral", "runai_streamer", "fastsafetensors"])
        _flag(g, ["--download-dir"], type=str)
        _flag(g, ["--safetensors-load-strategy"], choices=["lazy", "eager", "torchao"])
        g = parser.add_argument_group("ParallelConfig")
        _flag(g, ["--tensor-parallel-size", "-tp"], type=int)
        _flag(g, ["--pipeline-parallel-size", "-pp"], type=int)
        _flag(g, ["--data-parallel-size", "-dp"], type=int)
        _flag(g, ["--distributed-executor-backend"], choices=["ray", "mp", "uni", "external_launcher"])
        _flag(g, ["--enable-expert-parallel"], action=argparse.BooleanOptionalAction)
        _flag(g, ["--disable-custom-all-reduce"], action="store_true")
        _flag(g, ["--nnodes"], type=int)
        _flag(g, ["--node-rank"], type=int)
        _flag(g, ["--master-addr"], type=str)
        _flag(g, ["--master-port"], type=int)
        g = parser.add_argument_group("CacheConfig")
        _flag(g, ["--gpu-memory-utilization"], type=float)
        _flag(g, ["--kv-cache-dtype"], choices=["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"])
        _flag(g, ["--block-size"], type=int, choices=[1, 8, 16, 32, 64, 128, 256])
        _flag(g, ["--enable-prefix-caching"], action=argparse.BooleanOptionalAction)
        _flag(g, ["--swap-space"], type=float)
        _flag(g, ["--cpu-offload-gb"], type=float)
        _flag(g, ["--mamba-ssm-cache-dtype"], choices=["auto", "float32", "bfloat16"])
        _flag(g, ["--calculate-kv-scales"], action="store_true")
        g = parser.add_argument_group("SchedulerConfig")
        _flag(g, ["--max-num-batched-tokens"], type=human_readable_int)
        _flag(g, ["--max-num-seqs"], type=int)
        _flag(g, ["--enable-chunked-prefill"], action=argparse.BooleanOptionalAction)
        _flag(g, ["--async-scheduling"], action=argparse.BooleanOptionalAction)
        _flag(g, ["--max-num-partial-prefills"], type=int)
        g = parser.add_argument_group("MultiModalConfig")
        _flag(g, ["--limit-mm-per-prompt"], type=json_arg)
        _flag(g, ["--mm-processor-kwargs"], type=json_arg)
        _flag(g, ["--mm-encoder-tp-mode"], choices=["weights", "data"])
        _flag(g, ["--allowed-local-media-path"], type=str)
        g = parser.add_argument_group("Other")
        _flag(g, ["--speculative-config"], type=json_arg)
        _flag(g, ["--compilation-config", "-O"], type=json_arg)
        _flag(g, ["--kv-transfer-config"], type=json_arg)
        _flag(g, ["--structured-outputs-config"], type=json_arg)
        _flag(g, ["--attention-backend"], type=str)
        _flag(g, ["--moe-backend"], type=str)
        _flag(g, ["--enable-lora"], action="store_true")
        _flag(g, ["--max-lora-rank"], type=int)
        _flag(g, ["--max-loras"], type=int)
        _flag(g, ["--max-cudagraph-capture-size"], type=int)
        _flag(g, ["--disable-log-stats"], action="store_true")
        _mod_flags(g)
        return parser


class AsyncEngineArgs(EngineArgs):
    @staticmethod
    def add_cli_args(parser):
        parser = EngineArgs.add_cli_args(parser)
        parser.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction)
        parser.add_argument("--disable-log-requests", action="store_true")
        return parser
