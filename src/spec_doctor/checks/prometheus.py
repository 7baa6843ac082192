"""Checks on what a Prometheus server said besides the numbers (``check --prometheus``).

The numbers themselves go through the metrics and fleet checks (collectors/prometheus.py turns each instance
into a /metrics window); this check judges how far they can be trusted: a partial answer (a store or shard
that did not respond), replicas restarted inside the window, and series an instance does not export
because it runs an older vLLM release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.parsers.promparse import metric_table

_API = "https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview"
_INCREASE = "https://prometheus.io/docs/prometheus/latest/querying/functions/#increase"
_METRICS = "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/v1/metrics/loggers.py"


def _where(view: Any) -> str:
    return f"Prometheus {view.url}" + (f" {view.selector}" if view.selector else "") + f" [{view.range}]"


def _release(role: str) -> str:
    row = metric_table()["metric"][role]
    return f"{row['names'][0]} (vLLM {row.get('since', '?')}+: {row['versions']})"


@check("prometheus.query", categories=["measurement", "env-version"], needs=["prometheus.view"],
       findings={"prometheus.query.partial": "the store answered with warnings or a partial result: some series "
                                             "may be missing from the numbers",
                 "prometheus.query.restarts": "replicas restarted inside the window (increase() bridged the "
                                              "counter resets)",
                 "prometheus.query.missing-series": "an instance exports no series for a metric the checks use: "
                                                    "an older vLLM release"},
       sources=[_API, _INCREASE, _METRICS])
def query(facts: Mapping[str, Any]) -> list[Finding]:
    """Can the numbers read from Prometheus be trusted, and are they complete?

    Prometheus returns ``warnings`` (Thanos: partial responses when a store API is down; VictoriaMetrics sets
    ``isPartial``), so a fleet summed from such an answer may lack replicas or samples. ``increase()``
    compensates counter resets, so a restart does not break the window, but the replica's figures then
    mix two runs. vLLM added metrics over its releases (knowledge/data/metrics.toml ``since``): an instance
    without, e.g., vllm:spec_decode_num_drafts_total runs a release (or the V0 engine) that predates it.
    """
    view = facts["prometheus.view"]
    where = _where(view)
    out: list[Finding] = []
    if view.warnings or view.partial:
        notes = list(view.warnings) or ["isPartial: true"]
        out.append(Finding(
            "prometheus.query.partial", Category.MEASUREMENT, Severity.WARNING, 0.9,
            f"Prometheus answered with {len(notes)} warning(s): the numbers may miss series",
            tuple(Evidence(where, n[:300]) for n in notes[:5]),
            Fix("Query again when every store/shard answers, or narrow --selector and --window",
                (f"curl -s '{view.url}/api/v1/query' --data-urlencode 'query=up' | head -c 400",)),
            impact="Acceptance, preemptions and KV usage may be computed from part of the fleet's data.",
            impact_score=0.3, data={"warnings": notes, "partial": view.partial}))
    if view.restarts:
        out.append(Finding(
            "prometheus.query.restarts", Category.MEASUREMENT, Severity.INFO, 0.9,
            f"{len(view.restarts)} instance(s) restarted inside the {view.range} window; increase() bridged the "
            "counter resets",
            tuple(Evidence(f"{ep} (Prometheus, resets over {view.range})",
                           f"{n} counter reset(s) of vllm:generation_tokens_total") for ep, n in view.restarts.items()),
            Fix("To judge one run only, pick a window after the last restart",
                ("spec-doctor check --prometheus URL --window 15m",)),
            impact="Those replicas' figures mix the runs before and after the restart.", impact_score=0.1,
            data={"restarts": dict(view.restarts)}))
    for ep, roles in view.missing.items():
        out.append(Finding(
            "prometheus.query.missing-series", Category.ENV_VERSION, Severity.INFO, 0.8,
            f"{ep} exports no {', '.join(roles)} series: it runs a vLLM release (or engine) that predates them",
            tuple(Evidence(f"{ep} (Prometheus, series over {view.range})", f"no series: {_release(r)}")
                  for r in roles),
            Fix("Upgrade that replica to the fleet's vLLM release; meanwhile its missing figures are not compared",
                ("pip install -U vllm",)),
            impact="Checks that need those series skip this instance.", impact_score=0.1,
            data={"endpoint": ep, "roles": roles}))
    return out
