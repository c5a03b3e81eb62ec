"""verl's RolloutCorrectionConfig presets against the oracle's expansion of them.

The capture calls every factory of verl 0.9.1's RolloutCorrectionConfig with its default
arguments and records the config it returns (/_verl_presets in rollout_correction.h5).
Each preset's registry spec states the oracle's expansion (`preset_expansion` in
`conform spec --json`); this test holds the two together, so a verl upgrade that adds a
preset or changes what one means shows up here. (The goldens of each preset then check
that running the expanded config gives verl's weights, masks, losses and metrics.)
"""

import json
import os
import subprocess
import sys
import unittest

import h5py

CONFORM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "tools/conform"
RUNFILES = os.environ.get("TEST_SRCDIR", os.getcwd())
GOLDENS = os.path.join(RUNFILES, "verlconf", "fixtures", "verl-0.9.1")
if not os.path.isdir(GOLDENS):
    GOLDENS = os.path.join(os.getcwd(), "fixtures", "verl-0.9.1")


def recorded():
    with h5py.File(os.path.join(GOLDENS, "rollout_correction.h5"), "r") as f:
        attrs = f["_verl_presets"].attrs
        return {k: json.loads(v.decode() if isinstance(v, bytes) else str(v)) for k, v in attrs.items()}


def specs():
    out = subprocess.run([CONFORM, "spec", "--json"], capture_output=True, text=True, timeout=600, check=True).stdout
    return {f["name"]: f for f in json.loads(out)["functions"] if "preset_expansion" in f}


def normalized(cfg):
    """JSON and the registry spell booleans differently (true / 1); compare values."""
    out = {}
    for k, v in cfg.items():
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, float) and v.is_integer() and k not in ("rollout_is_threshold", "rollout_rs_threshold"):
            v = int(v)
        out[k] = v
    return out


class Presets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.verl = recorded()
        cls.specs = specs()

    def test_verl_has_as_many_presets_as_the_registry(self):
        self.assertTrue(self.verl, "the capture recorded no presets")
        self.assertEqual(len(self.verl), len(self.specs), sorted(set(self.verl) ^ set(self.specs)))

    def test_every_verl_preset_has_an_entry(self):
        for name in self.verl:
            self.assertIn(name, self.specs, f"verl's RolloutCorrectionConfig.{name} has no registry entry")

    def test_no_entry_without_a_verl_preset(self):
        for name in self.specs:
            self.assertIn(name, self.verl, f"registry preset {name} is not a factory of verl")

    def test_expansion_matches_verl(self):
        for name, want in self.verl.items():
            if name not in self.specs:
                continue
            got = self.specs[name]["preset_expansion"]
            self.assertEqual(normalized(got), normalized(want), name)

    def test_expansions_differ(self):
        # Two factories with one expansion would mean one entry checks nothing new.
        seen = {}
        for name, cfg in self.verl.items():
            key = json.dumps(normalized(cfg), sort_keys=True)
            self.assertNotIn(key, seen, f"{name} expands like {seen.get(key)}")
            seen[key] = name


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
