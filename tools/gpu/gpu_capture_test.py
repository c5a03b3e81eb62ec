"""The GPU capture's torch-free parts, with Debian's python3: capture.py's --dtype and
--device on the numpy example adapter (verl's own capture needs torch and runs outside
CI), gpu_capture_boot.py's wheel selection, unpacking and stubbing on fake wheels, and the
capture's sources: every input is made on the CPU and only then moved to the device.
The capture on a GPU itself runs on the GPU machine only (tools/gpu/gpu_capture.sh)."""

import ast
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import h5py

import gpu_capture_boot  # //tools/gpu:gpu_capture_boot
from verlconf import h5schema

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", os.getcwd()), "verlconf")
FIXTURES = os.path.join(RUNFILES, "fixtures")


def capture(*args):
    p = subprocess.run(
        [sys.executable, os.path.join(FIXTURES, "capture.py"), "--adapter", "numpy_example"] + list(args),
        capture_output=True,
        text=True,
    )
    return p.returncode, p.stdout + p.stderr


def wheel(directory, filename, files):
    with zipfile.ZipFile(os.path.join(directory, filename), "w") as z:
        for name, text in files.items():
            z.writestr(name, text)


class CaptureOptions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def test_dtype_keeps_that_dtype_and_says_so(self):
        out = os.path.join(self.tmp, "f32")
        code, log = capture("--only", "grpo", "--dtype", "float32", "--out", out)
        self.assertEqual(code, 0, log)
        path = os.path.join(out, "advantage.h5")
        # (the numpy example reports no verl registry: a candidate's file may omit it)
        self.assertEqual(h5schema.validate_file(path, expect_family="advantage", require_registry=False), [])
        with h5py.File(path, "r") as f:
            self.assertEqual(f.attrs["dtypes"], "float32")
            dtypes = {f["grpo"][c].attrs["dtype"] for c in f["grpo"]}
            self.assertEqual(dtypes, {"float32"})
            n32 = len(f["grpo"])
        both = os.path.join(self.tmp, "both")
        code, log = capture("--only", "grpo", "--out", both)
        self.assertEqual(code, 0, log)
        with h5py.File(os.path.join(both, "advantage.h5"), "r") as f:
            self.assertEqual(f.attrs["dtypes"], "float64,float32")
            self.assertEqual(len(f["grpo"]), 2 * n32)  # every case has its float64 twin

    def test_a_device_the_adapter_cannot_place_is_refused(self):
        code, log = capture("--only", "grpo", "--device", "cuda", "--out", os.path.join(self.tmp, "x"))
        self.assertEqual(code, 1, log)
        self.assertIn("--device cuda: the adapter numpy_example has no set_device", log)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x", "advantage.h5")))


def _python_sources(*rel_dirs_or_files):
    for rel in rel_dirs_or_files:
        path = os.path.join(RUNFILES, rel)
        if os.path.isfile(path):
            yield rel, path
            continue
        for root, _, files in os.walk(path):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(root, name), RUNFILES), os.path.join(root, name)


