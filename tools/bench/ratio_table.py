#!/usr/bin/env python3
"""The ratio table: cuda_impl's timings (cuda_bench's JSON, schema verlconf-cuda-bench/2)
next to verl's own functions timed in the same run (tools/bench/bench_verl.py's JSON, schema
verlconf-bench-verl/1), eager and under torch.compile, one markdown table per shape.

    python3 tools/bench/ratio_table.py --cuda cuda_bench.json --verl bench_verl.json [--out FILE]

Either JSON may be missing or say "status": "skipped"; the table then has only the other
side's columns filled, and says why. Rows are matched by label: a cuda_bench row that
times an anchor row carries that row's label in anchor.row (its own label is
"family/name" for plain entries and the anchor label for configured ones); bench_verl's
rows are labelled with the anchor's labels. A row cuda_bench left unmeasured when its
--budget-s ran out (its not_run_budget list) reads "not run (budget)". Speed-ups are verl ms /
cuda ms. The anchor's verl 0.9.0 ms (an earlier run on an H200) is shown at the anchor's
shape only.

Exit status: 0 (a table was written, even an empty one); 1 if a given JSON is unreadable or
of another schema; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

CUDA_SCHEMA = "verlconf-cuda-bench/2"
VERL_SCHEMA = "verlconf-bench-verl/1"
ANCHOR_SHAPE = (4096, 8192)


class InputError(Exception):
    pass


def load(path: Optional[str], schema: str, what: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """(document, note): document is None where the file is absent or skipped."""
    if not path:
        return None, f"{what}: not given"
    if not os.path.isfile(path):
        return None, f"{what}: absent ({path})"
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as ex:
        raise InputError(f"{what}: {path} is not readable JSON: {ex}")
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise InputError(f"{what}: {path} is not schema {schema}")
    if doc.get("status") == "skipped":
        return None, f"{what}: skipped ({doc.get('reason', 'no reason given')})"
    return doc, ""


def _cuda_shape(row: Dict[str, Any], shapes: List[Tuple[int, int]]) -> Tuple[int, int]:
    # cuda_bench times vocab-logit entries at T/16 tokens; their rows belong to the shape
    # whose B matches and whose T (or T/16) is the row's token count.
    for b, t in shapes:
        if row.get("rows") == b and row.get("tokens") in (t, max(1, t // 16)):
            return b, t
    return int(row.get("rows", 0)), int(row.get("tokens", 0))


def _ms(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if v >= 1 else f"{v:.4f}"


def _ratio(num: Optional[float], den: Optional[float]) -> str:
    if num is None or den is None or den <= 0:
        return "-"
    return f"{num / den:.1f}x" if num / den < 100 else f"{num / den:.0f}x"


def _verl_cell(row: Optional[Dict[str, Any]], mode: str) -> Tuple[str, Optional[float]]:
    if row is None:
        return "-", None
    status = row.get(f"{mode}_status", "")
    if status == "ok" and row.get(f"{mode}_ms") is not None:
        return _ms(row[f"{mode}_ms"]), float(row[f"{mode}_ms"])
    if status.startswith("not compiled"):
        return "not compiled", None
    if status.startswith("not run"):
        return "not run (budget)", None
    if status.startswith("error"):
        return "error", None
    return "-", None


def build(cuda: Optional[Dict[str, Any]], verl: Optional[Dict[str, Any]], notes: List[str]) -> Tuple[str, Dict]:
    """The markdown text and the counts of the summary."""
    shapes: List[Tuple[int, int]] = []
    for doc in (cuda, verl):
        for s in (doc or {}).get("shapes", []):
            if tuple(s) not in shapes:
                shapes.append(tuple(s))
    cuda_rows: Dict[Tuple[str, Tuple[int, int]], Dict[str, Any]] = {}
    order: Dict[Tuple[int, int], List[str]] = {}
    for r in (verl or {}).get("rows", []):
        shape = (int(r["rows"]), int(r["tokens"]))
        if shape not in shapes:
            shapes.append(shape)
        order.setdefault(shape, [])
        if r["label"] not in order[shape]:
            order[shape].append(r["label"])
    verl_rows = {(r["label"], (int(r["rows"]), int(r["tokens"]))): r for r in (verl or {}).get("rows", [])}
    # "label@BxT" of the rows cuda_bench's --budget-s left unmeasured: a gap in the cuda
    # columns says so, rather than looking like a row cuda_bench does not have.
    cuda_not_run = set((cuda or {}).get("not_run_budget", []))
    for r in (cuda or {}).get("results", []):
        shape = _cuda_shape(r, shapes)
        if shape not in shapes:
            shapes.append(shape)
        key = (r.get("anchor") or {}).get("row") or r["label"]
        cuda_rows[(key, shape)] = r
        order.setdefault(shape, [])
        if key not in order[shape]:
            order[shape].append(key)

    out: List[str] = ["# cuda_impl vs verl's own functions, same run", ""]
    if cuda:
        dev = (cuda.get("device") or {}).get("name", cuda.get("system", "?"))
        out.append(f"- cuda_bench: {dev}, status {cuda.get('status', '?')}")
    if verl:
        dev = (verl.get("device") or {}).get("name", "?")
        out.append(
            f"- bench_verl: verl {verl.get('verl_version', '?')}, torch {verl.get('torch_version', '?')}, "
            f"{dev}; stubbed modules: {', '.join(verl.get('stubs', [])) or 'none'}"
        )
    out += [f"- {n}" for n in notes]
    out.append("- speed-up: verl ms / cuda ms; meets: cuda ms within the target (1.5x the roofline, gae 3x)")
    out.append("")
    totals = {
        "both_compiled": 0,
        "faster_than_compiled": 0,
        "both_eager": 0,
        "faster_than_eager": 0,
        "cuda_ok": 0,
        "within_target": 0,
    }
    for shape in shapes:
        labels = order.get(shape, [])
        if not labels:
            continue
        anchor = shape == ANCHOR_SHAPE
        out.append(f"## B={shape[0]} x T={shape[1]}")
        out.append("")
        head = [
            "function",
            "cuda ms",
            "x roofline",
            "meets target",
            "verl eager ms",
            "verl compiled ms",
            "speed-up over eager",
            "speed-up over compiled",
        ]
        if anchor:
            head.append("anchor verl 0.9.0 ms")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        c = {k: 0 for k in totals}
        for label in labels:
            cr = cuda_rows.get((label, shape))
            vr = verl_rows.get((label, shape))
            cuda_ms = None
            if cr is None:
                at = f"@{shape[0]}x{shape[1]}"
                keys = [label + at] + ([f"{vr['family']}/{vr['name']}{at}"] if vr and "family" in vr else [])
                cells = ["not run (budget)" if any(k in cuda_not_run for k in keys) else "-", "-", "-"]
            elif cr.get("status") == "ok" and cr.get("ms") is not None:
                cuda_ms = float(cr["ms"])
                ratio = cr.get("ratio_to_roofline")
                meets = cr.get("meets_target")
                cells = [
                    _ms(cuda_ms),
                    "-" if ratio is None else f"{ratio:.2f}",
                    "-" if meets is None else ("yes" if meets else "NO"),
                ]
                c["cuda_ok"] += 1
                c["within_target"] += bool(meets)
            elif cr.get("status") == "ok" and cr.get("host_wall_ms") is not None:
                # cuda_bench --system host: a plumbing check, not a device timing
                cells = [_ms(float(cr["host_wall_ms"])) + " (host)", "-", "-"]
            else:
                cells = [str(cr.get("status", "?")), "-", "-"]
            eager_txt, eager = _verl_cell(vr, "eager")
            comp_txt, comp = _verl_cell(vr, "compile")
            if cuda_ms is not None and eager is not None:
                c["both_eager"] += 1
                c["faster_than_eager"] += cuda_ms < eager
            if cuda_ms is not None and comp is not None:
                c["both_compiled"] += 1
                c["faster_than_compiled"] += cuda_ms < comp
            row = [label] + cells + [eager_txt, comp_txt, _ratio(eager, cuda_ms), _ratio(comp, cuda_ms)]
            if anchor:
                a = (cr or {}).get("anchor", {}).get("verl_eager_ms") if cr else None
                if a is None and vr is not None:
                    a = vr.get("anchor_verl_0_9_0_ms")
                row.append(_ms(a))
            out.append("| " + " | ".join(row) + " |")
        out.append("")
        out.append(_summary(f"B={shape[0]} x T={shape[1]}", c))
        out.append("")
        for k in totals:
            totals[k] += c[k]
    out.append(_summary("all shapes", totals))
    return "\n".join(out) + "\n", totals


def _summary(what: str, c: Dict[str, int]) -> str:
    return (
        f"Summary ({what}): cuda faster than compiled verl in {c['faster_than_compiled']} of "
        f"{c['both_compiled']} rows timed both ways, faster than eager verl in {c['faster_than_eager']} of "
        f"{c['both_eager']}; {c['within_target']} of {c['cuda_ok']} cuda rows within target."
    )


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="ratio_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuda", default="", help="cuda_bench's --json output")
    ap.add_argument("--verl", default="", help="tools/bench/bench_verl.py's --json output")
    ap.add_argument("--out", default="", help="also write the markdown here")
    a = ap.parse_args(argv)
    try:
        cuda, n1 = load(a.cuda, CUDA_SCHEMA, "cuda_bench")
        verl, n2 = load(a.verl, VERL_SCHEMA, "bench_verl")
    except InputError as ex:
        print(f"ratio_table.py: {ex}", file=sys.stderr)
        return 1
    text, _ = build(cuda, verl, [n for n in (n1, n2) if n])
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
