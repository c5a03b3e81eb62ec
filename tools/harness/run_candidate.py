#!/usr/bin/env python3
"""Run a candidate framework on the golden inputs and write a candidate set.

    python3 tools/harness/run_candidate.py --adapter ADAPTER --out DIR [--force]
        [--goldens fixtures/verl-0.9.1] [--spec SPEC.json | --conform PATH/TO/conform]

The entry script of verlconf.run_candidate (tools/python/verlconf/run_candidate.py,
which documents the options and exit status); run directly, it finds the package in this
checkout, or in the verlconf wheel it was installed with.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, path, package_dir=None):
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[package_dir] if package_dir else None
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


CHECKOUT = os.path.join(HERE, "..", "..", "tools", "python")
if os.path.isdir(os.path.join(CHECKOUT, "verlconf")):
    sys.path.insert(0, CHECKOUT)
else:
    # The wheel's layout: this script is verlconf/_data/tools/harness/run_candidate.py of the
    # installed package. `conform validate --python` may run it in another interpreter than
    # the one verlconf was installed into, so the package (and the name adapters import the
    # contract by) are loaded from their files, not by putting that site-packages, with
    # whatever numpy it holds, on this interpreter's path.
    package = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
    _load("verlconf", os.path.join(package, "__init__.py"), package)
    _load("verlconf_harness", os.path.join(os.path.dirname(package), "verlconf_harness.py"))

from verlconf import run_candidate  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_candidate.main())
