"""`spec-doctor alerts`: Prometheus alerting rules (YAML) for the conditions the checks diagnose."""

from __future__ import annotations

from typing import Annotated

import typer

from spec_doctor.cli.io import write_output
from spec_doctor.cli.options import OutputOpt, SelectorOpt


def alerts_cmd(
    selector: SelectorOpt = "",
    window: Annotated[str, typer.Option(
        "--window", help="Range the rules' increase() covers (default from thresholds.toml: 15m).")] = "",
    hold: Annotated[str, typer.Option(
        "--for", help="How long a condition must hold before the alert fires (default 10m).")] = "",
    output: OutputOpt = None,
) -> None:
    """Print Prometheus alerting rules: speculation stalled, acceptance zero or far below the fleet (or its own
    yesterday), K drift between replicas, preemptions, KV saturation; thresholds are the checks' own.

    Load them with `rule_files:` in prometheus.yml; validate with `promtool check rules FILE`.
    """
    from spec_doctor.cli.prometheus import selector_of, window_seconds
    from spec_doctor.parsers.promapi import check_selector
    from spec_doctor.report.alerts import rules_yaml

    sel = selector_of(selector)
    window_s = window_seconds(window) if window else None
    for_s = window_seconds(hold, "--for") if hold else None
    write_output(rules_yaml(check_selector(sel), window_s, for_s, selector=sel), output)
    raise typer.Exit(0)
