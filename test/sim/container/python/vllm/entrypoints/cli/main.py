"""The `vllm` command line, as vLLM's console entry point builds it: one subcommand, `serve`."""
import sys

import vllm
from vllm.entrypoints.cli import serve
from vllm.utils.argparse_utils import FlexibleArgumentParser


def main():
    parser = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    parser.add_argument("-v", "--version", action="version", version=vllm.__version__)
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    commands = {}
    for command in serve.cmd_init():
        command.subparser_init(subparsers).set_defaults(dispatch_function=command.cmd)
        commands[command.name] = command
    args = parser.parse_args()
    if args.subparser in commands:
        commands[args.subparser].validate(args)
    if hasattr(args, "dispatch_function"):
        args.dispatch_function(args)
    else:
        parser.print_help()


if __name__ == "__main__":
    sys.exit(main())
