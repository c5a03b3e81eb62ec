#!/usr/bin/env python3
"""Run a candidate framework on the golden inputs and write a candidate set.

    python3 tools/harness/run_candidate.py --adapter ADAPTER --out DIR [--force]
        [--goldens fixtures/verl-0.9.1] [--spec SPEC.json | --conform PATH/TO/conform]

ADAPTER is a module path (my_adapter.py) or a bundled adapter name
(fixtures/adapters/NAME_adapter.py). What an adapter is, what it returns, how it
declines a case and how its exceptions are judged: docs/adapter-contract.md. The
capture script runs verl through the same interface, key resolution and contract.

For every case of every golden file the harness copies the inputs and config, calls the
adapter's function where it has one, and writes DIR/<family>.h5 in the fixture schema;
then judge the result with

    bazel run //tools:conform -- check --candidate DIR

DIR is a new name (created, with its parents) or an existing directory without results
(no *.h5 file); one that holds results is refused unless --force is given, which removes
them (every *.h5 in DIR, nothing else) before the run, as conform does with a previous
--report. DIR may not be the goldens directory or lie inside it, nor be another input of
the run (the adapter file, --spec, --conform), nor one of the repository's golden sets
(fixtures/verl-*) even when another set is read. A directory that contains the goldens
directory is fine: only DIR/<family>.h5 is written. Each file goes through an exclusive
temporary in DIR, and all of them are renamed into place only once every one is
complete: a failed or interrupted (SIGINT, SIGTERM, SIGHUP) run leaves no temporary and
no part of a set.

Exit status: 0 the candidate set was written; 2 bad usage (an empty or repeated option,
an --out that breaks the rules above, a file that cannot be written), an adapter that
cannot be loaded (an ambiguous or unknown key included), a golden the registry does not
know, or an adapter that broke the contract (a field its function does not have, a
non-float value): each problem on its own line, `harness: error: ...`, naming function,
case and field where there is one, and nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import os
import platform
import signal
import stat
import sys
import tempfile
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "fixtures"))

import adapter_call  # noqa: E402
import adapter_keys  # noqa: E402
import h5schema  # noqa: E402
import registry_spec  # noqa: E402

sys.path.insert(0, HERE)
from progress import Progress  # noqa: E402

DEFAULT_GOLDENS = os.path.join(REPO, "fixtures", "verl-0.9.1")

# Root attributes of a candidate file that the harness sets: which goldens it answers
# (what conform check requires of a candidate), who produced it, and the interpreter the
# harness ran in. The goldens' capture provenance (python_version, captured_utc, ...)
# describes verl's capture, not this run, and is not copied.
FROM_GOLDENS = ("family", "verl_version", "dtypes")
HARNESS_VERSIONS = ("harness_python_version", "harness_numpy_version", "harness_h5py_version",
                    "harness_torch_version")
RESERVED = frozenset(FROM_GOLDENS + HARNESS_VERSIONS + ("schema_version", "producer"))

TEMP_TAG = ".harness-tmp-"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class HarnessError(Exception):
    def __init__(self, problems: List[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class UsageError(Exception):
    """A bad option or output path: one line, exit 2."""


class Signalled(BaseException):
    """A signal arrived while files were being written; raised so that the temporaries are
    removed on the way out, then the signal is delivered again."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _has_field(name: str) -> bool:
    return name in {f.name for f in dataclasses.fields(h5schema.CaseRecord)}


def _config(entry: Dict[str, Any], golden_cfg: Dict[str, Any]) -> Dict[str, Any]:
    # Every config key of the function, None where the golden passed None.
    return {k["name"]: golden_cfg.get(k["name"]) for k in entry["config"]}


# --------------------------------------------------------------------------- options


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, never argparse's usage block
        raise UsageError(message)


class _Once(argparse.Action):
    """A value option given at most once, never empty: `--out ""` would otherwise write
    into the current directory, and a second --out silently replace the first."""

    def __call__(self, parser, namespace, value, option_string=None):
        if value == "":
            raise UsageError(f"option {option_string}: an empty value")
        previous = getattr(namespace, self.dest)
        if previous is not None:
            raise UsageError(f"option {option_string} given twice ('{previous}' and '{value}')")
        setattr(namespace, self.dest, value)


