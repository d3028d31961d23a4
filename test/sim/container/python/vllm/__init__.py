"""Simulated vLLM package: only the argument-parser layout the serve command uses (no engine)."""
__version__ = "0.11.0+sim"
