"""Prometheus alerting rules for the conditions spec-doctor's checks diagnose (`spec-doctor alerts`).

One rule group: recording rules that reduce vLLM's counters to per-replica figures over a window (the
``increase()`` of drafts, draft tokens, accepted tokens, generated tokens and preemptions; acceptance; K
from the per-position counters), then alerts that mirror the checks, with the checks' thresholds
(knowledge/data/thresholds.toml) and the taxonomy category and finding id as labels:

  SpecDecodeStalled            metrics.spec-active.stalled   speculation configured (its counters exist) but
                                                             no draft while tokens are generated
  SpecDecodeAcceptanceZero     metrics.acceptance.zero       not one draft token accepted
  SpecDecodeAcceptanceOutlier  fleet.acceptance.outlier      a replica accepts far less than the fleet median
  SpecDecodeAcceptanceDropped  fleet.acceptance.outlier      a replica accepts far less than it did a day ago
                                                             (another draft deployed, traffic changed)
  SpecDecodeKDrift             fleet.config.k-differs        a replica drafts another K than the fleet
  VllmPreemptions              metrics.kv.preemptions        requests preempted for lack of KV cache
  VllmKVCacheSaturated         metrics.kv.saturated          KV cache >= kv_saturated with requests waiting

vLLM exports no label naming the draft model, so "a replica drifting to another draft" is seen through its
effect: its acceptance leaves the fleet's (outlier) or its own history (dropped), and K changes show in the
number of per-position counters. Metric names come from knowledge/data/metrics.toml; a role with several
names across releases (KV usage) is read under each of them (``or``).
"""

from __future__ import annotations

from typing import Any

from spec_doctor.knowledge.data import threshold
from spec_doctor.parsers.promapi import promql_duration, series_selector
from spec_doctor.parsers.promparse import metric_names

BY = "instance, model_name"
PREFIX = "spec_doctor"


def _counter(role: str, matchers: list[str], rng: str) -> str:
    parts = [f"sum by ({BY}) (increase({series_selector(n, matchers)}[{rng}]))" for n in metric_names(role)]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def _gauge(role: str, matchers: list[str], agg: str = "max") -> str:
    parts = [f"{agg} by ({BY}) ({series_selector(n, matchers)})" for n in metric_names(role)]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def _pct(x: float) -> str:
    return f"{100 * x:g} %"


