#!/usr/bin/env python3
"""Run a candidate framework on the golden inputs and write a candidate set.

    python3 tools/harness/run_candidate.py --adapter ADAPTER --out DIR [--force]
        [--goldens fixtures/verl-0.9.1] [--spec SPEC.json | --conform PATH/TO/conform]

The entry script of verlconf.run_candidate (fixtures/python/verlconf/run_candidate.py,
which documents the options and exit status); run directly, it finds the package in this
checkout.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "python"))

from verlconf import run_candidate  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_candidate.main())
