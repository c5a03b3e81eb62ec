"""tools/bench/bench_verl.py and tools/bench/ratio_table.py without torch or verl (CI has neither):
ratio_table on small synthetic JSONs (both present, one skipped, one absent, rows that match
on one side only), bench_verl's argument errors (exit 2), its --device names (torch needs an
index; a fake torch stands in), its stub finder, the --simulate-bare filter and load_verl on
a fake verl tree whose __init__ must not run.

    python3 tools/bench/bench_verl_test.py [path/to/bench_verl.py path/to/ratio_table.py]
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def _find(rel: str) -> str:
    # Under bazel test the files are runfiles of this test; run by hand, the tree's own.
    for root in (
        os.environ.get("TEST_SRCDIR", "") + "/" + os.environ.get("TEST_WORKSPACE", ""),
        os.path.dirname(os.path.dirname(HERE)),
    ):
        p = os.path.join(root, rel)
        if os.path.isfile(p):
            return p
    raise FileNotFoundError(rel)


BENCH_VERL = _find("tools/bench/bench_verl.py")
RATIO_TABLE = _find("tools/bench/ratio_table.py")


def _import(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bv = _import(BENCH_VERL, "bench_verl")
rt = _import(RATIO_TABLE, "ratio_table")


def _write(d: str, name: str, obj) -> str:
    p = os.path.join(d, name)
    with open(p, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    return p


def _cuda_doc(status="ok"):
    def row(label, family, name, ms, ratio, meets, anchor=None, rows=4096, tokens=8192):
        r = {
            "label": label,
            "family": family,
            "name": name,
            "rows": rows,
            "tokens": tokens,
            "status": "ok",
            "ms": ms,
            "roofline_ms": ms / ratio,
            "ratio_to_roofline": ratio,
            "meets_target": meets,
        }
        if anchor:
            r["anchor"] = {"row": anchor[0], "verl_eager_ms": anchor[1], "shape_matches": rows == 4096}
        return r

    return {
        "schema": "verlconf-cuda-bench/2",
        "status": status,
        "device": {"name": "Fake GPU"},
        "shapes": [[4096, 8192], [8, 16]],
        "results": [
            row("policy_loss/vanilla", "policy_loss", "vanilla", 0.2, 1.2, True, ("loss/vanilla_fwd_bwd", 6.403)),
            row(
                "rc/token_is",
                "rollout_correction",
                "compute_rollout_correction_weights",
                0.3,
                1.8,
                False,
                ("rc/token_is", 9.861),
            ),
            row("kl/full", "kl", "full", 0.1, 1.0, True),  # no verl row: cuda only
            {"label": "kl/full+", "family": "kl", "name": "full+", "rows": 4096, "tokens": 8192, "status": "raises"},
            {
                "label": "kl/abs",
                "family": "kl",
                "name": "abs",
                "rows": 4096,
                "tokens": 8192,
                "status": "ok",
                "host_wall_ms": 3.0,
            },  # from a --system host run
            row("entropy/x", "entropy", "x", 0.05, 1.0, True, rows=4096, tokens=512),  # T/16 tokens
            row(
                "policy_loss/vanilla",
                "policy_loss",
                "vanilla",
                0.01,
                3.0,
                False,
                ("loss/vanilla_fwd_bwd", 6.403),
                rows=8,
                tokens=16,
            ),
        ],
    }


def _verl_doc():
    def row(label, eager, comp, rows=4096, tokens=8192, comp_status="ok"):
        r = {
            "label": label,
            "family": "f",
            "name": "n",
            "rows": rows,
            "tokens": tokens,
            "eager_status": "ok",
            "eager_ms": eager,
            "compile_status": comp_status,
            "status": "ok",
        }
        if comp is not None:
            r["compile_ms"] = comp
        if (rows, tokens) == (4096, 8192):
            r["anchor_verl_0_9_0_ms"] = 1.5
        return r

    return {
        "schema": "verlconf-bench-verl/1",
        "status": "ok",
        "verl_version": "0.9.1",
        "torch_version": "2.11.0",
        "device": {"name": "Fake GPU"},
        "stubs": ["omegaconf", "ray"],
        "shapes": [[4096, 8192], [8, 16]],
        "rows": [
            row("loss/vanilla_fwd_bwd", 6.0, 2.0),
            row("rc/token_is", 10.0, 0.2),  # compiled verl beats cuda (0.3 ms) here
            row("adv/grpo", 200.0, None, comp_status="not compiled: loops"),  # verl only
            row("adv/gae", 1000.0, None, comp_status="not run (budget)"),
            row("loss/vanilla_fwd_bwd", 0.5, None, rows=8, tokens=16, comp_status="not run (budget)"),
        ],
    }


def _table_row(text: str, label: str, section: str) -> list:
    part = text.split(section, 1)[1].split("\n## ", 1)[0]
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label} under {section}:\n{part}")


class RatioTableTest(unittest.TestCase):
    def run_table(self, cuda, verl):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "table.md")
            args = ["--out", out]
            if cuda is not None:
                args += ["--cuda", _write(d, "cuda.json", cuda) if isinstance(cuda, dict) else cuda]
            if verl is not None:
                args += ["--verl", _write(d, "verl.json", verl) if isinstance(verl, dict) else verl]
            p = subprocess.run([sys.executable, RATIO_TABLE] + args, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, encoding="utf-8") as f:
                self.assertEqual(f.read(), p.stdout)
            return p.stdout

    def test_both_present(self):
        t = self.run_table(_cuda_doc(), _verl_doc())
        anchor = "## B=4096 x T=8192"
        # matched through anchor.row: cuda's policy_loss/vanilla is the anchor's loss/vanilla_fwd_bwd
        self.assertEqual(
            _table_row(t, "loss/vanilla_fwd_bwd", anchor),
            ["loss/vanilla_fwd_bwd", "0.2000", "1.20", "yes", "6.000", "2.000", "30.0x", "10.0x", "6.403"],
        )
        self.assertEqual(
            _table_row(t, "rc/token_is", anchor)[1:8], ["0.3000", "1.80", "NO", "10.000", "0.2000", "33.3x", "0.7x"]
        )
        # rows on one side only
        self.assertEqual(_table_row(t, "kl/full", anchor)[4:8], ["-", "-", "-", "-"])
        self.assertEqual(_table_row(t, "kl/full+", anchor)[1], "raises")
        self.assertEqual(_table_row(t, "kl/abs", anchor)[1:4], ["3.000 (host)", "-", "-"])
        self.assertEqual(_table_row(t, "adv/grpo", anchor)[1:8], ["-", "-", "-", "200.000", "not compiled", "-", "-"])
        self.assertEqual(_table_row(t, "adv/gae", anchor)[5], "not run (budget)")
        self.assertEqual(_table_row(t, "adv/gae", anchor)[8], "1.500")  # verl's own anchor figure as fallback
        # the T/16 entry belongs to the anchor shape, not a shape of its own
        self.assertIn("entropy/x", t.split(anchor, 1)[1].split("\n## ", 1)[0])
        self.assertNotIn("T=512", t)
        # the small shape has no anchor column
        small = _table_row(t, "loss/vanilla_fwd_bwd", "## B=8 x T=16")
        self.assertEqual(
            small, ["loss/vanilla_fwd_bwd", "0.0100", "3.00", "NO", "0.5000", "not run (budget)", "50.0x", "-"]
        )
        self.assertIn(
            "Summary (B=4096 x T=8192): cuda faster than compiled verl in 1 of 2 rows timed both ways, "
            "faster than eager verl in 2 of 2; 3 of 4 cuda rows within target.",
            t,
        )
        self.assertIn(
            "Summary (all shapes): cuda faster than compiled verl in 1 of 2 rows timed both ways, "
            "faster than eager verl in 3 of 3; 3 of 5 cuda rows within target.",
            t,
        )
        self.assertIn("stubbed modules: omegaconf, ray", t)

    def test_the_configured_rollout_correction_rows(self):
        # The H200 run's gap: the four configured anchor rows were last in cuda_bench's
        # plan and its budget cut them. Measured, each has its CUDA row (matched by the
        # anchor label both sides use); cut, the cell says why.
        labels = ["rc/token_is", "rc/sequence_is", "rc/token_icepop", "rc/token_is_batchnorm"]
        fn = "compute_rollout_correction_weights"

        def cuda_row(label, ms):
            return {
                "label": label,
                "family": "rollout_correction",
                "name": fn,
                "rows": 4096,
                "tokens": 8192,
                "status": "ok",
                "ms": ms,
                "roofline_ms": 0.172,
                "ratio_to_roofline": ms / 0.172,
                "meets_target": False,
                "anchor": {"row": label, "verl_eager_ms": 9.0, "shape_matches": True},
            }

        def verl_row(label):
            return {
                "label": label,
                "family": "rollout_correction",
                "name": fn,
                "rows": 4096,
                "tokens": 8192,
                "eager_status": "ok",
                "eager_ms": 6.0,
                "compile_status": "ok",
                "compile_ms": 2.0,
                "status": "ok",
            }

        verl = dict(_verl_doc(), shapes=[[4096, 8192]], rows=[verl_row(x) for x in labels])
        cuda = dict(_cuda_doc(), shapes=[[4096, 8192]], results=[cuda_row(x, 3.0) for x in labels])
        t = self.run_table(cuda, verl)
        for label in labels:
            self.assertEqual(
                _table_row(t, label, "## B=4096 x T=8192")[1:8],
                ["3.000", "17.44", "NO", "6.000", "2.000", "2.0x", "0.7x"],
            )
        cuda = dict(
            _cuda_doc(),
            shapes=[[4096, 8192]],
            results=[cuda_row(labels[0], 3.0)],
            not_run_budget=[x + "@4096x8192" for x in labels[1:]],
        )
        t = self.run_table(cuda, verl)
        self.assertEqual(_table_row(t, labels[0], "## B=4096 x T=8192")[1], "3.000")
        for label in labels[1:]:
            self.assertEqual(_table_row(t, label, "## B=4096 x T=8192")[1:4], ["not run (budget)", "-", "-"])

    def test_cuda_skipped(self):
        cuda = {"schema": "verlconf-cuda-bench/2", "status": "skipped", "reason": "no CUDA device"}
        t = self.run_table(cuda, _verl_doc())
        self.assertIn("cuda_bench: skipped (no CUDA device)", t)
        self.assertEqual(
            _table_row(t, "loss/vanilla_fwd_bwd", "## B=4096 x T=8192")[1:8],
            ["-", "-", "-", "6.000", "2.000", "-", "-"],
        )
        self.assertIn("in 0 of 0 rows timed both ways", t)

    def test_verl_absent(self):
        t = self.run_table(_cuda_doc(), "/nonexistent/bench_verl.json")
        self.assertIn("bench_verl: absent (/nonexistent/bench_verl.json)", t)
        self.assertEqual(_table_row(t, "loss/vanilla_fwd_bwd", "## B=4096 x T=8192")[4:], ["-", "-", "-", "-", "6.403"])

    def test_bad_json(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.json")
            with open(p, "w") as f:
                f.write("{not json")
            r = subprocess.run([sys.executable, RATIO_TABLE, "--cuda", p], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            r = subprocess.run(
                [sys.executable, RATIO_TABLE, "--verl", _write(d, "c.json", _cuda_doc())],
                capture_output=True,
                text=True,
            )
            self.assertEqual(r.returncode, 1)  # a cuda_bench JSON given as bench_verl's


class BenchVerlArgsTest(unittest.TestCase):
    def test_bad_flags_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            whl = os.path.join(d, "verl-0.9.1-py3-none-any.whl")
            open(whl, "w").close()
            bad = [
                [],  # neither --verl-wheel nor --verl-site
                ["--verl-wheel", os.path.join(d, "missing.whl")],
                ["--verl-wheel", whl, "--verl-site", d],
                ["--verl-site", d],  # no verl package there
                ["--verl-wheel", whl, "--shapes", "4x"],
                ["--verl-wheel", whl, "--shapes", "0x5"],
                ["--verl-wheel", whl, "--repeats", "0"],
                ["--verl-wheel", whl, "--repeats", "x"],
                ["--verl-wheel", whl, "--modes", "eager,jit"],
                ["--verl-wheel", whl, "--only", "adv/nosuch"],
                ["--verl-wheel", whl, "--device", "tpu"],
                ["--verl-wheel", whl, "--budget-s", "-1"],
                ["--verl-wheel", whl, "--json", ""],
                ["--verl-wheel", whl, "--bogus"],
            ]
            for args in bad:
                # a fresh interpreter without torch: the checks come before any import of it
                p = subprocess.run([sys.executable, BENCH_VERL] + args, capture_output=True, text=True)
                self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
                self.assertIn("bench_verl.py:", p.stderr, args)
            a = bv.parse_args(["--verl-wheel", whl, "--only", "rc/token_is+token_k1,seq_mean_k3,kl,adv/gae"])
            self.assertEqual(
                a.only_list,
                [
                    "rc/token_is+token_k1,seq_mean_k3",
                    "kl/kl",
                    "kl/abs",
                    "kl/mse",
                    "kl/low_var_kl",
                    "kl/low_var_kl+_fwd_bwd",
                    "adv/gae",
                ],
            )
            self.assertEqual(a.shape_list, [(4096, 8192), (1024, 2048), (256, 512)])
            self.assertEqual(a.budget_s, 240.0)

    def test_device_names_carry_an_index(self):
        with tempfile.TemporaryDirectory() as d:
            whl = os.path.join(d, "verl-0.9.1-py3-none-any.whl")
            open(whl, "w").close()
            for given, want in [("cuda", "cuda:0"), ("cuda:0", "cuda:0"), ("cuda:3", "cuda:3"), ("cpu", "cpu")]:
                self.assertEqual(bv.parse_args(["--verl-wheel", whl, "--device", given]).device, want, given)
            for bad in ["cuda:", "cuda:x", "cuda0", "gpu", "cpu:0"]:
                with self.assertRaises(bv.UsageError, msg=bad):
                    bv.normalize_device(bad)

    def test_select_device_hands_torch_an_index(self):
        class FakeCuda:
            def __init__(self, count):
                self.count, self.current = count, None

            def is_available(self):
                return self.count > 0

            def device_count(self):
                return self.count

            def set_device(self, dev):
                # As torch does: a device without an index is refused.
                if not isinstance(dev, int):
                    raise ValueError("Expected a torch.device with a specified index or an integer")
                self.current = dev

            def get_device_name(self, dev):
                return "Fake GPU %d" % dev

        def fake_torch(count):
            return types.SimpleNamespace(cuda=FakeCuda(count), version=types.SimpleNamespace(cuda="13.0"))

        t = fake_torch(2)
        dev = bv.select_device(t, bv.normalize_device("cuda"))
        self.assertEqual((t.cuda.current, dev["index"], dev["name"]), (0, 0, "Fake GPU 0"))
        t = fake_torch(2)
        self.assertEqual(bv.select_device(t, "cuda:1")["name"], "Fake GPU 1")
        self.assertEqual(t.cuda.current, 1)
        self.assertEqual(bv.select_device(fake_torch(2), "cuda:2")["status"], "skipped")
        self.assertEqual(bv.select_device(fake_torch(0), "cuda:0")["status"], "skipped")
        self.assertEqual(bv.select_device(fake_torch(0), "cpu"), {"type": "cpu"})

    def test_rows_are_the_anchors(self):
        self.assertEqual(len(bv.LABELS), 53)
        self.assertEqual(len(set(bv.LABELS)), 53)
        not_compiled = [r[0] for r in bv.ANCHOR_ROWS if r[4]]
        self.assertIn("adv/gae", not_compiled)
        self.assertNotIn("adv/grpo_vectorized", not_compiled)


class StubFinderTest(unittest.TestCase):
    def setUp(self):
        self.finder = bv.StubFinder(["verlconf_fake_missing", "json"])
        sys.meta_path.append(self.finder)

    def tearDown(self):
        sys.meta_path.remove(self.finder)
        for m in [m for m in sys.modules if m.startswith("verlconf_fake")]:
            del sys.modules[m]

    def test_stub_module(self):
        import json as real_json  # listed, but real: the finder is only asked what no one else finds

        self.assertTrue(hasattr(real_json, "dumps") and not isinstance(real_json, bv.StubModule))
        from verlconf_fake_missing.sub import DictConfig, remote  # noqa: F401
        import verlconf_fake_missing

        self.assertIsInstance(verlconf_fake_missing, bv.StubModule)
        self.assertFalse(isinstance({}, DictConfig))
        self.assertFalse(isinstance(DictConfig(), verlconf_fake_missing.DictConfig))  # a class per name

        @remote
        def f():
            return 7

        self.assertEqual(f(), 7)  # used as a decorator, the stub hands the function back
        self.assertIs(DictConfig[str, int], DictConfig)
        with verlconf_fake_missing.open_dict(None):
            pass
        self.assertEqual(self.finder.stubbed, ["verlconf_fake_missing", "verlconf_fake_missing.sub"])
        with self.assertRaises(ImportError):
            import verlconf_fake_unlisted  # noqa: F401


class SimulateBareTest(unittest.TestCase):
    def test_filter_hides_a_present_module(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "verlconf_fake_present.py"), "w") as f:
                f.write("X = 1\n")
            sys.path.insert(0, d)
            saved = list(sys.meta_path)
            try:
                sys.meta_path[:] = [
                    bv._BareFilter(f, {"verlconf_fake_present"}, set()) if f is importlib.machinery.PathFinder else f
                    for f in saved
                ]
                importlib.invalidate_caches()
                with self.assertRaises(ImportError):
                    import verlconf_fake_present  # noqa: F401
                sys.meta_path[:] = saved
                import verlconf_fake_present  # noqa: F401,F811

                self.assertEqual(verlconf_fake_present.X, 1)
            finally:
                sys.meta_path[:] = saved
                sys.path.remove(d)
                sys.modules.pop("verlconf_fake_present", None)


class LoadVerlTest(unittest.TestCase):
    def test_fake_tree(self):
        files = {
            "verl/__init__.py": "raise RuntimeError('verl/__init__.py must not run')\n",
            "verl/trainer/__init__.py": "",
            "verl/trainer/ppo/__init__.py": "",
            "verl/trainer/ppo/core_algos.py": "from verlconf_fake_dep import DictConfig\nX = 1\n",
            "verl/trainer/ppo/rollout_corr_helper.py": "",
            "verl/trainer/config/__init__.py": "",
            "verl/trainer/config/algorithm.py": "",
            "verl/utils/__init__.py": "",
            "verl/utils/torch_functional.py": "",
            "verl/workers/__init__.py": "",
            "verl/workers/config/__init__.py": "",
            "verl/workers/config/actor.py": "",
            "verl-0.9.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: verl\nVersion: 0.9.1\n",
        }
        saved_stubbable, saved_path = bv.STUBBABLE, list(sys.path)
        with tempfile.TemporaryDirectory() as d:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(text)
            bv.STUBBABLE = ("verlconf_fake_dep",)
            try:
                mods, info = bv.load_verl(d)
            finally:
                bv.STUBBABLE = saved_stubbable
                sys.path[:] = saved_path
                for f in [f for f in sys.meta_path if isinstance(f, bv.StubFinder)]:
                    sys.meta_path.remove(f)
                for m in [m for m in sys.modules if m.split(".")[0] in ("verl", "verlconf_fake_dep")]:
                    del sys.modules[m]
        self.assertEqual(mods["core_algos"].X, 1)
        self.assertIsInstance(mods["verl"], types.ModuleType)
        self.assertEqual(info["verl_version"], "0.9.1")
        self.assertEqual(info["stubs"], ["verlconf_fake_dep"])
        self.assertTrue(info["skipped_inits"][0].startswith("verl/__init__.py"))
        self.assertTrue(any(line.startswith("stubbed: verlconf_fake_dep") for line in bv.describe_stubs(info)))


if __name__ == "__main__":
    unittest.main()
