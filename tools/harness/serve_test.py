"""The adapter server (verlconf.serve) as `conform explore` meets it, through a pipe.

On the numpy example: the hello line, round trips whose results are bit for bit those of
calling the example's functions directly (NaN, infinities and -0.0 included), a function
the adapter does not provide, and malformed lines answered without ending the session.
Then small adapters written by the tests: an exception raised in the framework against
one raised in the adapter file, declining, the config value types an adapter sees, a
contract problem, prints (Python's and a C-level write to descriptor 1) that must not
reach the channel, and adapters that cannot be loaded. No torch: numpy only.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

CONFORM = os.path.abspath(sys.argv.pop(1))
HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "serve_adapter.py")
ADAPTERS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "adapters")
GOLDENS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "verl-0.9.1")

EXAMPLE = sorted(
    ["advantage/grpo", "advantage/gae", "policy_loss/vanilla", "kl/k1", "kl/kl", "kl/k3", "kl/low_var_kl"]
    + ["policy_loss/actor_kl_loss", "rollout_correction/token_k1"]
    + [
        "aggregation/" + m
        for m in ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
    ]
)


def enc(a):
    a = np.asarray(a)
    return {
        "dtype": a.dtype.name,
        "shape": list(a.shape),
        "b64": base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode("ascii"),
    }


def dec(obj):
    le = np.dtype(obj["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(obj["b64"]), dtype=le).reshape(obj["shape"]).astype(obj["dtype"])


def same_bits(test, got, want, what):
    want = np.asarray(want)
    test.assertEqual(got.dtype, want.dtype, what)
    test.assertEqual(got.shape, want.shape, what)
    test.assertEqual(got.tobytes(), want.tobytes(), what)


def tmpdir():
    return tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR"))


class Session:
    """One server process; request() sends a line and reads the answer."""

    def __init__(self, adapter, spec, env=None, args=None):
        self.p = subprocess.Popen(
            [sys.executable, SERVER] + (args if args is not None else ["--adapter", adapter, "--spec", spec]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ, VERLCONF_EXAMPLE_BUG="", **(env or {})),
        )
        self.hello = json.loads(self.p.stdout.readline())

    def send(self, line):
        self.p.stdin.write(line if isinstance(line, bytes) else line.encode("utf-8"))
        self.p.stdin.write(b"\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def request(self, **req):
        return self.send(json.dumps(req))

    def close(self):
        """End of input: the exit status and what went to stderr."""
        _, err = self.p.communicate(timeout=60)
        return self.p.returncode, err.decode("utf-8", "replace")


def grpo_request(rid, rng, dtype="float64"):
    rewards = rng.normal(size=(8, 16)).astype(dtype)
    mask = (rng.random((8, 16)) < 0.8).astype(dtype)
    index = np.arange(8, dtype=np.int64) // 3
    inputs = {"token_level_rewards": rewards, "response_mask": mask, "index": index}
    req = {
        "id": rid,
        "function": "advantage/grpo",
        "case": "g",
        "dtype": dtype,
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "config": {"epsilon": 1e-6, "norm_adv_by_std_in_grpo": True},
    }
    return req, inputs, {"epsilon": 1e-6, "norm_adv_by_std_in_grpo": 1}


class Example(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tmpdir()
        cls.spec = os.path.join(cls._tmp.name, "spec.json")
        with open(cls.spec, "w") as f:
            f.write(subprocess.run([CONFORM, "spec", "--json"], check=True, capture_output=True, text=True).stdout)
        if ADAPTERS not in sys.path:
            sys.path.insert(0, ADAPTERS)
        os.environ["VERLCONF_EXAMPLE_BUG"] = ""
        import numpy_example_impl

        cls.impl = numpy_example_impl
        cls.s = Session("numpy_example", cls.spec)

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        cls._tmp.cleanup()

    def test_hello(self):
        h = self.s.hello
        self.assertTrue(h["ok"], h)
        self.assertEqual(h["adapter"], "numpy_example")
        self.assertEqual(h["functions"], EXAMPLE)
        self.assertEqual(h["versions"]["numpy_version"], np.__version__)
        self.assertEqual(h["versions"]["harness_numpy_version"], np.__version__)
        self.assertIn("harness_python_version", h["versions"])

    def test_grpo_round_trip_is_bit_exact(self):
        rng = np.random.default_rng(1)
        for rid, dtype in ((1, "float64"), (2, "float32")):
            req, inputs, cfg = grpo_request(rid, rng, dtype)
            r = self.s.request(**req)
            self.assertEqual((r["id"], r["kind"], r["problems"], r["error"]), (rid, "result", [], None), r)
            want = self.impl.grpo(inputs, cfg, dtype)["outputs"]
            self.assertEqual(sorted(r["outputs"]), ["advantages", "returns"])
            for k, v in want.items():
                same_bits(self, dec(r["outputs"][k]), v, f"{dtype} {k}")

    def test_vanilla_grads_and_metrics_are_bit_exact(self):
        rng = np.random.default_rng(2)
        shape = (4, 8)
        inputs = {
            "old_log_prob": rng.normal(size=shape),
            "log_prob": rng.normal(size=shape),
            "advantages": rng.normal(size=shape),
            "response_mask": np.ones(shape),
        }
        inputs["response_mask"][0] = 0.0
        cfg = {k: None for k in ("clip_ratio_low", "clip_ratio_high", "dp_size", "batch_num_tokens")}
        cfg.update(clip_ratio=0.2, clip_ratio_c=3.0, loss_agg_mode="seq-mean-token-mean")
        cfg.update(global_batch_size=None, loss_scale_factor=None)
        r = self.s.request(
            id=7,
            function="policy_loss/vanilla",
            case="v",
            dtype="float64",
            inputs={k: enc(v) for k, v in inputs.items()},
            config={k: v for k, v in cfg.items() if v is not None},
        )
        self.assertEqual((r["kind"], r["problems"]), ("result", []), r)
        want = self.impl.vanilla(inputs, cfg, "float64")
        same_bits(self, dec(r["outputs"]["pg_loss"]), want["outputs"]["pg_loss"], "pg_loss")
        same_bits(self, dec(r["grads"]["log_prob"]), want["grads"]["log_prob"], "grad")
        self.assertEqual(sorted(r["metrics"]), sorted(want["metrics"]))
        for k, v in want["metrics"].items():
            m = dec(r["metrics"][k])
            self.assertEqual(m.shape, ())
            same_bits(self, m, np.float64(v), k)

    def test_non_finite_and_negative_zero_survive(self):
        lp = np.array([[0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310]])
        ref = np.array([[-0.0, 0.0, 1.0, 1.0, 1.0, 0.0]])
        proj = np.array([[1.0, -1.0, 2.0, 0.5, -0.0, 3.0]])
        r = self.s.request(
            id=8,
            function="kl/k1",
            case="edges",
            dtype="float64",
            inputs={"logprob": enc(lp), "ref_logprob": enc(ref)},
            config={},
            projections={"kl": enc(proj)},
        )
        self.assertEqual((r["kind"], r["problems"]), ("result", []), r)
        want = self.impl.k1({"logprob": lp, "ref_logprob": ref}, {}, "float64", projections={"kl": proj})
        same_bits(self, dec(r["outputs"]["kl"]), want["outputs"]["kl"], "kl")
        same_bits(self, dec(r["vjps"]["kl/logprob"]), want["vjps"]["kl/logprob"], "vjp")
        self.assertTrue(np.signbit(dec(r["outputs"]["kl"])[0, 1]), "-0.0 - 0.0 is -0.0, and arrives so")

    def test_every_golden_case_as_the_harness_computes_it(self):
        # The golden's config sent as JSON reaches the adapter with the types and values
        # run_candidate gives it, so every outcome is the harness's, bit for bit.
        from verlconf import adapter_call, adapter_keys, h5schema, registry_spec, run_candidate

        with open(self.spec) as f:
            entries = registry_spec.by_key(json.load(f))
        adapter = adapter_keys.load_adapter("numpy_example", entries)
        rid = 1000
        seen = set()
        for path in sorted(os.listdir(GOLDENS)):
            golden = h5schema.read_fixture_file(os.path.join(GOLDENS, path))
            family = golden.attrs["family"]
            for (fn, cn), g in sorted(golden.cases.items()):
                if (family, fn) not in adapter.functions:
                    continue
                rid += 1
                seen.add(f"{family}/{fn}")
                req = {
                    "id": rid,
                    "function": f"{family}/{fn}",
                    "case": cn,
                    "dtype": g.dtype,
                    "inputs": {k: enc(v) for k, v in g.inputs.items()},
                    "config": g.cfg,
                }
                if g.projections:
                    req["projections"] = {k: enc(v) for k, v in g.projections.items()}
                r = self.s.request(**req)
                entry = entries[(family, fn)]
                want = adapter_call.call(
                    adapter.functions[(family, fn)],
                    adapter.path,
                    f"{fn}/{cn}",
                    entry,
                    g.inputs,
                    run_candidate._config(entry, g.cfg),
                    g.dtype,
                    g.projections or None,
                    framework=adapter.framework,
                )
                where = f"{family}/{fn}/{cn}"
                self.assertEqual(
                    (r["id"], r["kind"], r["error"], r["declined"]), (rid, want.kind, want.error, want.declined), where
                )
                self.assertEqual(r["problems"], want.problems, where)
                for group in ("outputs", "grads", "vjps"):
                    self.assertEqual(sorted(r[group]), sorted(getattr(want, group)), where)
                    for k, v in getattr(want, group).items():
                        same_bits(self, dec(r[group][k]), v, f"{where} {group}/{k}")
                self.assertEqual(sorted(r["metrics"]), sorted(want.metrics), where)
                for k, v in want.metrics.items():
                    same_bits(self, dec(r["metrics"][k]), np.float64(v), f"{where} metrics/{k}")
        self.assertEqual(sorted(seen), EXAMPLE)

    def test_not_provided_is_declined(self):
        t = enc(np.zeros((2, 3)))
        r = self.s.request(
            id=9,
            function="advantage/rloo",
            case="x",
            dtype="float64",
            inputs={"token_level_rewards": t, "response_mask": t, "index": enc(np.zeros(2, dtype=np.int64))},
            config={},
        )
        self.assertEqual((r["id"], r["kind"], r["declined"]), (9, "declined", "not provided by the adapter"), r)
        self.assertEqual(r["outputs"], {})

    def test_malformed_lines_are_answered_and_serving_goes_on(self):
        ok, _, _ = grpo_request(20, np.random.default_rng(3))
        bad = [
            (b"not json", None, "not a JSON line"),
            (b"[1, 2]", None, "not a request object"),
            (b"\xff\xfe", None, "not a JSON line"),
            (json.dumps({**ok, "id": "x"}), None, "not an integer"),
            (json.dumps({**ok, "function": "grpo"}), 20, "names no registry function"),
            (json.dumps({**ok, "dtype": "float16"}), 20, "'dtype'"),
            (json.dumps({**ok, "config": {"epsilon": 1e-6, "typo": 1}}), 20, "typo"),
            (json.dumps({**ok, "config": {"norm_adv_by_std_in_grpo": "yes"}}), 20, "norm_adv_by_std_in_grpo"),
            (json.dumps({**ok, "extra": 1}), 20, "unknown request key"),
            (json.dumps({**ok, "inputs": {**ok["inputs"], "index": enc(np.zeros(8))}}), 20, "float64 where"),
            (json.dumps({**ok, "inputs": {k: v for k, v in ok["inputs"].items() if k != "index"}}), 20, "index"),
            (
                json.dumps({**ok, "inputs": {**ok["inputs"], "index": {**ok["inputs"]["index"], "b64": "@@"}}}),
                20,
                "b64",
            ),
            (
                json.dumps({**ok, "inputs": {**ok["inputs"], "index": {**ok["inputs"]["index"], "shape": [9]}}}),
                20,
                "bytes",
            ),
            (json.dumps({**ok, "projections": {"nope": enc(np.zeros(1))}}), 20, "not an output"),
        ]
        for line, rid, needle in bad:
            r = self.s.send(line)
            self.assertEqual((r["id"], r["kind"]), (rid, "protocol"), (line, r))
            self.assertTrue(any(needle in p for p in r["problems"]), (needle, r))
        r = self.s.request(**ok)
        self.assertEqual((r["id"], r["kind"]), (20, "result"), r)


SCRATCH_FRAMEWORK = """
import os
import numpy as np

