"""FlexibleArgumentParser as vLLM has it: an ArgumentParser that accepts underscores in flag names."""
import re
import sys
from argparse import ArgumentParser


class FlexibleArgumentParser(ArgumentParser):
    """ArgumentParser that allows both underscore and dash in names."""

    def parse_args(self, args=None, namespace=None):
        if args is None:
            args = sys.argv[1:]
        processed = []
        for arg in args:
            if arg.startswith("--"):
                if "=" in arg:
                    key, value = arg.split("=", 1)
                    processed.append(key.replace("_", "-") + "=" + value)
                else:
                    processed.append(arg.replace("_", "-"))
            elif re.match(r"^-O\d$", arg):
                processed += ["--compilation-config", arg[2:]]
            else:
                processed.append(arg)
        return super().parse_args(processed, namespace)
