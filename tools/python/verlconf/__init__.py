"""verlconf's Python side: the fixture schema (h5schema), the function registry as
`conform spec --json` prints it (registry_spec), the adapter contract (contract,
adapter_keys, adapter_call, projections), the candidate harness (run_candidate), the
adapter server (serve), the pytest plugin and the Ray driver. numpy and h5py are needed by
the schema and the harness; nothing here imports torch or verl. The capture
(fixtures/capture) and its seeded case catalogue (fixtures/catalogue, the package
`catalogue`) run on this package too.

Adapters import the contract's one name as `from verlconf_harness import Decline`
(docs/adapter-contract.md); that module, beside this package, is verlconf.contract.
"""
