"""Diagnostic accuracy on the ten original example reports in fixtures/cases (the whole corpus, with its
dev/test split, is scored by test_corpus.py).

spec-doctor must name each case's `primary` category in its top three and none of `must_not`;
healthy controls must produce no error-severity finding. Threshold: 9 of 10.
"""

from __future__ import annotations

from conftest import CASES
from evaluation import ORIGINAL_EXAMPLES, case_args, score, table


def test_case_hit_rate(capsys):
    rows = []
    healthy_errors = []
    for case_dir in sorted(CASES / name for name in ORIGINAL_EXAMPLES):
        args, meta = case_args(case_dir)
        r = score(meta["id"], args, meta["primary"], meta["must_not"])
        rows.append(r)
        if meta["healthy_control"] and r.verdict == "broken":
            healthy_errors.append(meta["id"])
    hits = [r for r in rows if r.primary_rank and r.primary_rank <= 3 and not r.violations]
    with capsys.disabled():
        print("\n" + table(rows))
        print(f"shared cases: {len(hits)}/{len(rows)} primary in top 3 with no must_not")
    assert not healthy_errors, f"healthy controls reported broken: {healthy_errors}"
    assert len(rows) == 10
    assert len(hits) >= 9, table(rows)
