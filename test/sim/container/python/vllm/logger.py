import logging
import sys


def init_logger(name):
    # Like vLLM: INFO lines on stdout, which is why callers must find their own output among them.
    logger = logging.getLogger(name)
    if not logger.handlers:
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(logging.Formatter("INFO %(asctime)s [%(name)s] %(message)s"))
        logger.addHandler(h)
        logger.setLevel(logging.INFO)
    return logger