def boom(inputs, cfg, dtype):
    raise ValueError("the framework refuses")

def loud(inputs, cfg, dtype):
    print("chatter on stdout")
    os.write(1, b"a C extension's printf\\n")
    return {"outputs": {"kl": inputs["logprob"] - inputs["ref_logprob"]}}
"""

SCRATCH_ADAPTER = """
import numpy as np
import framework
from verlconf_harness import Decline

name = "scratch"
print("importing the adapter prints too")

def versions():
    return {"framework_version": "0.1", "harness_python_version": "mine"}

def glue(inputs, cfg, dtype):
    return {"outputs": {"kl": inputs["misspelled"]}}

def nyi(inputs, cfg, dtype):
    raise NotImplementedError("later")

def decline(inputs, cfg, dtype):
    raise Decline("not this one")

def none(inputs, cfg, dtype):
    return None

def types(inputs, cfg, dtype):
    # The value types the adapter was handed, as a metric code per key.
    code = {int: 1.0, float: 2.0, str: 3.0, type(None): 4.0}
    return {"metrics": {"actor/pg_clipfrac": sum(code[type(v)] * 10.0 ** i for i, v in enumerate(cfg.values()))},
            "outputs": {"pg_loss": np.float64(len(cfg))}}

def wrong_field(inputs, cfg, dtype):
    return {"outputs": {"kls": inputs["logprob"]}}

