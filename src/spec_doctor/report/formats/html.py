"""One self-contained HTML file: verdict, ranked findings and plots (inline SVG, no scripts, no network).

Plots are drawn from the report's `sections`: every list of numbers becomes a bar chart (per-position
acceptance, ...) and every list of records becomes a line chart of its numeric fields against its x field
(`t`, `time_s`, `k`, `line`, or the index): acceptance and KV usage over time, VRAM over time, the probe's
speedup-vs-K curve.
"""

from __future__ import annotations

import html
from typing import Any

from spec_doctor.report.formats.markdown import shell_block_line
from spec_doctor.report.views.findings import CAVEATS_HEADING, finding_parts
from spec_doctor.report.views.servers import COLUMNS, server_rows

X_KEYS = ("t", "time_s", "elapsed_s", "k", "K", "line", "step", "concurrency")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
W, H, PAD_L, PAD_B, PAD_T, PAD_R = 560, 240, 56, 36, 24, 12


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e9:
        return f"{v / 1e9:.3g}G"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def _axes(title: str, ymin: float, ymax: float, xlabels: list[str]) -> list[str]:
    e = html.escape
    parts = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="{e(title)}">',
             f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
             f'<text x="{W / 2}" y="15" text-anchor="middle" font-size="13" font-weight="bold">{e(title)}</text>',
             f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#333"/>',
             f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#333"/>']
    for i in range(5):
        v = ymin + (ymax - ymin) * i / 4
        y = H - PAD_B - (H - PAD_B - PAD_T) * i / 4
        parts.append(f'<line x1="{PAD_L - 4}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{_fmt(v)}</text>')
    step = max(1, len(xlabels) // 10)
    for i, lab in enumerate(xlabels):
        if i % step:
            continue
        x = _x(i, len(xlabels))
        parts.append(f'<text x="{x:.1f}" y="{H - PAD_B + 14}" text-anchor="middle" font-size="10">'
                     f'{html.escape(lab)}</text>')
    return parts


def _x(i: int, n: int) -> float:
    span = W - PAD_L - PAD_R
    return PAD_L + (span * (i + 0.5) / n if n else 0)


def _y(v: float, ymin: float, ymax: float) -> float:
    return H - PAD_B - (H - PAD_B - PAD_T) * ((v - ymin) / (ymax - ymin) if ymax > ymin else 0.5)


def bar_chart(title: str, values: list[float], labels: list[str] | None = None) -> str:
    ymax = max(max(values), 1e-9)
    ymin = min(0.0, min(values))
    labels = labels or [str(i + 1) for i in range(len(values))]
    parts = _axes(title, ymin, ymax, labels)
    bw = (W - PAD_L - PAD_R) / max(len(values), 1) * 0.7
    for i, v in enumerate(values):
        x = _x(i, len(values)) - bw / 2
        y = _y(v, ymin, ymax)
        y0 = _y(0, ymin, ymax)
        parts.append(f'<rect class="bar" x="{x:.1f}" y="{min(y, y0):.1f}" width="{bw:.1f}" '
                     f'height="{abs(y0 - y):.1f}" fill="{PALETTE[0]}"><title>{labels[i]}: {v:.4g}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(title: str, rows: list[dict[str, Any]], xkey: str | None, series: list[str]) -> str:
    values = [r[s] for r in rows for s in series if _num(r.get(s))]
    ymax, ymin = max(values), min(0.0, min(values))
    if ymax == ymin:
        ymax = ymin + 1
    labels = [_fmt(r[xkey]) if xkey and _num(r.get(xkey)) else str(i) for i, r in enumerate(rows)]
    parts = _axes(title, ymin, ymax, labels)
    for n, s in enumerate(series):
        pts = [(_x(i, len(rows)), _y(r[s], ymin, ymax)) for i, r in enumerate(rows) if _num(r.get(s))]
        color = PALETTE[n % len(PALETTE)]
        parts.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="2" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        for x, y in pts if len(pts) <= 40 else []:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>')
        parts.append(f'<text x="{W - PAD_R - 4}" y="{PAD_T + 12 + 12 * n}" text-anchor="end" font-size="10" '
                     f'fill="{color}">{html.escape(s)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def plots_from_sections(sections: dict[str, Any]) -> list[str]:
    """Walk the sections and draw what can be drawn."""
    out: list[str] = []

    def walk(obj: Any, path: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{path} / {k}" if path else str(k))
        elif isinstance(obj, list) and len(obj) >= 2:
            if all(_num(v) for v in obj):
                out.append(bar_chart(path, [float(v) for v in obj]))
            elif all(isinstance(v, dict) for v in obj):
                keys = [k for k in obj[0] if all(_num(r.get(k)) for r in obj)]
                xkey = next((k for k in X_KEYS if k in keys), None)
                series = [k for k in keys if k != xkey][:6]
                if series:
                    # Different magnitudes on one axis hide the small series: split by scale.
                    groups: dict[int, list[str]] = {}
                    for s in series:
                        peak = max(abs(r[s]) for r in obj) or 1.0
                        groups.setdefault(len(str(int(peak))), []).append(s)
                    for g in groups.values():
                        out.append(line_chart(path, obj, xkey, g))

    walk(sections, "")
    return out


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px} .verdict{padding:2px 10px;border-radius:4px;color:#fff}
.healthy{background:#2e7d32}.degraded{background:#ef6c00}.broken{background:#c62828}.unknown{background:#6a1b9a}
.finding{border-left:5px solid #999;padding:6px 12px;margin:12px 0;background:#fafafa}
.finding.error{border-color:#c62828}.finding.warning{border-color:#ef6c00}.finding.info{border-color:#1565c0}
code,pre{background:#f1f1f1;padding:1px 4px;border-radius:3px} pre{padding:8px;overflow-x:auto}
.meta{color:#666;font-size:12px} table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:3px 8px;
font-size:12px;text-align:left} .plots{display:flex;flex-wrap:wrap;gap:12px} .plot{border:1px solid #ddd}
"""


def render(report: dict[str, Any], **_: Any) -> str:
    e = html.escape
    counts = report["summary"]["findings"]
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>spec-doctor report: {e(report['verdict'])}</title><style>{_CSS}</style></head><body>",
             f"<h1>spec-doctor report <span class='verdict {e(report['verdict'])}'>{e(report['verdict'])}</span></h1>",
             f"<p class='meta'>{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info · "
             f"spec-doctor {e(report['tool']['version'])} · {e(report['generated_at'])}</p>"]
    message = (report.get("assessment") or {}).get("message")
    if message:
        parts.append(f"<p class='assessment'><strong>Not assessed:</strong> {e(message)}</p>")
    parts += [f"<p class='note'><strong>Note:</strong> {e(note)}</p>" for note in report.get("notes", [])]
    env = report.get("environment") or {}
    if env:
        parts.append("<table>" + "".join(f"<tr><th>{e(str(k))}</th><td>{e(str(v))}</td></tr>"
                                         for k, v in env.items()) + "</table>")
    problems, healthy, healthy_first = finding_parts(report)
    fine = ("<h2>Checked and fine</h2><ul>" + "".join(f"<li>{e(f['title'])}</li>" for f in healthy) + "</ul>"
            if healthy else "")
    if healthy_first:
        parts.append(fine)
        if problems:
            parts.append(f"<h2>{e(CAVEATS_HEADING)}</h2>")
    else:
        parts.append("<h2>Findings</h2>" if problems else "<h2>No problems found</h2>")
    for n, f in enumerate(problems, 1):
        parts.append(f"<div class='finding {e(f['severity'])}'><h3>{n}. {e(f['title'])}</h3>"
                     f"<p class='meta'><code>{e(f['id'])}</code> · {e(f['category'])} · {e(f['severity'])} · "
                     f"confidence {f['confidence']:.2f}</p>")
        if f.get("impact"):
            parts.append(f"<p><b>Impact:</b> {e(f['impact'])}</p>")
        if f["evidence"]:
            parts.append("<ul>" + "".join(f"<li><code>{e(ev['source'])}</code> {e(ev['detail'])}</li>"
                                          for ev in f["evidence"]) + "</ul>")
        if f.get("fix"):
            parts.append(f"<p><b>Fix:</b> {e(f['fix']['summary'])}</p>")
            if f["fix"]["commands"]:
                parts.append("<pre>" + e("\n".join(shell_block_line(c) for c in f["fix"]["commands"])) + "</pre>")
        parts.append("</div>")
    if fine and not healthy_first:
        parts.append(fine)
    servers = server_rows(report)
    if servers:
        parts.append(f"<h2>Servers ({len(servers)})</h2><table><tr>" + "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
                     + "</tr>" + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                                         for row in servers) + "</table>")
    plots = plots_from_sections(report.get("sections") or {})
    if plots:
        parts.append("<h2>Plots</h2><div class='plots'>" + "".join(plots) + "</div>")
    parts.append("<h2>Checks</h2><table><tr><th>check</th><th>status</th><th>time (s)</th><th>reason</th></tr>"
                 + "".join(f"<tr><td>{e(c['id'])}</td><td>{e(c['status'])}</td><td>{c['duration_s']:.3f}</td>"
                           f"<td>{e(c['reason'] or '')}</td></tr>" for c in report["checks"]) + "</table>")
    for err in report.get("errors", []):
        parts.append(f"<p class='meta'>problem: {e(err)}</p>")
    parts.append("</body></html>\n")
    return "".join(parts)
