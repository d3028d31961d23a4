"""The `serve` subcommand, as vLLM's CLI builds it; cmd() starts the sim's engine (vllm._sim.serve)."""
from vllm.logger import init_logger

logger = init_logger(__name__)


class ServeSubcommand:
    name = "serve"

    @staticmethod
    def cmd(args):
        # The sim's engine: the arguments are recorded and the load is announced to the fake llm.
        from vllm._sim import serve

        return serve(args)

    def validate(self, args):
        from vllm.entrypoints.openai.cli_args import validate_parsed_serve_args

        validate_parsed_serve_args(args)

    def subparser_init(self, subparsers):
        from vllm.entrypoints.openai.cli_args import make_arg_parser

        serve_parser = subparsers.add_parser(self.name, usage="vllm serve [model_tag] [options]")
        logger.info("building the serve parser")
        return make_arg_parser(serve_parser)


def cmd_init():
    return [ServeSubcommand()]