def rules(matchers: list[str], window_s: float | None = None, for_s: float | None = None) -> dict[str, Any]:
    """The rule file as a dict (yaml.safe_dump it)."""
    rng = promql_duration(window_s if window_s is not None else threshold("alert_window_s"))
    hold = promql_duration(for_s if for_s is not None else threshold("alert_for_s"))
    min_drafted = threshold("min_drafted_tokens")
    min_gen = threshold("min_generation_tokens")
    out_abs, out_rel = threshold("fleet_outlier_abs"), threshold("fleet_outlier_rel")
    kv_sat = threshold("kv_saturated")
    r = {name: f"{PREFIX}:{name}:increase{rng}" for name in
         ("drafts", "draft_tokens", "accepted_tokens", "generation_tokens", "preemptions")}
    acc = f"{PREFIX}:acceptance:ratio{rng}"
    k = f"{PREFIX}:num_speculative_tokens"
    per_pos = metric_names("accepted_per_pos")[0]
    recording = [
        {"record": r["drafts"], "expr": _counter("num_drafts", matchers, rng)},
        {"record": r["draft_tokens"], "expr": _counter("num_draft_tokens", matchers, rng)},
        {"record": r["accepted_tokens"], "expr": _counter("num_accepted_tokens", matchers, rng)},
        {"record": r["generation_tokens"], "expr": _counter("generation_tokens", matchers, rng)},
        {"record": r["preemptions"], "expr": _counter("num_preemptions", matchers, rng)},
        # Acceptance only where enough draft tokens were verified to mean something.
        {"record": acc, "expr": f"{r['accepted_tokens']} / ({r['draft_tokens']} >= {min_drafted:g})"},
        # K as exposed: one per-position counter per draft position (vLLM >= 0.8.5).
        {"record": k, "expr": f"count by ({BY}) (count by ({BY}, position) ({series_selector(per_pos, matchers)}))"},
    ]
    median = f"quantile by (model_name) (0.5, {acc})"
    several = f"on (model_name) (count by (model_name) ({acc}) > 1)"

    def alert(name: str, expr: str, severity: str, category: str, finding: str, summary: str, description: str,
              hold_for: str = hold) -> dict[str, Any]:
        return {"alert": name, "expr": expr, "for": hold_for,
                "labels": {"severity": severity, "category": category, "spec_doctor_finding": finding},
                "annotations": {"summary": summary, "description": description,
                                "runbook": f"spec-doctor explain {finding}"}}

    inst = "{{ $labels.instance }}"
    alerts = [
        alert("SpecDecodeStalled",
              f"{r['drafts']} == 0 and on ({BY}) {r['generation_tokens']} > {min_gen:g}",
              "warning", "spec-inactive", "metrics.spec-active.stalled",
              f"Speculative decoding is configured on {inst} but did not draft in {rng}",
              f"{inst} exports spec-decode counters (speculation configured) yet made 0 drafts while generating "
              f"more than {min_gen:g} tokens in {rng}: batch-size rules or request parameters switch it off "
              "(an n-gram proposer that finds no match does this too)."),
        alert("SpecDecodeAcceptanceZero",
              f"{r['accepted_tokens']} == 0 and on ({BY}) {r['draft_tokens']} >= {min_drafted:g}",
              "critical", "low-acceptance", "metrics.acceptance.zero",
              f"Not one draft token accepted on {inst} in {rng}",
              f"{inst} verified {{{{ $value }}}} accepted of at least {min_drafted:g} draft tokens: the draft is "
              "broken or does not match the target (tokenizer, checkpoint). Every draft step is overhead."),
        alert("SpecDecodeAcceptanceOutlier",
              f"({acc} <= on (model_name) group_left () ({median} - {out_abs:g})"
              f" and {acc} <= on (model_name) group_left () ({out_rel:g} * {median}))"
              f" and {several}",
              "warning", "low-acceptance", "fleet.acceptance.outlier",
              f"{inst} accepts far fewer draft tokens than the other replicas",
              f"Acceptance {{{{ $value | humanizePercentage }}}} on {inst} over {rng}, at least "
              f"{_pct(out_abs)} points and {_pct(1 - out_rel)} below the median of the replicas serving "
              "{{ $labels.model_name }}: another draft, another K or other traffic on that replica."),
        alert("SpecDecodeAcceptanceDropped",
              f"{acc} <= {out_rel:g} * ({acc} offset 1d) and {acc} <= ({acc} offset 1d) - {out_abs:g}",
              "warning", "low-acceptance", "fleet.acceptance.outlier",
              f"Acceptance on {inst} fell against the same hour yesterday",
              f"Acceptance {{{{ $value | humanizePercentage }}}} on {inst} over {rng}, at least "
              f"{_pct(out_abs)} points and {_pct(1 - out_rel)} below its value a day earlier: a new draft "
              "checkpoint or speculative config was deployed, or the traffic changed."),
        alert("SpecDecodeKDrift",
              f"{k} != on (model_name) group_left () quantile by (model_name) (0.5, {k})"
              f" and on (model_name) (count by (model_name) ({k}) > 1)",
              "warning", "config-unsupported-combo", "fleet.config.k-differs",
              f"{inst} drafts K={{{{ $value }}}} tokens per step, unlike the other replicas",
              f"The number of per-position acceptance counters ({per_pos}) of {inst} differs from the fleet's "
              "median: that replica runs another num_speculative_tokens (or another speculative config)."),
        alert("VllmPreemptions",
              f"{r['preemptions']} > 0",
              "warning", "kv-pressure", "metrics.kv.preemptions",
              f"{inst} preempts requests for lack of KV cache",
              f"{{{{ $value }}}} preemption(s) on {inst} in {rng}: preempted requests are recomputed. Give the KV "
              "cache more room (--gpu-memory-utilization), admit fewer sequences (--max-num-seqs) or lower K."),
        alert("VllmKVCacheSaturated",
              f"{_gauge('kv_usage', matchers)} >= {kv_sat:g} and on ({BY}) {_gauge('waiting', matchers, 'sum')} >= 1",
              "warning", "kv-pressure", "metrics.kv.saturated",
              f"KV cache of {inst} is {{{{ $value | humanizePercentage }}}} full with requests waiting",
              f"KV cache usage at or above {_pct(kv_sat)} with requests waiting on {inst}: preemption is next."),
    ]
    return {"groups": [{"name": "spec-doctor", "rules": recording + alerts}]}


def rules_yaml(matchers: list[str], window_s: float | None = None, for_s: float | None = None,
               selector: str = "") -> str:
    import yaml

    doc = rules(matchers, window_s, for_s)
    head = ("# Prometheus alerting rules from spec-doctor (spec-doctor alerts): the conditions its checks diagnose,\n"
            "# with its thresholds (knowledge/data/thresholds.toml). Check with: promtool check rules FILE\n"
            + (f"# Series selector: {selector}\n" if selector else ""))
    return head + yaml.safe_dump(doc, sort_keys=False, width=10_000, allow_unicode=True)