def _dotted(node):
    """torch.cuda.manual_seed for that attribute chain; "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id] + parts[::-1]) if isinstance(node, ast.Name) else ""


# torch's ways of drawing random values or making a generator: a case's inputs never come
# from them (verl's own torch.randperm runs inside verl, under torch.manual_seed(0)).
TORCH_DRAWS = {
    "torch." + n
    for n in (
        "Generator rand rand_like randn randn_like randint randint_like randperm normal bernoulli multinomial "
        "poisson cuda.manual_seed cuda.manual_seed_all"
    ).split()
}


class InputsAreMadeOnTheCpu(unittest.TestCase):
    """A case's inputs are the same bits whatever device verl runs on: the catalogue draws
    them with numpy (seeded, CPU) and the verl adapter hands them to verl through one helper,
    _on_device, that copies the CPU array and only then moves it. A generator, a draw or a
    tensor made on a device anywhere in the capture would let the device change the inputs.
    (The capture on the H200 differed in one case's inputs/cov_selected: that input is verl's
    own clip_cov pick, recorded, and verl picked differently on the GPU: its float32 ratio
    on a clip bound rounds differently there, which the CPU-to-H200 drift report reads.)"""

    SOURCES = [
        "fixtures/capture",
        "fixtures/capture.py",
        "fixtures/catalogue",
        "tools/python/verlconf",
        "tools/adapters/verl_adapter.py",
        "tools/adapters/verl_keys.py",
    ]

    def trees(self):
        found = list(_python_sources(*self.SOURCES))
        self.assertTrue(any(rel.endswith("verl_adapter.py") for rel, _ in found), found)
        self.assertTrue(any("/catalogue/" in rel for rel, _ in found), found)
        for rel, path in found:
            with open(path, encoding="utf-8") as f:
                yield rel, ast.parse(f.read(), filename=rel)

    def test_only_the_verl_adapter_imports_torch(self):
        for rel, tree in self.trees():
            if rel.endswith("verl_adapter.py"):
                continue
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                self.assertFalse(
                    any(n == "torch" or n.startswith("torch.") for n in names),
                    f"{rel}:{getattr(node, 'lineno', 0)} imports torch",
                )

    def test_no_draw_and_no_tensor_made_on_a_device(self):
        for rel, tree in self.trees():
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                where = f"{rel}:{node.lineno}"
                self.assertNotIn(_dotted(node.func), TORCH_DRAWS, where + ": a torch draw or generator")
                self.assertFalse(any(k.arg == "device" for k in node.keywords), where + ": a tensor made with device=")
                if isinstance(node.func, ast.Attribute):
                    self.assertNotIn(node.func.attr, ("cuda", "set_default_device"), where + ": a tensor put on a GPU")

    def test_values_reach_the_device_through_one_helper(self):
        # torch.from_numpy, and .to(...) towards the capture's device, only inside
        # verl_adapter._on_device, whose body is that copy and that move.
        (tree,) = [t for rel, t in self.trees() if rel.endswith("verl_adapter.py")]
        helpers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_on_device"]
        self.assertEqual(len(helpers), 1)
        inside = {id(n) for n in ast.walk(helpers[0])}
        moves = 0
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            from_numpy = _dotted(node.func) == "torch.from_numpy"
            to_device = (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "to"
                and any("_DEVICE" in ast.dump(a) or "device" in ast.dump(a) for a in node.args)
            )
            if from_numpy or to_device:
                self.assertIn(id(node), inside, f"verl_adapter.py:{node.lineno}: a value moved outside _on_device")
                moves += 1
        self.assertEqual(moves, 2)  # the copy and the move


class Boot(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.wheels = os.path.join(self.tmp, "wheels")
        os.mkdir(self.wheels)
        me = "cp%d%d" % sys.version_info[:2]
        wheel(
            self.wheels,
            "verl-0.9.1-py3-none-any.whl",
            {"verl/__init__.py": "__version__ = '0.9.1'\n", "verl-0.9.1.dist-info/METADATA": "Version: 0.9.1\n"},
        )
        wheel(self.wheels, f"fastthing-1.0-{me}-{me}-manylinux_2_28_x86_64.whl", {"fastthing.py": "WHO = 'mine'\n"})
        wheel(self.wheels, "fastthing-1.0-cp39-cp39-manylinux_2_28_x86_64.whl", {"fastthing.py": "WHO = 'other'\n"})

    def test_only_the_wheels_this_python_can_import(self):
        names = [os.path.basename(w) for w in gpu_capture_boot.suitable_wheels(self.wheels)]
        self.assertEqual(len(names), 2, names)
        self.assertIn("verl-0.9.1-py3-none-any.whl", names)
        self.assertFalse(any("cp39" in n for n in names), names)

    def test_runs_the_capture_with_the_wheels_first_and_stubs_only_what_is_missing(self):
        script = os.path.join(self.tmp, "fake_capture.py")
        marker = os.path.join(self.tmp, "ran.txt")
        with open(script, "w") as f:
            f.write(
                "import sys, verl, fastthing, ray\n"
                f"with open({marker!r}, 'w') as out:\n"
                "    out.write(verl.__version__ + ' ' + fastthing.WHO + ' ' + ' '.join(sys.argv[1:]))\n"
                "sys.exit(3)\n"
            )
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = gpu_capture_boot.main(["--wheels", self.wheels, "--capture", script, "--", "--out", "x"])
        self.assertEqual(code, 3, buf.getvalue())  # the capture's own exit status
        with open(marker) as f:
            self.assertEqual(f.read(), "0.9.1 mine --out x")
        self.assertIn("stubbed ray", buf.getvalue())

    def test_the_default_capture_is_the_repositorys(self):
        args, _ = gpu_capture_boot.parse(["--wheels", self.wheels, "--", "--out", "x"])
        self.assertTrue(os.path.isfile(args.capture), args.capture)

    def test_no_verl_wheel_is_an_error(self):
        os.remove(os.path.join(self.wheels, "verl-0.9.1-py3-none-any.whl"))
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(gpu_capture_boot.main(["--wheels", self.wheels, "--", "--out", "x"]), 2)
        self.assertIn("no verl wheel", err.getvalue())
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(gpu_capture_boot.main(["--wheels", os.path.join(self.tmp, "nope"), "--", "x"]), 2)


if __name__ == "__main__":
    unittest.main()
