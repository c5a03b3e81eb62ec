"""One oracle family's library: every source of its folder, seen by the suite's users."""

# Who may depend on a family: the CUDA twins, the fixture and tool code, the registry,
# the tests, and the other families (which ones each family builds on is its `deps`).
_FAMILY_USERS = [
    "//cuda_impl:__subpackages__",
    "//fixtures:__subpackages__",
    "//oracle:__subpackages__",
    "//properties:__subpackages__",
    "//tools:__subpackages__",
]

def oracle_family(name, deps = [], internal_hdrs = []):
    """The family's cc_library: a new file joins it without a BUILD edit.

    Args:
      name: the family (its folder's name).
      deps: the families it builds on, besides //oracle/core and //oracle/core:spec.
      internal_hdrs: headers only the family's own sources include.
    """
    native.cc_library(
        name = name,
        srcs = native.glob(["*.cc"]) + internal_hdrs,
        hdrs = native.glob(["*.h"], exclude = internal_hdrs),
        deps = ["//oracle/core", "//oracle/core:spec"] + deps,
        visibility = _FAMILY_USERS,
    )