class _Flag(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, value, option_string=None):
        if getattr(namespace, self.dest):
            raise UsageError(f"option {option_string} given twice")
        setattr(namespace, self.dest, True)


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    ap = _Parser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--adapter", action=_Once, required=True)
    ap.add_argument("--out", action=_Once, required=True, help="directory for the candidate files")
    ap.add_argument("--force", action=_Flag,
                    help="replace the results (every *.h5) an existing --out directory holds: removed before the run")
    ap.add_argument("--goldens", action=_Once, help="the golden set to run on (default: fixtures/verl-0.9.1)")
    ap.add_argument("--spec", action=_Once, help="a saved `conform spec --json` (default: fixtures/spec.json)")
    ap.add_argument("--conform", action=_Once,
                    help="run this conform binary's `spec --json` instead of reading a saved spec")
    return ap.parse_args(argv)


def user_path(path: str) -> str:
    """As conform's ResolveUserPath: under `bazel run` a relative path means relative to
    where the user typed it, not to the runfiles tree the tool starts in."""
    wd = os.environ.get("BUILD_WORKING_DIRECTORY", "")
    return path if os.path.isabs(path) or not wd else os.path.join(wd, path)


# --------------------------------------------------------------------------- --out


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _inside(path: str, directory: str) -> bool:
    return path != directory and os.path.commonpath([path, directory]) == directory


def _results(directory: str) -> List[str]:
    # What `conform check --candidate DIR` reads (tools/report_file.cc InputFiles).
    return sorted(n for n in os.listdir(directory) if len(n) > 3 and n.endswith(".h5"))


@dataclasses.dataclass
class OutDir:
    path: str
    removed: List[str] = dataclasses.field(default_factory=list)  # previous results --force removed


def golden_files(goldens: str) -> List[str]:
    if not os.path.isdir(goldens):
        raise UsageError(f"--goldens {goldens}: not a directory" if os.path.exists(goldens)
                         else f"--goldens {goldens}: does not exist")
    try:
        names = _results(goldens)
    except OSError as ex:
        raise UsageError(f"--goldens {goldens}: cannot list it ({ex.strerror})") from None
    if not names:
        raise UsageError(f"--goldens {goldens}: no .h5 files in it")
    return [os.path.join(goldens, n) for n in names]


def _golden_dirs(goldens: str, goldens_read: List[str]) -> List[Tuple[str, str]]:
    """(real directory, what it is) of every golden set --out must stay out of: the one
    read, with the real directories of its files where those are links (a set assembled
    from links would otherwise be overwritten through them), and the repository's own
    sets, which --force must not replace when another set is read."""
    out: List[Tuple[str, str]] = []

    def add(d: str, what: str) -> None:
        if d not in (x for x, _ in out):
            out.append((d, what))

    add(os.path.realpath(goldens), f"the goldens directory {goldens}")
    for f in goldens_read:
        d = os.path.dirname(os.path.realpath(f))
        add(d, f"{d}, the directory of the golden {f}")
    fixtures = os.path.join(REPO, "fixtures")
    for n in sorted(os.listdir(fixtures)) if os.path.isdir(fixtures) else []:
        d = os.path.join(fixtures, n)
        if n.startswith("verl-") and os.path.isdir(d):
            what = f"the golden set {d} of this repository"
            add(os.path.realpath(d), what)
            with contextlib.suppress(OSError):
                for f in _results(d):
                    add(os.path.dirname(os.path.realpath(os.path.join(d, f))), what)
    return out