FUNCTIONS = {
    "k1": framework.boom,
    "k2": glue,
    "k3": nyi,
    "kl": decline,
    "abs": none,
    "mse": wrong_field,
    "low_var_kl": framework.loud,
    "vanilla": types,
}
"""


class Scratch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tmpdir()
        d = cls._tmp.name
        cls.spec = os.path.join(d, "spec.json")
        with open(cls.spec, "w") as f:
            f.write(subprocess.run([CONFORM, "spec", "--json"], check=True, capture_output=True, text=True).stdout)
        with open(cls.spec) as f:
            cls.entries = {(e["family"], e["name"]): e for e in json.load(f)["functions"]}
        cls.dir = os.path.join(d, "adapter")
        os.makedirs(cls.dir)
        for name, src in (("framework", SCRATCH_FRAMEWORK), ("scratch_adapter", SCRATCH_ADAPTER)):
            with open(os.path.join(cls.dir, name + ".py"), "w") as f:
                f.write(textwrap.dedent(src))
        cls.s = Session(os.path.join(cls.dir, "scratch_adapter.py"), cls.spec)

    def adapter_file(self, folder, fname, src):
        """Writes `src` (dedented) to a fresh scratch folder; its path."""
        d = os.path.join(self._tmp.name, folder)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, fname)
        with open(path, "w") as f:
            f.write(textwrap.dedent(src))
        return path

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def kl(self, rid, function):
        x = enc(np.zeros((2, 3)))
        return self.s.request(
            id=rid, function=function, case="c", dtype="float64", inputs={"logprob": x, "ref_logprob": x}, config={}
        )

    def test_outcomes_as_adapter_call_judges_them(self):
        h = self.s.hello
        self.assertTrue(h["ok"], h)
        self.assertEqual(h["versions"]["framework_version"], "0.1")
        self.assertEqual(h["versions"]["adapter_harness_python_version"], "mine")
        self.assertNotEqual(h["versions"]["harness_python_version"], "mine")

        r = self.kl(1, "kl/k1")
        self.assertEqual((r["kind"], r["error"]), ("raised", "ValueError: the framework refuses"), r)
        r = self.kl(2, "kl/k2")
        self.assertEqual(r["kind"], "adapter", r)
        self.assertTrue(r["error"].startswith("AdapterError: KeyError: 'misspelled' (adapter line "), r)
        r = self.kl(3, "kl/k3")
        self.assertEqual((r["kind"], r["declined"]), ("declined", "NotImplementedError: later"), r)
        r = self.kl(4, "kl/kl")
        self.assertEqual((r["kind"], r["declined"]), ("declined", "not this one"), r)
        r = self.kl(5, "kl/abs")
        self.assertEqual((r["kind"], r["declined"]), ("declined", "the adapter returned None"), r)
        r = self.kl(6, "kl/mse")
        self.assertEqual(r["kind"], "result", r)
        self.assertEqual(len(r["problems"]), 1, r)
        self.assertIn("mse/c: outputs/kls: not a field of kl/mse", r["problems"][0])

        # Prints go to stderr; the channel carries the result.
        r = self.kl(7, "kl/low_var_kl")
        self.assertEqual((r["id"], r["kind"]), (7, "result"), r)
        same_bits(self, dec(r["outputs"]["kl"]), np.zeros((2, 3)), "kl")

        # The config value types: JSON integers ints, true/false the fixture's 0/1 ints,
        # numbers with a fraction floats, strings strings, a key left out None.
        keys = [k["name"] for k in self.entries[("policy_loss", "vanilla")]["config"]]
        sent = {"clip_ratio": 0.2, "clip_ratio_c": 3.0, "loss_agg_mode": "token-mean", "dp_size": 1}
        sent["loss_scale_factor"] = 100  # a float key with an integer value stays an int, as in a golden
        x = enc(np.zeros((1, 2)))
        r = self.s.request(
            id=8,
            function="policy_loss/vanilla",
            case="c",
            dtype="float64",
            inputs={"old_log_prob": x, "log_prob": x, "advantages": x, "response_mask": x},
            config=sent,
        )
        self.assertEqual(r["kind"], "result", r)
        self.assertEqual(float(dec(r["outputs"]["pg_loss"])), len(keys))
        code = {int: 1, float: 2, str: 3, type(None): 4}
        want = sum(code[type(sent.get(k))] * 10**i for i, k in enumerate(keys))
        self.assertEqual(float(dec(r["metrics"]["actor/pg_clipfrac"])), want)

        self.s.p.stdin.close()
        self.assertEqual(self.s.p.wait(timeout=60), 0)
        err = self.s.p.stderr.read().decode("utf-8", "replace")
        for printed in ("importing the adapter prints too", "chatter on stdout", "a C extension's printf"):
            self.assertIn(printed, err)
        self.assertEqual(self.s.p.stdout.read(), b"")

    def test_a_sharded_call_goes_to_the_shard_hook(self):
        path = self.adapter_file(
            "hook",
            "h_adapter.py",
            """
            import numpy as np
            name = "h"
            def versions():
                return {}
            def plain(inputs, cfg, dtype):
                return {"outputs": {"loss": np.float64(-1.0)}}
            def hook(inputs, cfg, dtype, shard):
                # The context as numbers the test can read back.
                code = (shard.rank, shard.dp_size, shard.micro_batch, shard.micro_batches, shard.horizon,
                        shard.batch_size, shard.batch_num_tokens, shard.global_batch_size)
                return {"outputs": {"loss": np.float64(sum(v * 10.0 ** i for i, v in enumerate(code)))},
                        "grads": {"loss_mat": shard.rank_inputs["loss_mask"] + sum(shard.rows)}}
            FUNCTIONS = {"token-mean": plain}
            SHARD = {"token-mean": hook}
            """,
        )
        s = Session(path, self.spec)
        x = enc(np.ones((2, 3)))
        shard = {
            "rank": 1, "dp_size": 2, "micro_batch": 0, "micro_batches": 1, "horizon": 3, "batch_size": 4,
            "batch_num_tokens": 5, "global_batch_size": 4, "rows": [2, 3], "rank_rows": [2, 3],
            "rank_inputs": {"loss_mask": x},
        }  # fmt: skip
        base = dict(function="aggregation/token-mean", case="c", dtype="float64", config={})
        base["inputs"] = {"loss_mat": x, "loss_mask": x}
        r = s.request(id=1, **base)
        self.assertEqual(float(dec(r["outputs"]["loss"])), -1.0, r)  # no shard: the function
        r = s.request(id=2, shard=shard, **base)
        self.assertEqual(r["kind"], "result", r)
        self.assertEqual(float(dec(r["outputs"]["loss"])), 45431021.0)  # digits: the fields, in order
        same_bits(self, dec(r["grads"]["loss_mat"]), np.full((2, 3), 6.0), "grads")
        r = s.request(id=3, shard=dict(shard, rank=2, rows="x", extra=1), **base)
        self.assertEqual(r["kind"], "protocol", r)
        self.assertEqual(
            r["problems"],
            ["shard: unknown key(s) extra", "shard/rows: not a list of non-negative integers"],
        )
        r = s.request(id=4, shard=dict(shard, rank=2), **base)
        self.assertEqual(r["problems"], ["shard: rank or micro_batch beyond dp_size or micro_batches"])
        self.assertEqual(s.close()[0], 0)

    def test_booleans_arrive_as_ints(self):
        path = self.adapter_file(
            "bools",
            "b_adapter.py",
            """
            import numpy as np
            name = "b"
            def versions():
                return {}
            def grpo(inputs, cfg, dtype):
                v = cfg["norm_adv_by_std_in_grpo"]
                assert type(v) is int, type(v)
                return {"outputs": {"advantages": np.full((1, 1), float(v))}}
            FUNCTIONS = {"grpo": grpo}
            """,
        )
        s = Session(path, self.spec)
        x = enc(np.zeros((1, 1)))
        for rid, value in ((1, True), (2, False), (3, 1)):
            r = s.request(
                id=rid,
                function="advantage/grpo",
                case="c",
                dtype="float64",
                inputs={"token_level_rewards": x, "response_mask": x, "index": enc(np.zeros(1, dtype=np.int64))},
                config={"norm_adv_by_std_in_grpo": value},
            )
            self.assertEqual(r["kind"], "result", r)
            self.assertEqual(float(dec(r["outputs"]["advantages"])[0, 0]), float(value))
        self.assertEqual(s.close()[0], 0)

    def test_an_adapter_that_cannot_load(self):
        d = os.path.join(self._tmp.name, "broken")
        cases = {
            "typo_adapter.py": (
                "name = 't'\ndef versions():\n    return {}\nFUNCTIONS = {'vanila': print}\n",
                "vanila",
            ),
            "import_adapter.py": ("import no_such_framework_here\n", "No module named 'no_such_framework_here'"),
            "versions_adapter.py": (
                "name = 'v'\ndef versions():\n    raise OSError('x')\nFUNCTIONS = {}\n",
                "versions()",
            ),
        }
        for fname, (src, needle) in cases.items():
            s = Session(self.adapter_file("broken", fname, src), self.spec)
            self.assertFalse(s.hello["ok"], s.hello)
            self.assertTrue(any(needle in p for p in s.hello["problems"]), (needle, s.hello))
            self.assertEqual(s.close()[0], 2)
        for args, needle in (
            ([], "--adapter is required"),
            (["--adapter", "numpy_example", "--spec", self.spec, "--conform", CONFORM], "give one of them"),
            (["--adapter", "numpy_example", "--jobs", "2"], "unknown argument '--jobs'"),
            (["--adapter", "numpy_example", "--conform", os.path.join(d, "nothing")], "no conform binary"),
        ):
            s = Session(None, None, args=args)
            self.assertFalse(s.hello["ok"], s.hello)
            self.assertTrue(any(needle in p for p in s.hello["problems"]), (needle, s.hello))
            self.assertEqual(s.close()[0], 2)
        s = Session(None, None, args=["--adapter", "numpy_example", "--conform", CONFORM])
        self.assertTrue(s.hello["ok"], s.hello)
        self.assertEqual(s.hello["functions"], EXAMPLE)
        self.assertEqual(s.close()[0], 0)
        s = Session("numpy_example", os.path.join(d, "no_such_spec.json"))
        self.assertFalse(s.hello["ok"], s.hello)
        self.assertIn("cannot read the registry spec", s.hello["problems"][0])
        self.assertEqual(s.close()[0], 2)


if __name__ == "__main__":
    unittest.main()
