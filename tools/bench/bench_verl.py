#!/usr/bin/env python3
"""verl's own functions timed on one device, eager and under torch.compile: the rows of the
perf anchor (verl 0.9.0 on an H200, recorded in tools/bench/anchor.cc), measured in
the same run as cuda_bench so that tools/bench/ratio_table.py can put them side by side.

    python3 tools/bench/bench_verl.py --verl-wheel verl-0.9.1-py3-none-any.whl [--device cuda]
        [--shapes 4096x8192,1024x2048,256x512] [--repeats 10] [--warmup 2] [--modes eager,compile]
        [--budget-s 240] [--max-row-s 10] [--only LABEL,...] [--backend inductor] [--json PATH]
        [--simulate-bare]

verl is loaded from a wheel (--verl-wheel, extracted to a temporary directory) or from an
installed site-packages (--verl-site). The GPU machine has torch but neither Ray, tensordict,
omegaconf nor hydra, and no registry to install them from; verl's package __init__ imports
all of them. So the `verl` package module is created here without running verl/__init__.py
(the package's own algorithm modules are then imported normally), and a meta-path finder
placed after every real one supplies permissive stub modules for the few third-party
packages those algorithm modules import at the top but never call on the timed paths. Every
stubbed module and every skipped __init__ is printed and written to the JSON ("stubs").
--simulate-bare hides every package the GPU machine lacks (GPU_MACHINE_PACKAGES), so a run in
a full environment reproduces that situation.

Exit status: 0 if every (row, mode) ran, or was skipped for a stated reason (not compiled, the
budget, no CUDA device: then the JSON says "status": "skipped"); 1 if verl could not be
loaded or a row raised (recorded in that row, the run goes on); 2 for bad arguments.

The argument parsing, the import machinery and the row table import without torch (the
tests run them in CI, where torch is absent); torch is imported by run() only.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import types
import zipfile
from typing import Any, Callable, Dict, List, Optional, Tuple

SCHEMA = "verlconf-bench-verl/1"
DEFAULT_SHAPES = "4096x8192,1024x2048,256x512"
ANCHOR_SHAPE = (4096, 8192)
GROUP = 16

# The python packages of the GPU machine's image (/work/.library/device/KINDS.md,
# nvidia-h200, read 2026-11-17), as distribution names. --simulate-bare makes every
# top-level module that belongs to none of these (nor to the standard library) unimportable.
GPU_MACHINE_PACKAGES = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope
triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl
zipp
""".split()

# Third-party packages that verl's algorithm modules (core_algos, rollout_corr_helper,
# torch_functional and the config modules they import) import unconditionally at module
# level, directly or through a package __init__, without using them on the paths timed
# here: omegaconf (DictConfig in annotations and isinstance checks, MISSING as a dataclass
# default), tensordict and ray (protocol.py; for DataProto.from_dict see the stand-in
# below), codetiming (Timer in verl.utils.profiler.performance, reached through
# verl.utils.profiler's __init__), orjson (verl.utils.tracking, reached the same way).
# Only these are ever stubbed, and only when the real import fails: any other missing
# module still raises ImportError, so verl's guarded optional imports (flash_attn,
# torch_npu, ...) see the truth.
STUBBABLE = ("omegaconf", "tensordict", "ray", "codetiming", "orjson")

ADV, LOSS, KL, AGG, RC = "advantage", "policy_loss", "kl", "aggregation", "rollout_correction"

# Python loops over rows / uids / tokens: dynamo would trace (unroll) every iteration.
_LOOP_B = "not compiled: verl's function loops in Python over the batch's rows/uids (dynamo would unroll B iterations)"
_LOOP_T = "not compiled: verl's function loops in Python over the T token positions (dynamo would unroll T steps)"

