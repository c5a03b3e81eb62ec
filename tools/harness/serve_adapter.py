#!/usr/bin/env python3
"""Serve one adapter over stdin/stdout, case after case, for `conform explore`.

    python3 tools/harness/serve_adapter.py --adapter ADAPTER [--spec SPEC.json | --conform PATH]

The entry script of verlconf.serve (tools/python/verlconf/serve.py, which documents
the protocol and exit status); run directly, it finds the package in this checkout.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))

from verlconf import serve  # noqa: E402

if __name__ == "__main__":
    sys.exit(serve.main())
