"""The OpenAI-compatible server's flags and the quick checks `vllm serve` runs before loading."""
import json

from vllm._sim import path_visible
from vllm.engine.arg_utils import AsyncEngineArgs, json_arg


def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser.add_argument("--headless", action="store_true", default=False)
    parser.add_argument("--api-server-count", "-asc", type=int, default=None)
    parser.add_argument("--config", type=str)
    parser.add_argument("--grpc", action="store_true", default=False)
    g = parser.add_argument_group("Frontend")
    g.add_argument("--host", type=str)
    g.add_argument("--port", type=int, default=8000)
    g.add_argument("--uds", type=str)
    g.add_argument("--uvicorn-log-level", choices=["critical", "error", "warning", "info", "debug", "trace"])
    g.add_argument("--disable-uvicorn-access-log", action="store_true")
    g.add_argument("--allow-credentials", action="store_true")
    g.add_argument("--allowed-origins", type=json.loads)
    g.add_argument("--api-key", nargs="+", type=str)
    g.add_argument("--lora-modules", nargs="+", type=str)
    g.add_argument("--chat-template", type=str, default=None)
    g.add_argument("--chat-template-content-format", choices=["auto", "string", "openai"])
    g.add_argument("--default-chat-template-kwargs", type=json_arg)
    g.add_argument("--response-role", type=str)
    g.add_argument("--ssl-keyfile", type=str)
    g.add_argument("--ssl-certfile", type=str)
    g.add_argument("--root-path", type=str)
    g.add_argument("--middleware", action="append", type=str, default=[])
    g.add_argument("--enable-auto-tool-choice", action="store_true")
    g.add_argument("--tool-call-parser", type=str)
    g.add_argument("--tool-parser-plugin", type=str)
    g.add_argument("--reasoning-parser", type=str)
    g.add_argument("--max-log-len", type=int)
    g.add_argument("--enable-prompt-tokens-details", action="store_true")
    g.add_argument("--enable-log-outputs", action="store_true")
    g.add_argument("--enable-force-include-usage", action="store_true")
    return AsyncEngineArgs.add_cli_args(parser)


def validate_chat_template(chat_template):
    """Like vLLM: a path-like template must exist; anything else must look like a Jinja template.

    "Exist" as the container sees it: in the sim, python runs on the node's filesystem, so the path
    is looked up through the container's mounts (vllm._sim.path_visible).
    """
    if chat_template is None:
        return
    if path_visible(chat_template):
        return
    if any(c in chat_template for c in "{}\n"):
        return
    raise ValueError(f"The supplied chat template string ({chat_template}) appears path-like, but doesn't exist!")


def validate_parsed_serve_args(args):
    if hasattr(args, "subparser") and args.subparser != "serve":
        return
    validate_chat_template(args.chat_template)
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        raise TypeError("Error: --enable-auto-tool-choice requires --tool-call-parser")
    if args.enable_log_outputs and not args.enable_log_requests:
        raise TypeError("Error: --enable-log-outputs requires --enable-log-requests")