# The anchor's rows, in its order (labels exactly as tools/bench/anchor.cc and the .md):
# label, family, name (as anchor.cc), verl 0.9.0 eager ms at 4096x8192 on an H200, and the
# reason the row is not compiled (None: compiled). The calls themselves are in _row_call.
ANCHOR_ROWS: List[Tuple[str, str, str, float, Optional[str]]] = [
    ("adv/gae", ADV, "gae", 1345.384, _LOOP_T),
    ("adv/grpo", ADV, "grpo", 202.861, _LOOP_B),
    ("adv/grpo_vectorized", ADV, "grpo_vectorized", 1.212, None),
    ("adv/grpo_passk", ADV, "grpo_passk", 46.591, _LOOP_B),
    ("adv/rloo", ADV, "rloo", 363.871, _LOOP_B),
    ("adv/rloo_vectorized", ADV, "rloo_vectorized", 2.641, None),
    ("adv/reinforce_plus_plus", ADV, "reinforce_plus_plus", 896.247, _LOOP_T),
    ("adv/reinforce_plus_plus_baseline", ADV, "reinforce_plus_plus_baseline", 97.957, _LOOP_B),
    ("adv/remax", ADV, "remax", 0.75, None),
    ("adv/opo", ADV, "opo", 115.393, _LOOP_B),
    ("adv/gpg", ADV, "gpg", 424.224, _LOOP_B),
    ("adv/optimal_token_baseline", ADV, "optimal_token_baseline", 91.605, _LOOP_B),
    ("adv/tir_optimal_token_baseline", ADV, "tir_optimal_token_baseline", 1465.647, _LOOP_B),
    ("adv/gdpo", ADV, "gdpo", 389.969, _LOOP_B),
    ("loss/bypass_mode_fwd_bwd", LOSS, "bypass_mode", 10.262, None),
    ("loss/cispo_fwd_bwd", LOSS, "cispo", 2.669, None),
    ("loss/clip_cov_fwd_bwd", LOSS, "clip_cov", 60.222, None),
    ("loss/dppo_kl_fwd_bwd", LOSS, "dppo_kl", 4.987, None),
    ("loss/dppo_tv_fwd_bwd", LOSS, "dppo_tv", 4.04, None),
    ("loss/dro_fwd_bwd", LOSS, "dro", 2.53, None),
    ("loss/geo_mean_fwd_bwd", LOSS, "geo_mean", 4.645, None),
    ("loss/gpg_fwd_bwd", LOSS, "gpg", 0.977, None),
    ("loss/gspo_fwd_bwd", LOSS, "gspo", 4.656, None),
    ("loss/kl_cov_fwd_bwd", LOSS, "kl_cov", 572.204, None),
    ("loss/sapo_fwd_bwd", LOSS, "sapo", 3.205, None),
    ("loss/vanilla_fwd_bwd", LOSS, "vanilla", 6.403, None),
    ("loss/reinforce_fwd_bwd", LOSS, "compute_policy_loss_reinforce", 1.638, None),
    ("kl/kl", KL, "kl", 0.113, None),
    ("kl/abs", KL, "abs", 0.181, None),
    ("kl/mse", KL, "mse", 0.249, None),
    ("kl/low_var_kl", KL, "low_var_kl", 0.475, None),
    ("kl/low_var_kl+_fwd_bwd", KL, "low_var_kl+", 1.265, None),
    ("agg/token-mean", AGG, "token-mean", 0.425, None),
    ("agg/token-sum", AGG, "token-sum", 0.386, None),
    ("agg/seq-mean-token-sum", AGG, "seq-mean-token-sum", 0.234, None),
    ("agg/seq-mean-token-mean", AGG, "seq-mean-token-mean", 0.232, None),
    ("agg/seq-mean-token-sum-norm", AGG, "seq-mean-token-sum-norm", 0.227, None),
    ("rc/token_is", RC, "compute_rollout_correction_weights", 9.861, None),
    ("rc/sequence_is", RC, "compute_rollout_correction_weights", 8.761, None),
    ("rc/token_icepop", RC, "compute_rollout_correction_weights", 10.921, None),
    ("rc/token_is_batchnorm", RC, "compute_rollout_correction_weights", 10.749, None),
    ("rc/rs_token_k1", RC, "token_k1", 11.032, None),
    ("rc/rs_token_k2", RC, "token_k2", 10.334, None),
    ("rc/rs_token_k3", RC, "token_k3", 9.777, None),
    ("rc/rs_seq_sum_k1", RC, "seq_sum_k1", 8.979, None),
    ("rc/rs_seq_sum_k2", RC, "seq_sum_k2", 9.216, None),
    ("rc/rs_seq_sum_k3", RC, "seq_sum_k3", 9.027, None),
    ("rc/rs_seq_mean_k1", RC, "seq_mean_k1", 9.425, None),
    ("rc/rs_seq_mean_k2", RC, "seq_mean_k2", 9.192, None),
    ("rc/rs_seq_mean_k3", RC, "seq_mean_k3", 9.374, None),
    ("rc/rs_seq_max_k2", RC, "seq_max_k2", 9.57, None),
    ("rc/rs_seq_max_k3", RC, "seq_max_k3", 9.692, None),
    ("rc/token_is+token_k1,seq_mean_k3", RC, "compute_rollout_correction_and_rejection_mask", 20.035, None),
]
LABELS = [r[0] for r in ANCHOR_ROWS]

# The configurations of the rc rows (anchor.cc's, on top of the function's defaults).
_RC_WEIGHTS_CONFIG = {
    "rc/token_is": {"rollout_is": "token"},
    "rc/sequence_is": {"rollout_is": "sequence"},
    "rc/token_icepop": {"rollout_is": "token", "rollout_is_threshold": "0.5_2.0"},
    "rc/token_is_batchnorm": {"rollout_is": "token", "rollout_is_batch_normalize": True},
}
_RC_PIPELINE_CONFIG = {
    "rollout_is": "token",
    "rollout_is_threshold": 2.0,
    "rollout_rs": "token_k1,seq_mean_k3",
    "rollout_rs_threshold": "0.5_2.0,0.01",
}


def _rs_threshold(option: str):
    # compute_rollout_rejection_mask has no default threshold (it raises without one). The
    # RolloutCorrectionConfig presets' defaults: "0.5_2.0" for the k1 (ratio) options
    # (seq_sum_k1 preset), 0.01 for the k2/k3 divergences (seq_mean_k3 preset).
    return "0.5_2.0" if option.endswith("k1") else 0.01


class UsageError(Exception):
    pass


# --------------------------------------------------------------------------- arguments