def claim_out(out: str, goldens: str, goldens_read: List[str], inputs: List[Tuple[str, str]],
              force: bool) -> OutDir:
    """Check that `out` may receive this run's files before anything runs; with `force`,
    remove the results it holds. UsageError (and nothing touched) otherwise. `inputs`:
    (option, path) of the files the run reads besides the goldens."""
    who = f"--out {out}"
    real = os.path.realpath(out)
    for d, what in _golden_dirs(goldens, goldens_read):
        if real == d:
            raise UsageError(f"{who}: {what}; refusing to write over it")
        if _inside(real, d):
            raise UsageError(f"{who}: inside {what}; refusing to write into it")
    for option, p in inputs:
        if os.path.exists(p) and real == os.path.realpath(p):
            raise UsageError(f"{who}: the same file as the input {option} {p}; refusing to overwrite an input")

    try:
        lst = os.lstat(out)
    except (FileNotFoundError, NotADirectoryError):
        lst = None
    except OSError as ex:
        raise UsageError(f"{who}: cannot examine it ({ex.strerror})") from None
    if lst is None:
        # Created at write time, with its parents; checked now so that a run does not
        # compute for an hour to find it cannot be written.
        above = os.path.dirname(os.path.abspath(out))
        while not os.path.lexists(above):
            above = os.path.dirname(above)
        if not os.path.isdir(above):
            raise UsageError(f"{who}: {above} is not a directory")
        if not os.access(above, os.W_OK | os.X_OK):
            raise UsageError(f"{who}: cannot create it: the directory {above} is not writable")
        return OutDir(out)
    link = stat.S_ISLNK(lst.st_mode)
    try:
        st = os.stat(out) if link else lst
    except OSError:
        raise UsageError(f"{who}: a symbolic link to nothing; the harness writes into a directory or a new name") \
            from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{who}: {'a symbolic link to ' if link else ''}{_kind(st.st_mode)}; "
                         "the harness writes into a directory or a new name")
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"{who}: the directory is not writable")
    try:
        names = _results(out)
    except OSError as ex:
        raise UsageError(f"{who}: cannot list it ({ex.strerror})") from None
    read = {}
    for option, p in [("--goldens", f) for f in goldens_read] + inputs:
        with contextlib.suppress(OSError):
            s = os.stat(p)
            read[(s.st_dev, s.st_ino)] = f"{option} {p}" if option != "--goldens" else f"the golden {p}"
    for n in names:
        with contextlib.suppress(OSError):
            s = os.stat(os.path.join(out, n))
            if (s.st_dev, s.st_ino) in read:
                raise UsageError(f"{who}: holds {n}, the same file as {read[(s.st_dev, s.st_ino)]}; "
                                 "refusing to overwrite an input")
    if names and not force:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise UsageError(f"{who}: already holds {len(names)} result file(s) ({shown}); "
                         "pass --force to replace them")
    for n in names:
        try:
            m = os.lstat(os.path.join(out, n)).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(m) or stat.S_ISLNK(m)):
            raise UsageError(f"{who}: holds {n}, {_kind(m)}, not a result file; refusing to remove it")
    claim = OutDir(out)
    # As conform with a previous --report: once a run may replace the results they are
    # gone, so that a run that fails or is killed never leaves an earlier run's set behind.
    for n in names:
        try:
            os.unlink(os.path.join(out, n))
        except FileNotFoundError:
            continue
        except OSError as ex:
            raise UsageError(f"{who}: cannot remove the previous {n} ({ex.strerror})") from None
        claim.removed.append(n)
    return claim


# --------------------------------------------------------------------------- writing


@contextlib.contextmanager
def _blocked() -> Iterator[None]:
    # No signal between creating a temporary and recording its name for the clean-up.
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    def handler(signum, frame):
        raise Signalled(signum)

    previous = {}
    for s in SIGNALS:
        old = signal.getsignal(s)
        if old is signal.SIG_IGN:  # nohup and friends: the user asked for it to be ignored
            continue
        previous[s] = old
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _fsync_dir(directory: str) -> None:
    # The renames reach the disk with the directory; a failure here loses nothing written.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


Files = List[Tuple[str, Dict[str, Any], List[h5schema.CaseRecord]]]


def write_candidate(out: str, files: Files, writer: Optional[Callable[..., None]] = None) -> None:
    """Every file into an exclusive temporary in `out`, then all renamed into place. On any
    failure (or SIGINT/SIGTERM/SIGHUP, re-raised as Signalled) the temporaries, the files
    already renamed and the directories this call created are removed."""
    writer = writer or h5schema.write_fixture_file
    created: List[str] = []
    temps: Dict[str, str] = {}
    placed: List[str] = []
    with _signals_raise():
        try:
            missing = []
            d = os.path.abspath(out)
            while not os.path.lexists(d):
                missing.append(d)
                d = os.path.dirname(d)
            for d in reversed(missing):
                os.mkdir(d)
                created.append(d)
            for name, root, records in files:
                with _blocked():
                    fd, tmp = tempfile.mkstemp(prefix="." + name + TEMP_TAG, dir=out)
                    temps[name] = tmp
                os.close(fd)
                writer(tmp, root, records)
            for name, tmp in temps.items():
                with _blocked():
                    os.replace(tmp, os.path.join(out, name))
                    placed.append(os.path.join(out, name))
            _fsync_dir(out)
        except BaseException:
            with _blocked():
                for tmp in temps.values():
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                for f in placed:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f)
                for d in reversed(created):
                    with contextlib.suppress(OSError):
                        os.rmdir(d)
            raise


