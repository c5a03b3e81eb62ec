"""`conform explore --shard I/N` and `conform explore merge`: for any N, the N parts of a run
merged give the unsharded run's counts and differences; one part merged alone reports the
unsharded run member for member (every minimal case, element and grade, so the run's
encoding loses nothing); the parts are balanced; and a merge refuses parts of different
runs, a part given twice, a missing part (unless --partial, which says so and gives no
verdict) and files that are no shard, each with exit 2 and one line naming the file.
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

CONFORM = os.path.abspath(sys.argv.pop(1))

# A planted fault of the numpy example that shows in plain rows and in sharded (dp) rows.
BUG = "k3_no_clamp"
RUN = ("--adapter", "numpy_example", "--python", sys.executable, "--cases", "60", "--shrink-seconds", "5")
TIMINGS = {"explore_seconds", "shrink_seconds"}


def conform(*args, bug=BUG):
    env = dict(os.environ, VERLCONF_EXAMPLE_BUG=bug)
    return subprocess.run([CONFORM, *args], capture_output=True, text=True, env=env, timeout=600)


def without_timings(doc):
    """The document with what a clock decides (seconds, shrink times) taken out."""
    if isinstance(doc, dict):
        return {k: without_timings(v) for k, v in doc.items() if k not in TIMINGS and k != "shards"}
    if isinstance(doc, list):
        return [without_timings(v) for v in doc]
    return doc


COUNTED = (
    "function",
    "dp_ranks",
    "cases",
    "passed",
    "failed",
    "baselined",
    "mistrusted",
    "unsupported",
    "skipped",
    "refused",
)


def counts(doc):
    return [tuple(row[k] for k in COUNTED) for row in doc["functions"]]


def difference_key(d):
    return (d["function"], d["dp_ranks"], d["field"], d["kind"], d["grade"], d["cause"])


class Sharded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        p = conform("explore", *RUN, "--format", "json")
        assert p.returncode == 1, p.stderr  # the planted fault is found
        cls.full = json.loads(p.stdout)
        assert cls.full["differences"], "the planted fault shows no difference"

    def shards(self, n, *extra, name="s", bug=BUG):
        paths = []
        for i in range(n):
            p = conform("explore", *RUN, *extra, "--shard", f"{i}/{n}", "--format", "json", bug=bug)
            self.assertIn(p.returncode, (0, 1, 4), p.stderr)
            doc = json.loads(p.stdout)
            self.assertEqual(doc["shard"], {"index": i, "count": n})
            path = os.path.join(self.tmp, f"{name}{n}_{i}{bug}.json")
            with open(path, "w") as f:
                f.write(p.stdout)
            paths.append(path)
        return paths

    def merge(self, *args):
        return conform("explore", "merge", *args)

    def test_any_number_of_parts_merges_into_the_unsharded_run(self):
        rng = random.Random(20261205)
        for n in sorted({2, 3, rng.randint(4, 9)}):
            with self.subTest(parts=n):
                p = self.merge(*self.shards(n), "--format", "json")
                self.assertEqual(p.returncode, 1, p.stderr)
                merged = json.loads(p.stdout)
                self.assertEqual(counts(merged), counts(self.full))
                self.assertEqual(
                    {k: v for k, v in merged["totals"].items() if k not in TIMINGS},
                    {k: v for k, v in self.full["totals"].items() if k not in TIMINGS},
                )
                self.assertEqual(
                    sorted(map(difference_key, merged["differences"])),
                    sorted(map(difference_key, self.full["differences"])),
                )
                for m, f in zip(merged["differences"], self.full["differences"]):
                    self.assertEqual(difference_key(m), difference_key(f))  # the same order too
                    self.assertEqual(
                        (m["cases"], m["first_case"], m["first_regime"]),
                        (f["cases"], f["first_case"], f["first_regime"]),
                    )
                    # No shard's minimal case is larger than the one the serial run shrank to.
                    self.assertLessEqual(
                        (m["minimal"]["rows"], m["minimal"]["tokens"]), (f["minimal"]["rows"], f["minimal"]["tokens"])
                    )
                self.assertEqual(merged["shards"], {"count": n, "merged": list(range(n)), "missing": []})

    def test_one_part_merged_alone_is_the_unsharded_run_member_for_member(self):
        (only,) = self.shards(1)
        p = self.merge(only, "--format", "json")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(without_timings(json.loads(p.stdout)), without_timings(self.full))
        text = self.merge(only).stdout.splitlines()
        full = conform("explore", *RUN).stdout.splitlines()
        timed = ("explored ", "  minimal case (", "difference(s), each shrunk")
        self.assertEqual(text[1], "merged from 1 of 1 shards")
        self.assertEqual(
            [line for line in text[:1] + text[2:] if not any(t in line for t in timed)],
            [line for line in full if not any(t in line for t in timed)],
        )

    def test_parts_are_balanced(self):
        for n in (3, 7):
            for path in self.shards(n, name="b"):
                with open(path) as f:
                    doc = json.load(f)
                for row in doc["functions"]:
                    whole = next(
                        r
                        for r in self.full["functions"]
                        if (r["function"], r["dp_ranks"]) == (row["function"], row["dp_ranks"])
                    )
                    self.assertLessEqual(abs(row["cases"] * n - whole["cases"]), n, (n, row))

    def test_the_merge_writes_the_same_files_as_a_run(self):
        paths = self.shards(2)
        out, report, junit = (os.path.join(self.tmp, x) for x in ("merged_out", "merged.md", "merged.xml"))
        p = self.merge(*paths, "--out", out, "--report", report, "--junit", junit)
        self.assertEqual(p.returncode, 1, p.stderr)
        for sub in ("cases", "candidate", "repro"):
            self.assertTrue(os.listdir(os.path.join(out, sub)), sub)
        with open(os.path.join(out, "explore.json")) as f:
            self.assertEqual(len(json.load(f)["differences"]), len(self.full["differences"]))
        with open(report) as f:
            self.assertIn("merged from 2 of 2 shards", f.read())
        with open(junit) as f:
            xml = f.read()
        self.assertEqual(
            xml.count("<failure "),
            len(self.full["differences"]) + len({(d["function"], d["dp_ranks"]) for d in self.full["differences"]}),
        )
        # The minimal cases replay through check, as a run's do.
        replay = [line for line in p.stdout.splitlines() if line.startswith("  replay: ")][0]
        r = conform("check", *replay.split(" check ", 1)[1].split())
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)

    def test_a_merge_refuses_what_is_not_one_run(self):
        two = self.shards(2)
        other = conform("explore", *RUN[:-2], "--seed", "3", "--shard", "1/2", "--format", "json")
        other_path = os.path.join(self.tmp, "other_seed.json")
        with open(other_path, "w") as f:
            f.write(other.stdout)
        truncated = os.path.join(self.tmp, "truncated.json")
        with open(two[1]) as f, open(truncated, "w") as g:
            g.write(f.read()[:5000])
        full = os.path.join(self.tmp, "unsharded.json")
        with open(full, "w") as f:
            json.dump(self.full, f)
        cases = [
            ((two[0], other_path), "shards of different runs: seed (0 vs 3)"),
            ((two[0], two[0], two[1]), "part 0 given twice"),
            ((two[0],), "part(s) 1 of 2 missing"),
            ((two[0], truncated), "truncated.json: malformed JSON"),
            ((two[0], full), "unsharded.json: the explore run of no shard"),
            ((two[0], self.tmp), "a directory, not a regular file"),
            ((), "give the shards' JSON files"),
        ]
        for args, message in cases:
            with self.subTest(message=message):
                p = self.merge(*args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(message, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        for bad in ("2/2", "1", "a/2", "0/0", "-1/2", ""):
            with self.subTest(shard=bad):
                p = conform("explore", *RUN, "--shard", bad)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--shard", p.stderr)

    def test_a_partial_merge_says_what_is_missing_and_gives_no_verdict(self):
        three = self.shards(3, bug="")
        p = self.merge("--partial", three[0], three[2])
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertIn("merged from 2 of 3 shards; missing part(s) 1: an incomplete run", p.stdout)
        self.assertIn("no verdict on the whole run", p.stderr)
        whole = self.merge(*three)
        self.assertEqual(whole.returncode, 0, whole.stdout + whole.stderr)


if __name__ == "__main__":
    unittest.main()
