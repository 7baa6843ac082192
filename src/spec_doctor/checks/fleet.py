"""Checks across servers: the findings that differ between replicas (or data-parallel engines).

Everything comes from the fact ``fleet.summary`` (doctor/fleet.py): one unit per server or engine with its
acceptance, tokens/step, KV usage, preemptions, waiting queue, draft and K, each with its source. A fleet
finding cites every server it compares, so the odd one out is visible next to the ones that behave.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold

_SIGNALS = "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/v1/metrics/loggers.py"
_SPEC = "https://github.com/vllm-project/vllm/blob/v0.10.2/vllm/v1/spec_decode/metrics.py"

# Enough drafted tokens for an acceptance rate to mean something (the same floor as logs.acceptance).
MIN_DRAFTED = threshold("min_drafted_tokens")
# An outlier accepts this much less than the others, in absolute terms and as a share of their median.
OUTLIER_ABS = threshold("fleet_outlier_abs")
OUTLIER_REL = threshold("fleet_outlier_rel")
# KV usage (percent): saturated on one server while others stay well below.
KV_COMFORTABLE = 100 * threshold("kv_low")
# Servers a finding lists one by one (evidence and data); more are counted.
CITED = 12


def comparable(units: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Servers whose inputs could be read (a server with an `error` is reported, not compared)."""
    return [u for u in units if not u.get("error")]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: Any) -> str:
    if x is None:
        return "n/a"
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.3g}"


def _src(u: Mapping[str, Any], *keys: str) -> str:
    s = u.get("sources") or {}
    for k in keys:
        if s.get(k):
            return str(s[k])
    return str(u.get("log") or u.get("metrics_url") or u["name"])


def _evidence(units: Sequence[Mapping[str, Any]], keys: tuple[str, ...],
              describe: Callable[[Mapping[str, Any]], str]) -> tuple[Evidence, ...]:
    """One line per server, the odd ones first; past CITED servers (a fleet read from Prometheus can have
    hundreds) the rest is counted, not listed: every server's figures are in the fleet section."""
    out = [Evidence(_src(u, *keys), f"{u['name']}: {describe(u)}") for u in units[:CITED]]
    if len(units) > CITED:
        out.append(Evidence("fleet", f"... and {len(units) - CITED} more server(s): see the servers table"))
    return tuple(out)