def parse_shapes(text: str) -> List[Tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", part)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise UsageError(f"--shapes: '{part}' is not BxT with B, T >= 1")
        shapes.append((int(m.group(1)), int(m.group(2))))
    return shapes


FAMILIES = (ADV, LOSS, KL, AGG, RC)


def parse_only(text: str) -> List[str]:
    """--only's comma-separated labels and family names, as the labels they select. A label
    may itself hold commas (rc/token_is+token_k1,seq_mean_k3): the longest known label or
    family at each position is taken."""
    names = sorted(LABELS + list(FAMILIES), key=len, reverse=True)
    picked: List[str] = []
    rest = text.strip()
    while rest:
        hit = next((n for n in names if rest == n or rest.startswith(n + ",")), None)
        if hit is None:
            bad = rest.split(",")[0]
            raise UsageError(
                f"--only: '{bad}' is neither an anchor row nor a family (rows: {', '.join(LABELS)}; "
                f"families: {', '.join(FAMILIES)})"
            )
        picked += [r[0] for r in ANCHOR_ROWS if r[1] == hit] if hit in FAMILIES else [hit]
        rest = rest[len(hit) :].lstrip(",").strip()
    return picked


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own errors: exit 2 with the message, as ours
        raise UsageError(message)


def normalize_device(device: str) -> str:
    """--device as torch needs it: "cpu", or "cuda:N" with its index. torch.cuda.set_device
    refuses a CUDA device without an index, so a bare "cuda" (what run.sh passes) is the
    first device, "cuda:0"."""
    m = re.fullmatch(r"cpu|cuda(?::(\d+))?", device)
    if not m:
        raise UsageError(f"--device: '{device}' is not cpu, cuda or cuda:N")
    return "cpu" if device == "cpu" else f"cuda:{int(m.group(1) or 0)}"


def select_device(torch, device: str) -> Dict[str, Any]:
    """Makes `device` (normalize_device's form) the current CUDA device and describes it;
    {"status": "skipped", ...} where it cannot be used. The CPU needs nothing."""
    if device == "cpu":
        return {"type": "cpu"}
    index = int(device.split(":")[1])
    if not torch.cuda.is_available():
        return {"type": "cuda", "status": "skipped", "reason": "torch.cuda.is_available() is False"}
    count = torch.cuda.device_count()
    if index >= count:
        return {"type": "cuda", "status": "skipped", "reason": f"--device {device}: torch sees {count} CUDA device(s)"}
    torch.cuda.set_device(index)
    return {
        "type": "cuda",
        "index": index,
        "name": torch.cuda.get_device_name(index),
        "cuda_runtime": torch.version.cuda,
    }


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    ap = _Parser(prog="bench_verl.py", description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--verl-wheel", help="a verl .whl, extracted to a temporary directory first on sys.path")
    src.add_argument("--verl-site", help="a site-packages directory holding an installed verl")
    ap.add_argument("--device", default="cuda", help="torch device: cuda, cuda:N or cpu (default cuda)")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"BxT,... (default {DEFAULT_SHAPES})")
    ap.add_argument("--repeats", type=int, default=10, help="timed calls per (row, mode); the median is reported")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls before the timed ones (default 2)")
    ap.add_argument("--modes", default="eager,compile", help="eager, compile or both (default eager,compile)")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=240.0,
        help="start no new (row, mode) measurement after this many seconds (0: no budget)",
    )
    ap.add_argument(
        "--max-row-s",
        type=float,
        default=10.0,
        help="fewer repeats (at least 3) where --repeats calls would take longer than this",
    )
    ap.add_argument("--only", default="", help="anchor labels, comma-separated (default: every anchor row)")
    ap.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor)")
    ap.add_argument("--json", default="", help="write the results here (schema %s)" % SCHEMA)
    ap.add_argument(
        "--simulate-bare",
        action="store_true",
        help="hide every package the GPU machine lacks (testing in a full environment)",
    )
    a = ap.parse_args(argv)
    if not a.verl_wheel and not a.verl_site:
        raise UsageError("one of --verl-wheel or --verl-site is required")
    if a.verl_wheel and (not a.verl_wheel.endswith(".whl") or not os.path.isfile(a.verl_wheel)):
        raise UsageError(f"--verl-wheel: '{a.verl_wheel}' is not a .whl file")
    if a.verl_site and not os.path.isdir(os.path.join(a.verl_site, "verl")):
        raise UsageError(f"--verl-site: '{a.verl_site}' has no verl package")
    a.device = normalize_device(a.device)
    a.shape_list = parse_shapes(a.shapes)
    if a.repeats < 1:
        raise UsageError("--repeats must be >= 1")
    if a.warmup < 0:
        raise UsageError("--warmup must be >= 0")
    if a.budget_s < 0 or a.max_row_s <= 0:
        raise UsageError("--budget-s must be >= 0 and --max-row-s > 0")
    a.mode_list = [m.strip() for m in a.modes.split(",") if m.strip()]
    if not a.mode_list or any(m not in ("eager", "compile") for m in a.mode_list):
        raise UsageError(f"--modes: '{a.modes}' is not a list of eager, compile")
    a.only_list = parse_only(a.only)
    if a.json == "" and "--json" in (argv if argv is not None else sys.argv[1:]):
        raise UsageError("--json: empty path")
    return a


# --------------------------------------------------------------------------- stubs


class _StubMeta(type):
    """Metaclass of the stub classes: class attributes are further stub classes, the
    class subscripts to itself (DictConfig[str, Any] in an annotation), and a leaf stub
    called with one callable hands it back (used as a decorator: @ray.remote)."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name, cls.__module__)

    def __getitem__(cls, item):
        return cls

    def __call__(cls, *args, **kwargs):
        if cls.__dict__.get("_verlconf_leaf") and len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return super().__call__(*args, **kwargs)


class StubObject(metaclass=_StubMeta):
    """An instance of a stub class: accepts any arguments; attributes are stub classes,
    calls give another instance (or hand a decorated function back), it is an empty,
    false container and a no-op context manager (open_dict)."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name, type(self).__module__)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return type(self)()

    def __bool__(self):
        return False

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _stub_class(name: str, module: str) -> type:
    # A fresh class per attribute: isinstance(x, stub) is False for every real object.
    return _StubMeta(name, (StubObject,), {"__module__": module, "_verlconf_leaf": True})