# --------------------------------------------------------------------------- provenance


def _torch_version() -> Optional[str]:
    # The adapter's torch when it imported one; otherwise what this interpreter would
    # import, read from the installed metadata (importing torch takes seconds and is no
    # business of a numpy-only adapter's run).
    mod = sys.modules.get("torch")
    if mod is not None:
        v = getattr(mod, "__version__", None)
        return str(v) if v else None
    try:
        return importlib.metadata.version("torch")
    except Exception:  # not installed, or metadata too broken to tell
        return None


def harness_versions() -> Dict[str, str]:
    import h5py
    import numpy

    v = {"harness_python_version": platform.python_version(), "harness_numpy_version": numpy.__version__,
         "harness_h5py_version": h5py.__version__}
    torch = _torch_version()
    if torch:
        v["harness_torch_version"] = torch
    return v


def candidate_root(golden_attrs: Mapping[str, Any], producer: str, adapter_versions: Mapping[str, Any],
                   own: Mapping[str, str]) -> Dict[str, Any]:
    root = {k: golden_attrs[k] for k in FROM_GOLDENS if k in golden_attrs}
    # What the adapter vouches for, as it names it; a name the harness sets itself keeps the
    # adapter's value beside it (verl's adapter reports the installed verl_version, which
    # need not be the goldens').
    for k, v in adapter_versions.items():
        root["adapter_" + k if k in RESERVED else k] = str(v)
    root["producer"] = producer
    root.update(own)
    return root


def _adapter_versions(adapter: adapter_keys.Adapter) -> Dict[str, Any]:
    try:
        v = adapter.module.versions()
    except Exception as ex:
        raise HarnessError([f"adapter {adapter.path}: versions() raised {type(ex).__name__}: "
                            f"{str(ex).replace(chr(10), ' ').strip()}"]) from None
    if not isinstance(v, Mapping):
        raise HarnessError([f"adapter {adapter.path}: versions() returned {type(v).__name__}, not a dict"])
    return dict(v)


# --------------------------------------------------------------------------- the run


