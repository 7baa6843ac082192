#!/usr/bin/env python3
"""Which --speculative-config keys (SpeculativeConfig fields) each vLLM release has, read from release sdists,
compared with knowledge/data/flags.toml [[spec_key]] first/last.

Usage: python scripts/spec_key_ranges.py DIR_WITH_SDISTS   (vllm-X.tar.gz as `pip download vllm==X --no-deps
--no-binary :all:` leaves them). Prints one line per field: first..last release that has it, and what
flags.toml says (MISSING / a differing first or last), so the table can be refreshed for new releases. Fields
vLLM fills in itself (draft_model_config, target_parallel_config, ...) show as MISSING on purpose: users do not
pass them. Reads the archives only; nothing in them is imported or run.
"""

from __future__ import annotations

import ast
import re
import sys
import tarfile
import tomllib
from pathlib import Path

from packaging.version import InvalidVersion, Version

FLAGS = Path(__file__).resolve().parent.parent / "src" / "spec_doctor" / "knowledge" / "data" / "flags.toml"


def fields_of(archive: Path) -> list[str] | None:
    """The annotated, public fields of class SpeculativeConfig in vllm/config/speculative.py or vllm/config.py."""
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.name.endswith(("vllm/config/speculative.py", "vllm/config.py"))]
        for m in sorted(members, key=lambda m: "speculative" not in m.name):
            fh = tf.extractfile(m)
            if fh is None:
                continue
            tree = ast.parse(fh.read().decode("utf-8", "replace"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
                    return [b.target.id for b in node.body if isinstance(b, ast.AnnAssign)
                            and isinstance(b.target, ast.Name) and not b.target.id.startswith("_")]
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not Path(argv[1]).is_dir():
        print("usage: spec_key_ranges.py DIR_WITH_VLLM_SDISTS", file=sys.stderr)
        return 2
    by_release: dict[Version, list[str]] = {}
    for archive in Path(argv[1]).glob("vllm-*.tar.gz"):
        try:
            version = Version(re.sub(r"^vllm-|\.tar\.gz$", "", archive.name))
        except InvalidVersion:
            continue
        found = fields_of(archive)
        if found is not None:
            by_release[version] = found
    releases = sorted(by_release)
    known = {r["name"]: r for r in tomllib.loads(FLAGS.read_text())["spec_key"]}
    for name in sorted({f for fs in by_release.values() for f in fs}):
        have = [v for v in releases if name in by_release[v]]
        first, last = have[0], have[-1]
        row = known.get(name)
        if row is None:
            note = "MISSING"
        else:
            diffs = []
            if first != releases[0] and not row.get("invalid") and str(row.get("first")) != str(first):
                diffs.append(f"first {row.get('first')} != {first}")
            if last != releases[-1] and str(row.get("last")) != str(last):
                diffs.append(f"last {row.get('last')} != {last}")
            note = "; ".join(diffs) or "ok"
        print(f"{name:44} {first!s:>9} .. {last!s:<9} {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