class TensorDictStandIn(dict):
    """tensordict.TensorDict in the stub module: a plain dict with batch_size. verl's
    DataProto.from_dict builds one to wrap compute_rollout_correction_and_rejection_mask's
    IS weights (DataProto.check_consistency reads len(batch_size)); nothing else of
    tensordict runs on the timed paths."""

    def __init__(self, source=None, batch_size=None, **kwargs):
        super().__init__(source or {})
        self.batch_size = tuple(batch_size) if batch_size is not None else ()


# Real attributes some stub modules carry (the stub's generic classes would not do).
_STUB_ATTRS: Dict[str, Dict[str, Any]] = {"tensordict": {"TensorDict": TensorDictStandIn}}


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        cls = _stub_class(name, self.__name__)
        setattr(self, name, cls)
        return cls


class _StubLoader(importlib.abc.Loader):
    def __init__(self, finder: "StubFinder"):
        self.finder = finder

    def create_module(self, spec):
        return StubModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []  # a package: its submodules come through the finder too
        module.__version__ = "0+verlconf.stub"
        for k, v in _STUB_ATTRS.get(module.__name__, {}).items():
            setattr(module, k, v)
        self.finder.stubbed.append(module.__name__)


class StubFinder(importlib.abc.MetaPathFinder):
    """Placed after every real finder: it is asked only about modules nothing else could
    find, and supplies a StubModule for those whose top-level package is in `names`."""

    def __init__(self, names):
        self.names = set(names)
        self.stubbed: List[str] = []
        self._loader = _StubLoader(self)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self._loader, is_package=True)