def compute(adapter_spec: str, paths: List[str], spec: Dict[str, Any]) -> Tuple[Files, Dict[str, Any]]:
    """Every case of the golden files `paths`; the files to write and the counts. Raises
    HarnessError listing every problem; nothing is written here."""
    entries = registry_spec.by_key(spec)
    try:
        adapter = adapter_keys.load_adapter(adapter_spec, entries)
    except adapter_keys.AdapterLoadError as ex:
        raise HarnessError(ex.problems) from None
    counts = {"called": 0, "raised": 0, "declined": 0, "adapter_errors": 0, "not_provided": 0}
    adapter_errors: List[str] = []
    problems: List[str] = []
    cases: List[Tuple[str, Dict[str, Any], List[h5schema.CaseRecord]]] = []
    goldens_read = []
    for p in paths:
        try:
            goldens_read.append((os.path.basename(p), h5schema.read_fixture_file(p)))
        except (OSError, h5schema.SchemaError) as ex:
            raise HarnessError([f"{p}: cannot read the golden file ({str(ex).replace(chr(10), ' ').strip()})"]) \
                from None
    progress = Progress(sum(len(g.cases) for _, g in goldens_read))
    try:
        for p, golden in goldens_read:
            family = golden.attrs.get("family")
            records = []
            for (fn, cn), g in sorted(golden.cases.items()):
                entry = entries.get((family, fn))
                if entry is None:
                    raise HarnessError([f"{p}:/{fn}: {family}/{fn} is not in the registry (conform spec --json)"])
                rec = h5schema.CaseRecord(function=fn, name=cn, dtype=g.dtype, seed=g.seed, why=g.why,
                                          cfg=dict(g.cfg), inputs=g.inputs)
                records.append(rec)
                progress.step(f"{fn}/{cn}")
                call = adapter.functions.get((family, fn))
                if call is None:
                    counts["not_provided"] += 1
                    continue
                # Golden projections (where the golden set has them) travel with the case so
                # that conform can compare the candidate's vjps.
                projections = getattr(g, "projections", None) or None
                if projections is not None:
                    if not (_has_field("projections") and _has_field("vjps")):
                        raise HarnessError([f"{p}:/{fn}/{cn}: the golden has projections, which this "
                                            "h5schema cannot write"])
                    rec.projections = dict(projections)
                out = adapter_call.call(call, adapter.path, f"{fn}/{cn}", entry, g.inputs, _config(entry, g.cfg),
                                        g.dtype, projections)
                problems.extend(out.problems)
                if out.kind != "result":
                    rec.projections = {}  # a case without a result carries no fields at all
                if out.kind == "declined":
                    counts["declined"] += 1
                    rec.declined = out.declined
                elif out.kind in ("raised", "adapter"):
                    rec.expect_error = out.error
                    if out.kind == "adapter":
                        counts["adapter_errors"] += 1
                        adapter_errors.append(f"{family}/{fn}/{cn}: {out.error}")
                    else:
                        counts["raised"] += 1
                else:
                    counts["called"] += 1
                    # Only what the adapter returned: a missing field stays missing.
                    rec.outputs, rec.grads, rec.metrics = out.outputs, out.grads, out.metrics
                    if out.vjps:
                        rec.vjps = out.vjps
            cases.append((p, golden.attrs, records))
    finally:
        progress.close()
    if problems:
        raise HarnessError(problems)
    # After the cases: an adapter may import its framework (torch) lazily.
    versions, own = _adapter_versions(adapter), harness_versions()
    files = [(p, candidate_root(attrs, adapter.name, versions, own), records) for p, attrs, records in cases]
    return files, {"counts": counts, "adapter_errors": adapter_errors}


def _die_by(signum: int) -> None:
    # Killed by the signal, as the caller (a shell, CI) expects of an interrupted tool.
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # not reached unless the signal is blocked elsewhere


def main(argv=None) -> int:
    claim: Optional[OutDir] = None

    def error(line: str) -> None:
        print(f"harness: error: {line}", file=sys.stderr)

    def removed_note() -> None:
        if claim is not None and claim.removed:
            print(f"harness: --force removed the previous results from {claim.path} "
                  f"({len(claim.removed)} file(s))", file=sys.stderr)

    try:
        args = _parse(argv)
        out = user_path(args.out)
        goldens = user_path(args.goldens) if args.goldens is not None else DEFAULT_GOLDENS
        adapter_spec = user_path(args.adapter) if args.adapter.endswith(".py") else args.adapter
        inputs = [("--adapter", adapter_keys.adapter_path(adapter_spec))]
        spec_path = user_path(args.spec) if args.spec is not None else None
        conform = user_path(args.conform) if args.conform is not None else None
        inputs += [(o, p) for o, p in (("--spec", spec_path), ("--conform", conform)) if p is not None]
        paths = golden_files(goldens)
        claim = claim_out(out, goldens, paths, inputs, args.force)
        spec = registry_spec.load_spec(spec_path, conform)
        files, res = compute(adapter_spec, paths, spec)
        try:
            write_candidate(out, files)
        except (OSError, h5schema.SchemaError) as ex:
            raise UsageError(f"--out {out}: cannot write the candidate files "
                             f"({str(ex).replace(chr(10), ' ').strip()})") from None
    except (UsageError, registry_spec.SpecError) as ex:
        error(str(ex))
        removed_note()
        return 2
    except HarnessError as ex:
        for line in ex.problems:
            error(line)
        error(f"{len(ex.problems)} problem(s); nothing written")
        removed_note()
        return 2
    except KeyboardInterrupt:
        _die_by(signal.SIGINT)
    except Signalled as ex:
        _die_by(ex.signum)
    c = res["counts"]
    for line in res["adapter_errors"]:
        print(f"harness: adapter error (never matches verl): {line}")
    print(f"harness: {c['called']} cases computed, {c['raised']} raised, {c['declined']} declined, "
          f"{c['adapter_errors']} adapter errors, {c['not_provided']} not provided -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
