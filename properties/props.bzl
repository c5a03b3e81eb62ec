"""One RapidCheck suite per source file of a family's properties folder."""

def family_props_tests(names, family):
    """names: the suites (NAME.cc each); family: the oracle library they hold to its
    properties. RC_PARAMS (e.g. max_success=2000) scales them."""
    for name in names:
        native.cc_test(
            name = name,
            size = "small",
            srcs = [name + ".cc"],
            shard_count = 2,
            deps = [
                family,
                "//oracle:registry",
                "//oracle/judge",
                "//properties:testing",
                "@gtest//:gtest_main",
                "@rapidcheck//:rapidcheck_gtest",
            ],
        )