def _norm_dist(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class _BareFilter(importlib.abc.MetaPathFinder):
    """Wraps a real finder and hides the blocked top-level modules from it."""

    def __init__(self, inner, blocked, allowed_dists):
        self.inner, self.blocked, self.allowed_dists = inner, blocked, allowed_dists

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.blocked:
            return None
        find = getattr(self.inner, "find_spec", None)
        return find(fullname, path, target) if find else None

    def find_distributions(self, *args, **kwargs):
        # importlib.metadata asks the meta path for installed distributions (transformers
        # checks its dependencies' versions through it): only the allowed ones are seen.
        find = getattr(self.inner, "find_distributions", None)
        for d in find(*args, **kwargs) if find else ():
            if _norm_dist(d.metadata["Name"] or "") in self.allowed_dists:
                yield d

    def invalidate_caches(self):
        if hasattr(self.inner, "invalidate_caches"):
            self.inner.invalidate_caches()


def simulate_bare(allowed_dists=GPU_MACHINE_PACKAGES, keep=("verl",)) -> List[str]:
    """Hide every top-level module that belongs only to distributions not in
    allowed_dists (and is neither standard library nor in keep). Returns the hidden names."""
    import importlib.metadata

    allowed = {_norm_dist(d) for d in allowed_dists} | {_norm_dist(k) for k in keep}
    blocked = set()
    for top, dists in importlib.metadata.packages_distributions().items():
        if top in sys.stdlib_module_names or top in keep or top.startswith("__"):
            continue
        if not any(_norm_dist(d) in allowed for d in dists):
            blocked.add(top)
    for i, f in enumerate(sys.meta_path):
        if f not in (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter):
            sys.meta_path[i] = _BareFilter(f, blocked, allowed)
    for name in list(sys.modules):  # anything site.py already imported (e.g. a .pth hook)
        if name.split(".")[0] in blocked:
            del sys.modules[name]
    return sorted(blocked)


# --------------------------------------------------------------------------- verl import


def _wheel_version(dist_info_dir: str) -> Optional[str]:
    meta = os.path.join(dist_info_dir, "METADATA")
    if os.path.isfile(meta):
        with open(meta, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    return None


def load_verl(root: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Import verl's algorithm modules from root (a directory holding the verl package)
    without running verl/__init__.py. Returns (modules, info): info has version, stubs and
    skipped_inits. Third-party modules that are missing and in STUBBABLE are stubbed."""
    pkg_dir = os.path.join(root, "verl")
    version = None
    for d in sorted(os.listdir(root)):
        if re.fullmatch(r"verl-[^-]+\.dist-info", d):
            version = _wheel_version(os.path.join(root, d))
    vfile = os.path.join(pkg_dir, "version", "version")
    if version is None and os.path.isfile(vfile):
        with open(vfile, encoding="utf-8") as f:
            version = f.read().strip()
    for name in [m for m in sys.modules if m == "verl" or m.startswith("verl.")]:
        del sys.modules[name]
    finder = next((f for f in sys.meta_path if isinstance(f, StubFinder)), None)
    if finder is None:
        finder = StubFinder(STUBBABLE)
        sys.meta_path.append(finder)
    sys.path.insert(0, root)
    # verl/__init__.py imports verl.protocol (Ray, tensordict), sets logging up and loads
    # every "verl.plugins" entry point; the package object is made here instead.
    spec = importlib.machinery.ModuleSpec("verl", None, is_package=True)
    spec.submodule_search_locations = [pkg_dir]
    verl = importlib.util.module_from_spec(spec)
    verl.__file__ = os.path.join(pkg_dir, "__init__.py")
    verl.__version__ = version or "unknown"
    sys.modules["verl"] = verl
    import importlib as _il

    mods = {
        "core_algos": _il.import_module("verl.trainer.ppo.core_algos"),
        "rollout_corr_helper": _il.import_module("verl.trainer.ppo.rollout_corr_helper"),
        "torch_functional": _il.import_module("verl.utils.torch_functional"),
        "config_algorithm": _il.import_module("verl.trainer.config.algorithm"),
        "config_actor": _il.import_module("verl.workers.config.actor"),
    }
    mods["verl"] = verl
    info = {
        "verl_version": verl.__version__,
        "verl_root": root,
        "stubs": sorted(set(finder.stubbed)),
        "skipped_inits": ["verl/__init__.py (the package module is created by bench_verl.py)"],
    }
    return mods, info


def describe_stubs(info: Dict[str, Any]) -> List[str]:
    lines = []
    for s in info["skipped_inits"]:
        lines.append(f"skipped __init__: {s}")
    for s in info["stubs"]:
        what = "permissive stub module (attributes are dummy classes; isinstance against them is False)"
        if s == "tensordict":
            what += "; its TensorDict is a plain dict with batch_size (DataProto.from_dict wraps IS weights in one)"
        lines.append(f"stubbed: {s}: {what}")
    return lines


# --------------------------------------------------------------------------- the rows


def _selected_rows(only: List[str]):
    return [r for r in ANCHOR_ROWS if not only or r[0] in only]


def make_inputs(torch, rows: int, tokens: int, device: str, seed: int = 20261201) -> Dict[str, Any]:
    """The token matrices every row draws from, generated with torch on the device."""
    import numpy as np

    g = torch.Generator(device=device).manual_seed(seed)
    f32 = dict(device=device, dtype=torch.float32)

    def u(lo, hi):
        return lo + (hi - lo) * torch.rand(rows, tokens, generator=g, **f32)

    def near(base, scale):  # a nearby policy: base + N(0, scale), kept inside (-6, 0)
        return (base + scale * torch.randn(rows, tokens, generator=g, **f32)).clamp(-6.0, -1e-4)

    lo = max(1, tokens // 4)
    lengths = torch.randint(lo, tokens + 1, (rows,), generator=g, device=device)
    mask = (torch.arange(tokens, device=device)[None, :] < lengths[:, None]).to(torch.float32)
    old = u(-6.0, -1e-4)
    scores = torch.randn(rows, generator=g, **f32)
    rewards = torch.zeros(rows, tokens, **f32)
    rewards[torch.arange(rows, device=device), lengths - 1] = scores  # the score at the last valid token
    comps = [torch.randn(rows, generator=g, **f32).cpu().numpy() for _ in range(2)]
    prompt_len = 2
    return {
        "response_mask": mask,
        "old_log_prob": old,
        "log_prob": near(old, 0.05),
        "rollout_log_prob": near(old, 0.05),
        "ref_log_prob": near(old, 0.1),
        "advantages": torch.randn(rows, tokens, generator=g, **f32),
        "values": torch.randn(rows, tokens, generator=g, **f32),
        "loss_mat": torch.randn(rows, tokens, generator=g, **f32),
        "token_level_rewards": rewards,
        "reward_baselines": torch.randn(rows, generator=g, **f32),
        "sum_pi_squared": u(0.05, 1.0),
        # verl receives uids as a numpy object array of strings, groups of GROUP in a row
        "uid": np.array([f"uid-{i // GROUP}" for i in range(rows)], dtype=object),
        # gdpo: two reward components, as compute_score's dict puts them in non_tensor_batch
        "gdpo_non_tensor_batch": {"format_reward": comps[0], "accuracy_reward": comps[1]},
        "gdpo_batch": {
            "prompts": torch.zeros(rows, prompt_len, dtype=torch.int64, device=device),
            "attention_mask": torch.cat(
                [torch.ones(rows, prompt_len, dtype=torch.int64, device=device), mask.to(torch.int64)], dim=1
            ),
        },
    }


def config_notes() -> List[str]:
    return [
        "configs: verl's own dataclasses, built as the trainer builds them: AlgoConfig() (verl's defaults; "
        "gdpo: gdpo_reward_keys=['format_reward', 'accuracy_reward']), ActorConfig(strategy='fsdp', rollout_n=1, "
        "ppo_micro_batch_size_per_gpu=1; every other field its default: clip_ratio 0.2, loss_agg_mode token-mean), "
        "bypass_mode: policy_loss=PolicyLossConfig(loss_mode='bypass_mode', rollout_correction="
        "RolloutCorrectionConfig(bypass_mode=True)) (its defaults: sequence IS, threshold 2.0, ppo_clip), dro: "
        "policy_loss=PolicyLossConfig(loss_mode='dro', dro_beta=0.1) (dro_beta has no default). They are "
        "plain dataclasses (verl.base_config.BaseConfig); omegaconf is only named in annotations, isinstance checks "
        "and as the MISSING default of ActorConfig fields that are passed explicitly here",
        "advantage rows: the estimator from core_algos.get_adv_estimator_fn with the keyword arguments "
        "ray_trainer.compute_advantage passes (gae and grpo: called directly with theirs), forward only",
        "loss rows: get_policy_loss_fn(name)(old_log_prob, log_prob, advantages, response_mask, 'token-mean', "
        "actor_config), then loss.backward() w.r.t. log_prob; loss/reinforce_fwd_bwd: "
        "compute_policy_loss_reinforce with its own default loss_agg_mode (seq-mean-token-sum), as the registry "
        "entry cuda_bench times",
        "kl rows: core_algos.kl_penalty(log_prob, ref_log_prob, name), forward; kl/low_var_kl+_fwd_bwd: "
        "kl_penalty(..., 'low_var_kl+').sum().backward() (value and gradient, as the registry entry)",
        "agg rows: core_algos.agg_loss(loss_mat, mask, mode) with its defaults, forward",
        "rc rows: rollout_corr_helper.compute_rollout_correction_weights / compute_rollout_rejection_mask on "
        "log_ratio = old_log_prob - rollout_log_prob (computed outside the timing), and "
        "compute_rollout_correction_and_rejection_mask(old_log_prob, rollout_log_prob, mask, ...), forward; RS "
        "thresholds: '0.5_2.0' for k1 options, 0.01 for k2/k3 (the presets' defaults)",
    ]


def row_notes(label: str, family: str, name: str) -> str:
    """What a row passes beyond verl's defaults (the JSON's per-row "notes")."""
    if label in _RC_WEIGHTS_CONFIG:
        return (
            "compute_rollout_correction_weights("
            + ", ".join(f"{k}={v!r}" for k, v in _RC_WEIGHTS_CONFIG[label].items())
            + ")"
        )
    if name == "compute_rollout_correction_and_rejection_mask":
        return (
            "compute_rollout_correction_and_rejection_mask("
            + ", ".join(f"{k}={v!r}" for k, v in _RC_PIPELINE_CONFIG.items())
            + ")"
        )
    if family == RC:
        return f"compute_rollout_rejection_mask(rollout_rs={name!r}, rollout_rs_threshold={_rs_threshold(name)!r})"
    return {
        "loss/dro_fwd_bwd": "PolicyLossConfig(dro_beta=0.1): dro has no default beta",
        "loss/bypass_mode_fwd_bwd": "RolloutCorrectionConfig(bypass_mode=True), its defaults otherwise",
        "loss/reinforce_fwd_bwd": "loss_agg_mode: the function's default, seq-mean-token-sum",
        "kl/low_var_kl+_fwd_bwd": "kl_penalty(...).sum().backward()",
        "adv/gdpo": "two reward components in non_tensor_batch (AlgoConfig.gdpo_reward_keys)",
    }.get(label, "")


def _row_call(label: str, family: str, name: str, mods: Dict[str, Any], x: Dict[str, Any]):
    """(forward, leaf, kwargs): forward(**kwargs) calls verl's function as its trainer does;
    leaf is the tensor the backward differentiates (None: forward only)."""
    ca, rc = mods["core_algos"], mods["rollout_corr_helper"]
    AlgoConfig = mods["config_algorithm"].AlgoConfig
    actor_mod = mods["config_actor"]
    mask = x["response_mask"]
    if family == ADV:
        if name == "gae":
            # ray_trainer.compute_advantage: compute_gae_advantage_return(token_level_rewards, values,
            # response_mask, gamma, lam) with the AlgoConfig's gamma and lam
            algo = AlgoConfig()
            kw = dict(
                token_level_rewards=x["token_level_rewards"],
                values=x["values"],
                response_mask=mask,
                gamma=algo.gamma,
                lam=algo.lam,
            )
            return ca.compute_gae_advantage_return, None, kw
        if name == "grpo":
            kw = dict(
                token_level_rewards=x["token_level_rewards"],
                response_mask=mask,
                index=x["uid"],
                norm_adv_by_std_in_grpo=AlgoConfig().norm_adv_by_std_in_grpo,
            )
            return ca.compute_grpo_outcome_advantage, None, kw
        # the dispatcher's generic branch: rewards, mask, config, index (uid is in the batch),
        # reward_baselines where present (remax), gdpo's batches, OTB's extra tensors
        kw = dict(token_level_rewards=x["token_level_rewards"], response_mask=mask, config=AlgoConfig(), index=x["uid"])
        if name == "remax":
            kw["reward_baselines"] = x["reward_baselines"]
        if name == "gdpo":
            kw["config"] = AlgoConfig(gdpo_reward_keys=list(x["gdpo_non_tensor_batch"]))
            kw["non_tensor_batch"] = x["gdpo_non_tensor_batch"]
            kw["batch"] = x["gdpo_batch"]
        if name in ("optimal_token_baseline", "tir_optimal_token_baseline"):
            kw.update(sum_pi_squared=x["sum_pi_squared"], old_log_probs=x["old_log_prob"], rollout_is_weights=None)
        return ca.get_adv_estimator_fn(name), None, kw
    if family == LOSS:
        leaf = x["log_prob"].detach().requires_grad_(True)
        if name == "compute_policy_loss_reinforce":
            cfg = actor_mod.ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1)
            kw = dict(
                rollout_log_prob=x["old_log_prob"],
                log_prob=leaf,
                advantages=x["advantages"],
                response_mask=mask,
                config=cfg,
            )
            return ca.compute_policy_loss_reinforce, leaf, kw
        extra = {}
        if name == "dro":  # PolicyLossConfig.dro_beta has no default; dro raises without one
            extra["policy_loss"] = actor_mod.PolicyLossConfig(loss_mode="dro", dro_beta=0.1)
        if name == "bypass_mode":
            rcc = mods["config_algorithm"].RolloutCorrectionConfig(bypass_mode=True)
            extra["policy_loss"] = actor_mod.PolicyLossConfig(loss_mode="bypass_mode", rollout_correction=rcc)
        cfg = actor_mod.ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, **extra)
        kw = dict(
            old_log_prob=x["old_log_prob"],
            log_prob=leaf,
            advantages=x["advantages"],
            response_mask=mask,
            loss_agg_mode=cfg.loss_agg_mode,
            config=cfg,
            rollout_is_weights=None,
        )
        return ca.get_policy_loss_fn(name), leaf, kw
    if family == KL:
        if label.endswith("_fwd_bwd"):
            leaf = x["log_prob"].detach().requires_grad_(True)

            def kl_sum(logprob, ref_logprob, kl_penalty):
                return ca.kl_penalty(logprob, ref_logprob, kl_penalty).sum()

            return kl_sum, leaf, dict(logprob=leaf, ref_logprob=x["ref_log_prob"], kl_penalty=name)
        return ca.kl_penalty, None, dict(logprob=x["log_prob"], ref_logprob=x["ref_log_prob"], kl_penalty=name)
    if family == AGG:
        return ca.agg_loss, None, dict(loss_mat=x["loss_mat"], loss_mask=mask, loss_agg_mode=name)
    if family == RC:
        log_ratio = x["old_log_prob"] - x["rollout_log_prob"]
        if label in _RC_WEIGHTS_CONFIG:
            return (
                rc.compute_rollout_correction_weights,
                None,
                dict(log_ratio=log_ratio, response_mask=mask, **_RC_WEIGHTS_CONFIG[label]),
            )
        if name == "compute_rollout_correction_and_rejection_mask":
            return (
                rc.compute_rollout_correction_and_rejection_mask,
                None,
                dict(
                    old_log_prob=x["old_log_prob"],
                    rollout_log_prob=x["rollout_log_prob"],
                    response_mask=mask,
                    **_RC_PIPELINE_CONFIG,
                ),
            )
        return (
            rc.compute_rollout_rejection_mask,
            None,
            dict(log_ratio=log_ratio, response_mask=mask, rollout_rs=name, rollout_rs_threshold=_rs_threshold(name)),
        )
    raise AssertionError(label)


# --------------------------------------------------------------------------- timing


def _first_tensor(out):
    return out[0] if isinstance(out, tuple) else out


class Timer:
    def __init__(self, torch, device: str):
        self.torch, self.cuda = torch, device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def once_ms(self, step: Callable[[], None]) -> float:
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t = time.perf_counter()
        step()
        return (time.perf_counter() - t) * 1e3


def measure(torch, timer: Timer, fn, leaf, kwargs, mode: str, a) -> Dict[str, Any]:
    """One (row, shape, mode): the first call (in compile mode: the compilation, reported as
    compile_s), the warm-ups, then the median of the timed calls."""
    res: Dict[str, Any] = {}
    if mode == "compile":
        torch._dynamo.reset()  # each row compiles afresh: no cache limits shared across rows
        from torch._dynamo.utils import counters

        counters.clear()
        call = torch.compile(fn, backend=a.backend, fullgraph=False)
    else:
        call = fn

    def step():
        if leaf is not None:
            leaf.grad = None
            _first_tensor(call(**kwargs)).backward()
        else:
            call(**kwargs)

    t0 = time.perf_counter()
    step()
    timer.sync()
    first_s = time.perf_counter() - t0
    for _ in range(a.warmup):
        step()
    timer.sync()
    if mode == "compile":
        res["compile_s"] = round(first_s, 3)
        graphs = counters["stats"].get("unique_graphs", 0)
        breaks = sum(counters["graph_break"].values())
        res["graphs"], res["graph_breaks"] = int(graphs), int(breaks)
    one = timer.once_ms(step)
    repeats = a.repeats
    if one * a.repeats > a.max_row_s * 1e3:
        repeats = max(3, int(a.max_row_s * 1e3 // max(one, 1e-6)))
    times = [timer.once_ms(step) for _ in range(repeats)]
    if mode == "compile":
        # Graphs compiled while timing (a guard that keeps failing) would make the figure
        # a compile time; say so in the row.
        res["graphs_compiled_while_timing"] = int(counters["stats"].get("unique_graphs", 0)) - res["graphs"]
    res["ms"] = statistics.median(times)
    res["min_ms"], res["max_ms"], res["repeats"] = min(times), max(times), repeats
    return res


def _fmt_err(ex: BaseException) -> str:
    msg = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
    return f"error: {type(ex).__name__}: {msg[:300]}"


def run(a, info: Dict[str, Any], mods: Dict[str, Any]) -> Tuple[Dict[str, Any], int]:
    import torch

    out = {
        "schema": SCHEMA,
        "verl_version": info["verl_version"],
        "torch_version": torch.__version__,
        "python_version": sys.version.split()[0],
        "stubs": info["stubs"],
        "skipped_inits": info["skipped_inits"],
        "stub_notes": describe_stubs(info),
        "config_notes": config_notes(),
        "simulate_bare": bool(a.simulate_bare),
        "repeats": a.repeats,
        "warmup": a.warmup,
        "modes": a.mode_list,
        "backend": a.backend,
        "budget_s": a.budget_s,
        "shapes": [list(s) for s in a.shape_list],
        "rows": [],
        "not_run_budget": [],
    }
    if a.device.startswith("cuda"):
        dev = select_device(torch, a.device)
        if dev.get("status") == "skipped":
            out.update(status="skipped", reason=dev["reason"], device={"type": "cuda"})
            return out, 0
        out["device"] = dev
    else:
        import platform

        out["device"] = {
            "type": "cpu",
            "name": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(),
        }
        # On a loaded machine inductor's OpenMP kernels wait for their threads to be
        # scheduled (seen here: 16 ms for a 64x256 elementwise op, 0.015 ms with
        # OMP_NUM_THREADS=1); the CPU figures check the plumbing, they rate nothing.
        out["note"] = "--device cpu: wall-clock of whole calls, a plumbing check, not a performance figure"
        print(f"bench_verl: {out['note']}")
    print(
        f"bench_verl: verl {info['verl_version']} from {info['verl_root']}, torch {torch.__version__}, "
        f"device {out['device']['name']}"
    )
    for line in out["stub_notes"]:
        print(f"bench_verl: {line}")
    for line in out["config_notes"]:
        print(f"bench_verl: {line}")

    timer = Timer(torch, a.device)
    rows = _selected_rows(a.only_list)
    # The work, in order: every eager row at the first (anchor) shape, then its compiled
    # rows, then the same for each smaller shape; the budget cuts the tail.
    plan = [(si, mode) for si in range(len(a.shape_list)) for mode in ("eager", "compile") if mode in a.mode_list]
    results: Dict[Tuple[str, int], Dict[str, Any]] = {}
    for si, (B, T) in enumerate(a.shape_list):
        for label, family, name, anchor_ms, no_compile in rows:
            r = {"label": label, "family": family, "name": name, "rows": B, "tokens": T}
            if row_notes(label, family, name):
                r["notes"] = row_notes(label, family, name)
            if (B, T) == ANCHOR_SHAPE:
                r["anchor_verl_0_9_0_ms"] = anchor_ms
            for mode in ("eager", "compile"):
                if mode not in a.mode_list:
                    r[f"{mode}_status"] = "not requested"
                elif mode == "compile" and no_compile:
                    r["compile_status"] = no_compile
                    r["compile"] = no_compile
            results[(label, si)] = r
    start = time.perf_counter()
    failed = False
    inputs_at: Dict[int, Dict[str, Any]] = {}
    for si, mode in plan:
        B, T = a.shape_list[si]
        print(f"\nbench_verl: shape B={B} x T={T}, {mode}")
        for label, family, name, anchor_ms, no_compile in rows:
            r = results[(label, si)]
            if mode == "compile" and no_compile:
                print(f"  {label:40s} {no_compile}")
                continue
            if a.budget_s > 0 and time.perf_counter() - start > a.budget_s:
                r[f"{mode}_status"] = "not run (budget)"
                out["not_run_budget"].append(f"{label}@{B}x{T}:{mode}")
                continue
            try:
                if si not in inputs_at:
                    inputs_at.clear()  # one shape's inputs at a time on the device
                    inputs_at[si] = make_inputs(torch, B, T, a.device)
                fn, leaf, kw = _row_call(label, family, name, mods, inputs_at[si])
                m = measure(torch, timer, fn, leaf, kw, mode, a)
                r[f"{mode}_ms"] = m["ms"]
                r[f"{mode}_min_ms"], r[f"{mode}_max_ms"], r[f"{mode}_repeats"] = m["min_ms"], m["max_ms"], m["repeats"]
                r[f"{mode}_status"] = "ok"
                if mode == "compile":
                    r["compile_s"], r["compile"] = m["compile_s"], "compiled"
                    r["graphs"], r["graph_breaks"] = m["graphs"], m["graph_breaks"]
                    r["graphs_compiled_while_timing"] = m["graphs_compiled_while_timing"]
                extra = (
                    f"  compile {m['compile_s']:.1f} s, {m['graphs']} graphs, {m['graph_breaks']} breaks"
                    + (
                        f", {m['graphs_compiled_while_timing']} more compiled while timing"
                        if m["graphs_compiled_while_timing"]
                        else ""
                    )
                    if mode == "compile"
                    else ""
                )
                print(f"  {label:40s} {m['ms']:10.3f} ms  ({m['repeats']} repeats){extra}", flush=True)
            except Exception as ex:  # a verl exception stays in its row; the run goes on
                r[f"{mode}_status"] = _fmt_err(ex)
                failed = True
                print(f"  {label:40s} {r[f'{mode}_status']}", flush=True)
    inputs_at.clear()
    for key in sorted(results, key=lambda k: (k[1], LABELS.index(k[0]))):
        r = results[key]
        sts = [r.get(f"{m}_status", "") for m in ("eager", "compile")]
        errs = [s for s in sts if s.startswith("error")]
        r["status"] = errs[0] if errs else ("ok" if "ok" in sts else next((s for s in sts if s), "not run"))
        out["rows"].append(r)
    out["elapsed_s"] = round(time.perf_counter() - start, 2)
    out["status"] = "error" if failed else "ok"
    compiled = sum(1 for r in rows if not r[4])
    print(
        f"\nbench_verl: {len(out['rows'])} rows over {len(a.shape_list)} shape(s) in {out['elapsed_s']:.1f} s; "
        f"{compiled} of {len(rows)} functions compilable, {len(rows) - compiled} not compiled (Python loops); "
        f"{len(out['not_run_budget'])} (row, mode) measurements not run (budget {a.budget_s:.0f} s)"
    )
    return out, 1 if failed else 0


def _write_json(path: str, obj: Dict[str, Any]) -> None:
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=False)
        f.write("\n")


def main(argv: Optional[List[str]] = None) -> int:
    try:
        a = parse_args(argv)
    except UsageError as ex:
        print(f"bench_verl.py: {ex}", file=sys.stderr)
        return 2
    hidden: List[str] = []
    if a.simulate_bare:
        hidden = simulate_bare()
        print(
            f"bench_verl: --simulate-bare: {len(hidden)} top-level modules of packages the GPU machine lacks are hidden"
        )
    tmp = None
    try:
        if a.verl_wheel:
            tmp = tempfile.mkdtemp(prefix="bench_verl_")
            with zipfile.ZipFile(a.verl_wheel) as z:
                z.extractall(tmp)
            root = tmp
        else:
            root = os.path.abspath(a.verl_site)
        try:
            mods, info = load_verl(root)
        except Exception as ex:
            why = _fmt_err(ex)
            print(f"bench_verl: verl could not be loaded from {root}: {why}", file=sys.stderr)
            _write_json(
                a.json,
                {
                    "schema": SCHEMA,
                    "status": "error",
                    "reason": f"verl not loaded: {why}",
                    "simulate_bare": bool(a.simulate_bare),
                    "rows": [],
                },
            )
            return 1
        info["verl_root"] = a.verl_wheel or root
        out, rc = run(a, info, mods)
        if a.simulate_bare:
            out["simulate_bare_hidden"] = hidden
        _write_json(a.json, out)
        if out.get("status") == "skipped":
            print(f"bench_verl: SKIPPED: {out['reason']}")
        return rc
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
