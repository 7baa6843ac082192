"""What a tuning run leaves behind: one report-shaped JSON per variant (so `spec-doctor compare
variant-baseline.json variant-all.json` works), a summary JSON (also a report: compare it with a later
run's), a table of each step's contribution, an SVG plot, and the recommended command with its diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spec_doctor.measure.tune import decide
from spec_doctor.measure.tune.plan import TunePlan
from spec_doctor.measure.tune.run import VariantResult
from spec_doctor.report.build import report_dict
from spec_doctor.report.fix_text import command_diff

HEADLINE = ("throughput", "ttft_ms", "tpot_ms", "chunk_gap_ms")


def variant_section(vr: VariantResult, primary: int) -> dict[str, Any]:
    """sections.tune of a variant: the headline numbers at the primary concurrency, then per level."""
    v = vr.variant
    out: dict[str, Any] = {"variant": v.name, "step": v.step, "group": v.group, "status": vr.status,
                           "reason": vr.reason, "command": v.command, "k": v.k, "startup_s": vr.startup_s,
                           "primary_concurrency": primary}
    lv = vr.level(primary)
    if lv is not None:
        out.update({k: lv.load.get(k) for k in HEADLINE})
        m = lv.metrics or {}
        out.update({"acceptance_rate": m.get("acceptance_rate"),
                    "mean_acceptance_length": m.get("mean_acceptance_length"),
                    "preemptions": m.get("preemptions")})
    out["concurrency"] = {
        str(x.concurrency): {**{k: x.load.get(k) for k in (*HEADLINE, "ttft_ms_p90", "tpot_ms_p90", "completed",
                                                          "failed", "output_tokens", "wall_s", "stopped")},
                             "acceptance_rate": (x.metrics or {}).get("acceptance_rate"),
                             "mean_acceptance_length": (x.metrics or {}).get("mean_acceptance_length"),
                             "per_position_rates": (x.metrics or {}).get("per_position_rates"),
                             "preemptions": (x.metrics or {}).get("preemptions"),
                             "metrics_error": x.metrics_error}
        for x in vr.levels}
    return out


def report(sections: dict[str, Any], *, cmd: str | None, errors: list[str] | None = None,
           notes: list[str] | None = None, duration_s: float = 0.0) -> dict[str, Any]:
    """A spec-doctor report (schema 1.x) with these sections and no findings, built by the engine's own
    Diagnosis so the shape stays the one `check --format json` writes."""
    from spec_doctor.engine.facts import FactStore
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import Diagnosis

    inputs = Inputs(cmd=cmd)
    store = FactStore(inputs, {}, preset={"report.sections": sections})
    diag = Diagnosis(inputs=inputs, findings=[], results=[], verdict="unknown", store=store,
                     input_errors=list(errors or []), duration_s=duration_s, notes=list(notes or []))
    out = report_dict(diag)
    out["facts"] = {}
    return out


def summarize(plan: TunePlan, results: list[VariantResult], concurrency: list[int]) -> dict[str, Any]:
    """sections.tune of the summary: steps table, recommendation, crossover."""
    primary = concurrency[0]
    rows = []
    prev_t: float | None = None
    base_t = None
    for vr in results:
        t = vr.throughput(primary)
        lv = vr.level(primary)
        m = (lv.metrics or {}) if lv else {}
        row = {"variant": vr.variant.name, "step": vr.variant.step, "status": vr.status, "reason": vr.reason,
               "k": vr.variant.k, "throughput": t, "ttft_ms": lv.load.get("ttft_ms") if lv else None,
               "tpot_ms": lv.load.get("tpot_ms") if lv else None,
               "acceptance_rate": m.get("acceptance_rate"), "mean_acceptance_length": m.get("mean_acceptance_length"),
               "preemptions": m.get("preemptions")}
        if vr.variant.name == "baseline":
            base_t = t
        row["vs_baseline"] = round(t / base_t, 4) if t and base_t else None
        if vr.variant.group == "ablation":
            row["vs_previous_step"] = round(t / prev_t, 4) if t and prev_t else None
            prev_t = t or prev_t
        rows.append(row)
    name, why = decide.recommend(
        {"name": r["variant"], "throughput": r["throughput"], "ok": r["status"] in ("ok", "same-as")} for r in rows)
    chosen = next((vr for vr in results if vr.variant.name == name), None)
    if chosen is not None and chosen.variant.same_as:
        chosen = next((vr for vr in results if vr.variant.name == chosen.variant.same_as), chosen)
    rec_cmd = chosen.variant.command if chosen else None
    spec_names = [vr for vr in results if vr.variant.spec is not None and vr.status in ("ok", "same-as")]
    plain = [vr for vr in results if vr.variant.spec is None and vr.status == "ok"]
    best_spec = max(spec_names, key=lambda vr: vr.throughput(primary) or 0.0, default=None)
    cross = decide.crossover(
        {c: best_spec.throughput(c, partial=True) for c in concurrency} if best_spec else {},
        {c: max((vr.throughput(c, partial=True) or 0.0 for vr in plain), default=0.0) or None for c in concurrency})
    cross["spec_variant"] = best_spec.variant.name if best_spec else None
    notes = []
    if chosen is not None and base_t:
        lv, blv = chosen.level(primary), next((vr.level(primary) for vr in results
                                                if vr.variant.name == "baseline"), None)
        if lv and blv and lv.load.get("ttft_ms") and blv.load.get("ttft_ms") \
                and lv.load["ttft_ms"] > 1.25 * blv.load["ttft_ms"]:
            notes.append(f"the recommended setup's TTFT p50 is {lv.load['ttft_ms']:.0f} ms vs {blv.load['ttft_ms']:.0f} "
                         "ms for the baseline: check it against your latency target")
    return {"primary_concurrency": primary, "concurrency_levels": list(concurrency), "steps": rows,
            "recommended": {"variant": name, "why": why, "command": rec_cmd,
                            "diff": command_diff(plan.original, rec_cmd, "given", "tuned") if rec_cmd else [],
                            "throughput": chosen.throughput(primary) if chosen else None,
                            "vs_baseline": next((r["vs_baseline"] for r in rows if r["variant"] == name), None)},
            "crossover": cross, "notes": notes, "plan": plan.to_dict()}


def write_outputs(out_dir: Path, plan: TunePlan, results: list[VariantResult], concurrency: list[int], *,
                  duration_s: float, interrupted: bool = False) -> dict[str, Any]:
    """Write variant-<name>.json, summary.json and plot.svg; return the summary section."""
    out_dir.mkdir(parents=True, exist_ok=True)
    primary = concurrency[0]
    for vr in results:
        if vr.status in ("skipped",):
            continue
        path = out_dir / f"variant-{vr.variant.name}.json"
        errs = [vr.reason] if vr.status == "failed" and vr.reason else []
        path.write_text(json.dumps(report({"tune": variant_section(vr, primary)}, cmd=vr.variant.command,
                                          errors=errs, duration_s=vr.duration_s), indent=2) + "\n",
                        encoding="utf-8")
    summary = summarize(plan, results, concurrency)
    summary["interrupted"] = interrupted
    rec = summary["recommended"]
    headline = {k: (rec.get(k) if k in ("throughput", "vs_baseline") else None) for k in ("throughput", "vs_baseline")}
    notes = list(plan.notes) + summary["notes"] + (["interrupted: partial results"] if interrupted else [])
    (out_dir / "summary.json").write_text(json.dumps(
        report({"tune": {**headline, "summary": summary}}, cmd=plan.original, notes=notes, duration_s=duration_s),
        indent=2) + "\n", encoding="utf-8")
    (out_dir / "plot.svg").write_text(plot_svg(summary), encoding="utf-8")
    return summary


def plot_svg(summary: dict[str, Any]) -> str:
    from spec_doctor.report.formats.html import bar_chart

    rows = [r for r in summary["steps"] if r["throughput"]]
    if not rows:
        return bar_chart("no variant finished its load", [0.0], ["-"])
    return bar_chart(f"output tokens/s at concurrency {summary['primary_concurrency']}",
                     [float(r["throughput"]) for r in rows], [r["variant"] for r in rows])


def render_table(summary: dict[str, Any], width: int = 140) -> str:
    """The steps table, a text bar per step, the recommendation and the crossover, as plain text."""
    from rich.console import Console
    from rich.table import Table

    def f(x: Any, fmt: str = "{:.1f}") -> str:
        return "-" if x is None else fmt.format(x)

    table = Table(title=f"spec-doctor tune (concurrency {summary['primary_concurrency']})", show_header=True)
    for col in ("variant", "status", "tok/s", "vs base", "vs prev", "TTFT p50 ms", "TPOT p50 ms",
                "accept", "mean len", "preempt"):
        table.add_column(col, overflow="fold")
    top = max((r["throughput"] or 0.0 for r in summary["steps"]), default=0.0) or 1.0
    for r in summary["steps"]:
        status = r["status"] + (f": {r['reason']}" if r["reason"] and r["status"] != "ok" else "")
        table.add_row(r["variant"], status, f(r["throughput"]), f(r["vs_baseline"], "x{:.2f}"),
                      f(r.get("vs_previous_step"), "x{:.2f}"), f(r["ttft_ms"], "{:.0f}"), f(r["tpot_ms"], "{:.1f}"),
                      f(r["acceptance_rate"], "{:.2f}"), f(r["mean_acceptance_length"], "{:.2f}"),
                      f(r["preemptions"], "{:.0f}"))
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    with console.capture() as cap:
        console.print(table)
    lines = [cap.get()]
    for r in summary["steps"]:
        if r["throughput"]:
            lines.append(f"  {r['variant']:<12} {'#' * max(1, int(40 * r['throughput'] / top))} {r['throughput']:.1f}")
    rec = summary["recommended"]
    lines.append("")
    if rec["variant"]:
        lines.append(f"recommended: {rec['variant']} — {rec['why']}")
        lines.append(rec["command"] or "")
        if rec["diff"]:
            lines.append("diff from your command:")
            lines += [f"  {d}" for d in rec["diff"]]
    else:
        lines.append(f"no recommendation: {rec['why']}")
    lines.append(f"concurrency: {summary['crossover']['verdict']}")
    lines += [f"note: {n}" for n in summary["notes"]]
    return "\n".join(lines) + "\n"
