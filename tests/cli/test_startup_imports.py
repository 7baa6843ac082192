"""Start-up stays light: what a run imports and reads is what it needs (bench/bench_startup.py times it; this checks
it deterministically, by the modules a real run has loaded when it ends, never by a clock)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

# Runs the real entry point in a fresh interpreter, then prints the modules it loaded and whether the message
# catalogue (a 2.7 MB JSON) was read.
PROBE = """
import json, sys
from spec_doctor.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
cat = sys.modules.get("spec_doctor.knowledge.catalogue")
print(json.dumps({"modules": sorted(sys.modules),
                  "catalogue_read": bool(cat and cat._data.cache_info().currsize)}))
"""

# Never needed to start: optional extras, the model stack and what only some inputs use.
HEAVY = ("torch", "transformers", "numpy", "yaml", "prometheus_client", "safetensors", "hyperscan")
# typer 0.29+ vendors click: then nothing may import click itself (typer <= 0.28 runs on it).
CLICK = ("click",) if importlib.util.find_spec("typer._click") else ()


def _loaded(tmp_path, *args: str) -> tuple[set[str], bool]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    return set(probe["modules"]), probe["catalogue_read"]


def _under(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_version_loads_no_engine_and_no_report_stack(tmp_path):
    modules, catalogue_read = _loaded(tmp_path, "--version")
    assert not _under(modules, *HEAVY, *CLICK, "rich", "packaging", "tomllib")
    assert not _under(modules, "spec_doctor.checks", "spec_doctor.collectors", "spec_doctor.knowledge",
                      "spec_doctor.parsers", "spec_doctor.report", "spec_doctor.measure")
    # Only the root options are registered: no command module is imported to print the version.
    assert _under(modules, "spec_doctor.cli") == ["spec_doctor.cli", "spec_doctor.cli.app"]
    assert not catalogue_read


def test_check_without_inputs_loads_only_what_it_uses(tmp_path):
    modules, catalogue_read = _loaded(tmp_path, "check", "--fail-on", "never")
    assert "spec_doctor.checks.environment" in modules and "rich.console" in modules  # it did run and render
    assert not _under(modules, *HEAVY, *CLICK)
    # No log: neither the log parser (its regex tables, the signature file) nor the message catalogue.
    assert not _under(modules, "spec_doctor.parsers.logparse")
    assert not catalogue_read
    # No server, no /metrics URL: no HTTP client stack.
    assert not _under(modules, "urllib.request", "http.client", "ssl")
    # One command registered: the other command modules are not imported.
    assert _under(modules, "spec_doctor.cli") == ["spec_doctor.cli", "spec_doctor.cli.app", "spec_doctor.cli.check",
                                                 "spec_doctor.cli.io", "spec_doctor.cli.options",
                                                 "spec_doctor.cli.prometheus"]
