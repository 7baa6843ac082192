#!/usr/bin/env python3
"""A repeatable, blind audit of the message catalogue's categories (knowledge/data/catalogue.json, RULES in
scripts/mine_catalogue.py).

The sample: entries are split into two strata by where they are raised and what they say, never by the category
under audit:

  spec    the entry is about speculation (spec_related), or is raised in a part of vLLM (or vllm-ascend) that a
          speculative deployment runs through: spec_decode / proposers / speculation models / rejection sampler,
          model runners, the KV-cache managers, CUDA graphs and compilation, schedulers, engine args and CLI, and the
          config modules of speculation, compilation, cache and scheduler (STRATUM_AREAS, STRATUM_PATHS);
  rest    every other entry.

`draw` takes `random.Random(seed).sample` of SPEC_N entries from the spec stratum and REST_N from the rest, each
stratum sorted by (sources[0], template) first, leaving out entries already audited (--exclude FILE.jsonl), and
prints them without category or rule: template, kind, sources[0]. A person labels each with a taxonomy category
(`label`, `why`) reading only those, and the source line when wanted; `score` then compares the labels with what
RULES say now.

  Audit A: seed 20261202, drawn from the catalogue as mined (before the rule changes it led to).
  Audit B: seed 4242, drawn after those changes, excluding A's entries (it measured them, then led a second round).
  Audit C: seed 9001, drawn after the second round, excluding A's and B's entries: the honest figure now.
  A next audit: a new seed, --exclude every earlier audit, labelled before `score` is run.

  python scripts/catalogue_audit.py draw --seed 9001 --exclude fixtures/catalogue/audit-A.jsonl \
      --exclude fixtures/catalogue/audit-B.jsonl > blind.jsonl
  python scripts/catalogue_audit.py score fixtures/catalogue/audit-C.jsonl [--show]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
SPEC_N, REST_N = 60, 20
SEEDS = {"A": 20261202, "B": 4242, "C": 9001}


def _miner() -> ModuleType:
    name = "mine_catalogue"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


mc = _miner()
STRATUM_AREAS = frozenset({"spec-v1", "spec-v0", "spec-config", "spec-model", "spec-sampler", "model-runner",
                           "kv-cache", "compilation", "scheduler", "args"})
STRATUM_PATHS = re.compile(r"^vllm(?:_ascend)?/config/(?:speculative|compilation|cache|scheduler)\.py$")


def stratum(e: dict) -> str:
    area = mc.entry_area(e)
    if e.get("spec_related") or mc.role_of(area) in STRATUM_AREAS or STRATUM_PATHS.search(mc.entry_path(e)):
        return "spec"
    return "rest"


def key(row: dict) -> tuple[str, str]:
    """What identifies an entry across recategorizing: its template and newest source."""
    return row["template"], row["sources"][0] if "sources" in row else row["source"]


def draw(entries: list[dict], seed: int, exclude: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
         spec_n: int = SPEC_N, rest_n: int = REST_N) -> list[dict]:
    """The blind sample: template, kind, source and stratum of each drawn entry, no category."""
    rng = random.Random(seed)
    out = []
    for name, n in (("spec", spec_n), ("rest", rest_n)):
        pool = sorted((e for e in entries if stratum(e) == name and key(e) not in exclude),
                      key=lambda e: (e["sources"][0], e["template"]))
        for e in rng.sample(pool, n):
            out.append({"template": e["template"], "source": e["sources"][0], "kind": e["kind"], "stratum": name})
    return out


def read_labels(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text("utf-8").splitlines() if ln.strip()]


def rule_category(row: dict) -> tuple[str, str]:
    """(category, rule) RULES give a labelled row now: its template, kind and source path, as mining reads them."""
    e = {"template": row["template"], "kind": row["kind"], "sources": [row["source"]]}
    got = mc.recategorize_entry(e)
    return got["category"], got.get("rule", "")


def score(rows: list[dict]) -> tuple[int, int, list[tuple[dict, str, str]]]:
    """(agreeing, total, the disagreements with the rules' category and rule)."""
    bad = []
    for r in rows:
        c, rule = rule_category(r)
        if c != r["label"]:
            bad.append((r, c, rule))
    return len(rows) - len(bad), len(rows), bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("draw", help="print a blind seeded sample (JSON lines, no category)")
    d.add_argument("--seed", type=int, required=True)
    d.add_argument("--exclude", action="append", default=[], help="a labelled sample whose entries are left out")
    d.add_argument("--catalogue", default=str(mc.DEFAULT_OUT))
    s = sub.add_parser("score", help="agreement of a labelled sample with the current RULES")
    s.add_argument("labels")
    s.add_argument("--show", action="store_true", help="print each disagreement")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "draw":
            entries = json.loads(Path(args.catalogue).read_text("utf-8"))["entries"]
            ex = {key(r) for f in args.exclude for r in read_labels(Path(f))}
            for row in draw(entries, args.seed, ex):
                print(json.dumps(row, ensure_ascii=False))
            return 0
        rows = read_labels(Path(args.labels))
    except (OSError, ValueError, KeyError) as exc:
        print(f"catalogue_audit: {exc}", file=sys.stderr)
        return 2
    ok, n, bad = score(rows)
    for part in ("spec", "rest"):
        sub_rows = [r for r in rows if r.get("stratum") == part]
        if sub_rows:
            k, m, _ = score(sub_rows)
            print(f"{part}: {k}/{m}")
    print(f"agreement: {ok}/{n} ({100 * ok / n:.0f} %)")
    if args.show:
        for r, c, rule in bad:
            print(f"  label {r['label']:<26} rules {c:<26} ({rule}) {r['kind']}: {r['template'][:110]!r} "
                  f"[{r['source']}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
