"""The verl adapter's key table against the registry, without torch or verl.

tools/adapters/verl_keys.py is the table verl_adapter.py builds FUNCTIONS from. Run
through the one key resolution the capture and the harness share (verlconf/
adapter_keys.py), it must name every registry function of `conform spec --json`, keyed
(family, name), and nothing else; every factory it names must exist in verl_adapter.py
(read with ast, not imported); and its RS options, presets and KL names must be the
ones the capture recorded from each bundled verl (the adapter itself checks the
installed verl at import). The resolution's own rules are pinned here too.
"""

import ast
import json
import os
import subprocess
import sys
import unittest

import h5py

CONFORM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "tools/conform"
RUNFILES = os.environ.get("TEST_SRCDIR", os.getcwd())
ROOT = os.path.join(RUNFILES, "verlconf")
if not os.path.isdir(os.path.join(ROOT, "fixtures")):
    ROOT = os.getcwd()
FIXTURES = os.path.join(ROOT, "fixtures")

import verl_keys  # noqa: E402  (//tools/adapters:verl_keys)
from verlconf import adapter_keys  # noqa: E402


def registry():
    out = subprocess.run([CONFORM, "spec", "--json"], capture_output=True, text=True, timeout=600, check=True).stdout
    return [(f["family"], f["name"]) for f in json.loads(out)["functions"]]


def adapter_factories():
    with open(os.path.join(os.path.dirname(FIXTURES), "tools", "adapters", "verl_adapter.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == "_FACTORIES" for t in targets):
            return {ast.literal_eval(k) for k in node.value.keys}
    raise AssertionError("verl_adapter.py has no _FACTORIES dict")


def golden_functions(version):
    """(family, function) of every function the bundled goldens of `version` hold."""
    d = os.path.join(FIXTURES, f"verl-{version}")
    out = set()
    for name in sorted(os.listdir(d)):
        if name.endswith(".h5"):
            with h5py.File(os.path.join(d, name), "r") as f:
                out |= {(name[: -len(".h5")], fn) for fn in f if not fn.startswith("_")}
    return out


def recorded(version, family_file="kl.h5"):
    d = os.path.join(FIXTURES, f"verl-{version}")
    with h5py.File(os.path.join(d, family_file), "r") as f:
        reg = {k: [x for x in str(v).split("\n") if x] for k, v in f["_verl_registry"].attrs.items()}
    with h5py.File(os.path.join(d, "rollout_correction.h5"), "r") as f:
        presets = sorted(f["_verl_presets"].attrs)
    return reg, presets


class VerlKeyTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.registry = registry()

    def test_every_registry_function_resolves(self):
        resolved = adapter_keys.resolve_keys(verl_keys.keys(), self.registry, "verl")
        # The spec was read, not an empty list: it names the functions the goldens hold.
        self.assertEqual(sorted(self.registry), sorted(golden_functions("0.9.1")))
        self.assertEqual(sorted(resolved), sorted(self.registry))
        # gpg in both families, each computed by its own factory.
        self.assertEqual(verl_keys.keys()["advantage/gpg"], ("advantage", "gpg"))
        self.assertEqual(verl_keys.keys()["policy_loss/gpg"], ("policy_loss", "gpg"))

    def test_every_factory_exists_in_the_adapter(self):
        used = {factory for _, _, factory, _ in verl_keys.TABLE}
        self.assertEqual(used, adapter_factories())

    def test_names_are_the_recorded_verls(self):
        for version in ("0.9.1", "0.8.0"):
            reg, presets = recorded(version)
            self.assertEqual(sorted(reg["rs_options"]), sorted(verl_keys.RS_OPTIONS), version)
            self.assertEqual(sorted(reg["kl_penalty_names"]), sorted(verl_keys.KL_NAMES), version)
            self.assertEqual(sorted(reg["kl_penalty_not_implemented"]), sorted(verl_keys.KL_NOT_IMPLEMENTED), version)
            self.assertEqual(presets, sorted(verl_keys.PRESETS), version)
        # The policy losses come from the registry: with bypass_mode, verl 0.9.1's
        # POLICY_LOSS_REGISTRY, no more and no fewer.
        reg, _ = recorded("0.9.1", "policy_loss.h5")
        self.assertEqual(sorted(reg["policy_losses"]), sorted(verl_keys.POLICY_LOSSES + ("bypass_mode",)))

    def test_no_framework_was_imported(self):
        self.assertNotIn("torch", sys.modules)
        self.assertNotIn("verl", sys.modules)


class Resolution(unittest.TestCase):
    REG = [("advantage", "gpg"), ("policy_loss", "gpg"), ("policy_loss", "vanilla"), ("kl", "k1")]

    def problems(self, keys):
        with self.assertRaises(adapter_keys.AdapterLoadError) as cm:
            adapter_keys.resolve_keys(keys, self.REG, "mine")
        return cm.exception.problems

    def test_bare_and_qualified(self):
        got = adapter_keys.resolve_keys(["vanilla", "kl/k1", "advantage/gpg", "policy_loss/gpg"], self.REG, "mine")
        self.assertEqual(
            got,
            {
                ("policy_loss", "vanilla"): "vanilla",
                ("kl", "k1"): "kl/k1",
                ("advantage", "gpg"): "advantage/gpg",
                ("policy_loss", "gpg"): "policy_loss/gpg",
            },
        )

    def test_ambiguous_bare_key_names_its_qualified_forms(self):
        (p,) = self.problems(["gpg", "vanilla"])
        self.assertIn("'gpg'", p)
        self.assertIn("'advantage/gpg' or 'policy_loss/gpg'", p)

    def test_unknown_keys(self):
        unknown = ["vanila", "kl/k9", "nope/k1"]
        probs = self.problems(unknown + ["kl/k1"])
        self.assertEqual(len(probs), len(unknown), probs)
        for key in unknown:
            self.assertTrue(any(f"'{key}'" in p and "names no registry function" in p for p in probs), (key, probs))

    def test_two_keys_for_one_function(self):
        (p,) = self.problems(["vanilla", "policy_loss/vanilla"])
        self.assertIn("both name policy_loss/vanilla", p)

    def test_non_callable(self):
        with self.assertRaises(adapter_keys.AdapterLoadError) as cm:
            adapter_keys.resolve({"vanilla": "not a function"}, self.REG, "mine")
        self.assertIn("not callable", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
