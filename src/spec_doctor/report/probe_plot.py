"""A small self-contained HTML page with the probe's curves (inline SVG; no plotting library)."""

from __future__ import annotations

import html as _html
from collections.abc import Sequence
from pathlib import Path


def svg_curve(points: Sequence[tuple[float, float, float, float]], *, title: str, ylabel: str,
              width: int = 420, height: int = 240) -> str:
    """points: (x, y, y_lo, y_hi). A line with a shaded band."""
    if not points:
        return ""
    pad = 40
    xs = [p[0] for p in points]
    ys = [v for p in points for v in p[1:]]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.1 or 1.0

    def sx(x):
        return pad + (x - x0) / (x1 - x0) * (width - 2 * pad)

    def sy(y):
        return height - pad - (y - y0) / (y1 - y0) * (height - 2 * pad)

    band = " ".join(f"{sx(x):.1f},{sy(hi):.1f}" for x, _, _, hi in points) + " " + \
        " ".join(f"{sx(x):.1f},{sy(lo):.1f}" for x, _, lo, _ in reversed(points))
    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _, _ in points)
    ticks = "".join(f'<text x="{sx(x):.1f}" y="{height - pad + 14}" font-size="10" text-anchor="middle">{x:g}</text>'
                    for x in xs)
    one = f'<line x1="{pad}" x2="{width - pad}" y1="{sy(1.0):.1f}" y2="{sy(1.0):.1f}" stroke="#c33" ' \
          f'stroke-dasharray="4 3"/>' if y0 <= 1.0 <= y1 else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
            f'<text x="{width / 2}" y="16" font-size="12" text-anchor="middle">{_html.escape(title)}</text>'
            f'<polygon points="{band}" fill="#9cf" opacity="0.5"/>{one}'
            f'<polyline points="{line}" fill="none" stroke="#036" stroke-width="2"/>{ticks}'
            f'<text x="10" y="{height / 2}" font-size="10" transform="rotate(-90 10 {height / 2})">'
            f'{_html.escape(ylabel)}</text>'
            f'<text x="{width - pad + 6}" y="{height - pad + 4}" font-size="10">K</text>'
            f'<text x="{pad - 4}" y="{sy(y1) + 4:.1f}" font-size="10" text-anchor="end">{y1:.2f}</text>'
            f'<text x="{pad - 4}" y="{sy(y0) + 4:.1f}" font-size="10" text-anchor="end">{y0:.2f}</text></svg>')


def write_html(path: str | Path, result: dict, findings: list) -> None:
    per_k = sorted((result.get("per_k") or {}).items(), key=lambda kv: int(kv[0]))
    al = [(int(k), r["mean_acceptance_length"]["value"], r["mean_acceptance_length"]["lo"],
           r["mean_acceptance_length"]["hi"]) for k, r in per_k if r.get("mean_acceptance_length")]
    sp = []
    for f in findings:
        data = getattr(f, "data", None) or {}
        if data.get("speedup") and data.get("cost"):
            cost = data["cost"]
            for k, r in per_k:
                if not r.get("mean_acceptance_length"):
                    continue
                v = cost["verify_base"] + cost["verify_per_k"] * int(k)
                m = r["mean_acceptance_length"]
                sp.append((int(k), *(m[x] / (int(k) * cost["c"] + v) for x in ("value", "lo", "hi"))))
            break
    rows = "".join(f"<li><b>{_html.escape(f.severity.value)}</b> {_html.escape(f.title)}</li>" for f in findings)
    a = result.get("alpha") or {}
    body = (f"<h1>spec-doctor probe</h1><p>{_html.escape(str(result.get('source')))}<br>"
            f"domain {_html.escape(str(result.get('domain')))}, {result.get('prompts')} prompts, "
            f"T={(result.get('sampling') or {}).get('temperature')}; alpha "
            + (f"{a['value']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}]" if a else "n/a") + "</p>"
            + svg_curve(al, title="mean acceptance length (tokens/step) by K", ylabel="tokens/step")
            + svg_curve(sp, title="expected speedup by K (dashed: 1x)", ylabel="speedup")
            + f"<ul>{rows}</ul>")
    Path(path).write_text(f"<!doctype html><meta charset='utf-8'><title>spec-doctor probe</title>{body}\n",
                          encoding="utf-8")