def _rows(units: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The compared servers' figures for a finding's data, bounded like its evidence."""
    return [_row(u) for u in units[:CITED]]


def _about(odd: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A finding about one server names it as its ``endpoint`` (as the metrics findings do), so that its
    diagnosis is that server's and not the fleet's (report/merge.py)."""
    if len(odd) != 1:
        return {}
    u = odd[0]
    return {"endpoint": u.get("metrics_url") or u.get("log") or u["name"]}


def _row(u: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("name", "acceptance_rate", "mean_acceptance_length", "k", "draft_model", "method", "kv_usage_max",
            "preemptions", "waiting_max", "vllm_version")
    return {k: u.get(k) for k in keep}


def _inspect(u: Mapping[str, Any]) -> str:
    if u.get("inspect"):  # the source knows how to look at this server alone (Prometheus: a selector)
        return str(u["inspect"])
    if u.get("log") and u.get("metrics_url"):
        return f"spec-doctor check --log {u['log']} --metrics-url {u['metrics_url']}"
    if u.get("log"):
        return f"spec-doctor check --log {u['log']}"
    return f"spec-doctor check --metrics-url {u['metrics_url']}"


@check("fleet.kv", categories=["kv-pressure"], needs=["fleet.summary"],
       findings={"fleet.kv.preempting-replica": "one server preempts requests for lack of KV cache while the "
                                                "others do not",
                 "fleet.kv.imbalance": "one server's KV cache is full with requests waiting while the others "
                                       "have room: the load is not balanced"},
       sources=[_SIGNALS])
def kv(facts: Mapping[str, Any]) -> list[Finding]:
    """KV pressure on some servers but not others: preemptions, or a full KV cache with a waiting queue.

    Preemption recomputes (or swaps) whole requests, which undoes the speed speculation buys; when only one
    replica of a fleet does it, that replica has less KV memory (different --gpu-memory-utilization,
    --max-model-len, draft size) or receives more load than its share.
    """
    units = comparable(facts["fleet.summary"]["servers"])
    known = [u for u in units if u.get("preemptions") is not None]
    out: list[Finding] = []
    hot = [u for u in known if u["preemptions"] > 0]
    calm = [u for u in known if u["preemptions"] == 0]
    if hot and calm:
        worst = max(hot, key=lambda u: u["preemptions"])
        names = ", ".join(u["name"] for u in hot)
        out.append(Finding(
            "fleet.kv.preempting-replica", Category.KV_PRESSURE, Severity.WARNING, 0.75,
            f"{names} preempted requests ({_num(worst['preemptions'])} at most) while "
            f"{len(calm)} other server(s) did not",
            _evidence(hot + calm, ("preemptions", "stats", "metrics"),
                      lambda u: f"preemptions {_num(u['preemptions'])}, KV usage max "
                                f"{_num(u.get('kv_usage_max'))}%, waiting max {_num(u.get('waiting_max'))}"),
            Fix("Diagnose the preempting server on its own and give it the KV budget of the others (same "
                "--gpu-memory-utilization, --max-model-len, --max-num-seqs), or route less load to it.",
                tuple(_inspect(u) for u in hot[:3])),
            impact="Preempted requests are recomputed; that server's latency and throughput fall behind the fleet.",
            impact_score=0.6, data={"servers": _rows(hot + calm), **_about(hot)}))
    kvk = [u for u in units if u.get("kv_usage_max") is not None]
    full = [u for u in kvk if u["kv_usage_max"] >= 100 * threshold("kv_saturated") and (u.get("waiting_max") or 0) > 0
            and u not in hot]
    room = [u for u in kvk if u["kv_usage_max"] < KV_COMFORTABLE]
    if full and room:
        names = ", ".join(u["name"] for u in full)
        out.append(Finding(
            "fleet.kv.imbalance", Category.KV_PRESSURE, Severity.WARNING, 0.6,
            f"{names}: KV cache {max(u['kv_usage_max'] for u in full):.0f}% full with requests waiting, while "
            f"{len(room)} other server(s) stay below {KV_COMFORTABLE:.0f}%",
            _evidence(full + room, ("stats", "metrics"),
                      lambda u: f"KV usage max {_num(u['kv_usage_max'])}%, waiting max {_num(u.get('waiting_max'))}"
                                f", running max {_num(u.get('running_max'))}"),
            Fix("Balance the load across the servers (least-outstanding-requests routing rather than round robin), "
                "or check that the full one runs with the same memory settings.",
                tuple(_inspect(u) for u in full[:3])),
            impact="Requests queue on one server while others idle: tail latency rises for no reason.",
            impact_score=0.5, data={"servers": _rows(full + room), **_about(full)}))
    return out


def _split(units: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Any]):
    """(majority value, its units, the other units) over units whose key is known; None when all agree."""
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for u in units:
        k = key(u)
        if k is not None:
            groups.setdefault(k, []).append(u)
    if len(groups) < 2:
        return None
    ranked = sorted(groups.items(), key=lambda kv: len(kv[1]), reverse=True)
    return ranked[0][0], ranked[0][1], [u for _, g in ranked[1:] for u in g]


def _spec_key(u: Mapping[str, Any]) -> tuple[str, str] | None:
    """(method, draft name) as comparable text; a local path and a hub id of one model compare equal
    by their last component."""
    method, model = u.get("method"), u.get("draft_model")
    if method is None and model is None:
        return None
    name = str(model).rstrip("/").rsplit("/", 1)[-1].lower() if model else ""
    return (str(method or "").lower(), name)


@check("fleet.config", categories=["config-unsupported-combo", "env-version"], needs=["fleet.summary"],
       findings={"fleet.config.draft-differs": "the servers run different speculation: another draft model or "
                                               "method, or speculation off on some",
                 "fleet.config.k-differs": "the servers draft a different number of tokens per step (K)",
                 "fleet.config.version-differs": "the servers run different vLLM versions"},
       sources=[_SPEC])
def config(facts: Mapping[str, Any]) -> list[Finding]:
    """Configuration drift between servers that should be replicas: draft model/method, K, vLLM version.

    Behind one load balancer, replicas that speculate differently answer at different speeds and make every
    measurement of the fleet a mixture. Only values each server's own start-up lines (or /metrics) show are
    compared; a server whose configuration is unknown is left out, never assumed to differ.
    """
    units = comparable(facts["fleet.summary"]["servers"])
    out: list[Finding] = []
    drift = _split(units, _spec_key)
    if drift is not None:
        _, major, odd = drift
        names = ", ".join(u["name"] for u in odd)
        common = _describe_spec(major[0])
        out.append(Finding(
            "fleet.config.draft-differs", Category.CONFIG_UNSUPPORTED_COMBO, Severity.WARNING, 0.8,
            f"{names} speculate{'s' if len(odd) == 1 else ''} differently ({_describe_spec(odd[0])}) "
            f"from {len(major)} other server(s) ({common})",
            _evidence(odd + major, ("draft",), _describe_spec),
            Fix("Start every replica with the same --speculative-config"
                + (" (or none: the others run without speculation)." if major[0].get("method") == "off" else "."),
                () if major[0].get("method") == "off" else (_spec_flag(major[0]),)),
            impact="Replicas with another draft accept at another rate: the fleet's speed depends on routing.",
            impact_score=0.5, data={"servers": _rows(odd + major), **_about(odd)}))
    k_drift = _split(units, _configured_k)
    if k_drift is not None and drift is None:  # another draft explains another K
        k_major, major_units, odd = k_drift
        out.append(Finding(
            "fleet.config.k-differs", Category.CONFIG_UNSUPPORTED_COMBO, Severity.WARNING, 0.7,
            f"{', '.join(u['name'] for u in odd)} draft{'s' if len(odd) == 1 else ''} K="
            f"{', '.join(str(u['k']) for u in odd)} tokens per step; {len(major_units)} other server(s) K={k_major}",
            _evidence(odd + major_units, ("draft", "acceptance", "metrics"),
                      lambda u: f"K={u['k']}, {_num(u.get('mean_acceptance_length'))} tokens/step, acceptance "
                                f"{_pct(u.get('acceptance_rate'))}"),
            Fix("Use one num_speculative_tokens on every replica (the one with the better tokens/step per K).",
                (_spec_flag(major_units[0], k=k_major),)),
            impact="Different K gives different speed per replica.", impact_score=0.3,
            data={"servers": _rows(odd + major_units), **_about(odd)}))
    v_drift = _split(units, lambda u: str(u["vllm_version"]) if u.get("vllm_version") else None)
    if v_drift is not None:
        v_major, major_units, odd = v_drift
        out.append(Finding(
            "fleet.config.version-differs", Category.ENV_VERSION, Severity.INFO, 0.9,
            f"{', '.join(u['name'] for u in odd)} run{'s' if len(odd) == 1 else ''} vLLM "
            f"{', '.join(sorted({str(u['vllm_version']) for u in odd}))}; {len(major_units)} other server(s) "
            f"run {v_major}",
            _evidence(odd + major_units, ("vllm_version",), lambda u: f"vLLM {u['vllm_version']}"),
            Fix("Run one vLLM release across the fleet.", (f"pip install 'vllm=={v_major}'",)),
            impact="Spec-decode behaviour and metrics change between releases; results are not comparable.",
            impact_score=0.2, data={"servers": _rows(odd + major_units)}))
    return out


def _configured_k(u: Mapping[str, Any]) -> int | None:
    """K as the server was configured: its own start-up lines or /metrics. A K read only off the length of a
    per-position curve in a log excerpt (no start-up lines) does not identify a server's configuration: such
    excerpts are as often one server run at two K (an A/B the user made) as two replicas."""
    src = u.get("sources") or {}
    if not u.get("k") or not (src.get("draft") or src.get("metrics")):
        return None
    return int(u["k"])


def _describe_spec(u: Mapping[str, Any]) -> str:
    method, model = u.get("method"), u.get("draft_model")
    if method == "off":
        return "speculation off"
    parts = [f"method {method}" if method else None, f"draft {model}" if model else None,
             f"K={u['k']}" if u.get("k") else None]
    return ", ".join(p for p in parts if p) or "unknown"


def _spec_flag(u: Mapping[str, Any], k: int | None = None) -> str:
    import json

    raw: dict[str, Any] = {}
    if u.get("method"):
        raw["method"] = u["method"]
    if u.get("draft_model"):
        raw["model"] = u["draft_model"]
    kk = k or u.get("k")
    if kk:
        raw["num_speculative_tokens"] = int(kk)
    return f"--speculative-config '{json.dumps(raw)}'"


@check("fleet.acceptance", categories=["low-acceptance", "healthy"], needs=["fleet.summary"],
       findings={"fleet.acceptance.outlier": "one server accepts far fewer draft tokens than the others",
                 "fleet.acceptance.consistent": "the servers accept draft tokens at similar rates"},
       sources=[_SPEC])
def acceptance(facts: Mapping[str, Any]) -> list[Finding]:
    """Acceptance per server: an outlier accepts far less than the median of the others.

    Compared only between servers with at least 200 drafted tokens each. With the same draft and K, a
    server that accepts much less sees other traffic (another domain, higher temperature), runs a different
    draft, or has a problem of its own (a stale draft checkpoint, another tokenizer); its own diagnosis says
    which.
    """
    units = [u for u in comparable(facts["fleet.summary"]["servers"])
             if u.get("acceptance_rate") is not None and (u.get("drafted") or 0) >= MIN_DRAFTED]
    if len(units) < 2:
        return []
    out: list[Finding] = []
    odd = []
    for u in units:
        others = [o["acceptance_rate"] for o in units if o is not u]
        med = statistics.median(others)
        if u["acceptance_rate"] <= med - OUTLIER_ABS and u["acceptance_rate"] <= OUTLIER_REL * med:
            odd.append((u, med))
    if odd and len(odd) < len(units):
        rest = [u for u in units if all(u is not o for o, _ in odd)]
        for u, med in odd:
            out.append(Finding(
                "fleet.acceptance.outlier", Category.LOW_ACCEPTANCE, Severity.WARNING, 0.7,
                f"{u['name']} accepts {_pct(u['acceptance_rate'])} of draft tokens "
                f"({_num(u.get('mean_acceptance_length'))} tokens/step) against {_pct(med)} on the other server(s)",
                _evidence([u] + rest, ("acceptance", "metrics"),
                          lambda x: f"acceptance {_pct(x['acceptance_rate'])}, "
                                    f"{_num(x.get('mean_acceptance_length'))} tokens/step, K={_num(x.get('k'))}, "
                                    f"{_num(x.get('drafted'))} drafted"),
                Fix("Diagnose that server alone: compare its draft, K, temperature and traffic with the others.",
                    (_inspect(u),)),
                impact="That server gains less (or loses) from speculation than the rest of the fleet.",
                impact_score=0.5, data={"servers": _rows([u] + rest), "median_others": med, **_about([u])}))
        return out
    rates = [u["acceptance_rate"] for u in units]
    if odd or max(rates) - min(rates) >= OUTLIER_ABS:
        return out  # spread, but no single outlier: neither a finding nor a healthy claim
    out.append(Finding(
        "fleet.acceptance.consistent", Category.HEALTHY, Severity.INFO, 0.7,
        f"{len(units)} servers accept draft tokens at similar rates ({_pct(min(rates))}-{_pct(max(rates))})",
        _evidence(units, ("acceptance", "metrics"),
                  lambda x: f"acceptance {_pct(x['acceptance_rate'])}, "
                            f"{_num(x.get('mean_acceptance_length'))} tokens/step"),
        data={"servers": _rows(units)}))
    return out
