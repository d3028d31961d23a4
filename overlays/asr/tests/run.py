"""Runs the overlay unit tests and prints one JSON line of counts last (the test runner reads it)."""

import json
import os
import sys
import unittest

sys.dont_write_bytecode = True

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
print(json.dumps({"passed": result.testsRun - failed - skipped, "failed": failed, "skipped": skipped}))
sys.exit(0 if result.wasSuccessful() else 1)
