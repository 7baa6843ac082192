"""What makes each speculative step expensive, from what the run shows: --enforce-eager, and vLLM's own start-up
warnings that name a feature speculation turns off (``logs.spec_overhead``: rows of data/log_signatures.toml),
with the fixes those rows name. Shared by the speedup estimate's verdict and the measured-speedup check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spec_doctor.engine.model import Evidence
from spec_doctor.knowledge.data import load


def signature_commands(sig_id: str | None) -> tuple[str, ...]:
    """The fix commands of a log_signatures.toml row."""
    if not sig_id:
        return ()
    for row in load("log_signatures.toml").get("signature", []):
        if row["id"] == sig_id:
            return tuple(row.get("commands", ()))
    return ()


def overhead_causes(dep: Any, hits: Iterable[Mapping[str, Any]] | None,
                    platform: Mapping[str, Any] | None = None) -> tuple[list[Evidence], list[str], list[str]]:
    """(evidence, fix commands, short titles) of the per-step costs the deployment config and the log show.
    `platform`: the run's deploy.platform (None: CUDA); where vLLM's CUDA-graph modes do not exist,
    --enforce-eager costs nothing."""
    from spec_doctor.knowledge.platforms import cuda_graphs_apply

    ev: list[Evidence] = []
    cmds: list[str] = []
    titles: list[str] = []
    if dep is not None and dep.get("enforce_eager") and cuda_graphs_apply(platform):
        ev.append(Evidence(dep.source_of("enforce_eager"),
                           "--enforce-eager: target and drafter run without CUDA graphs, every kernel launched "
                           "from Python"))
        cmds.append("drop --enforce-eager (CUDA graphs on)")
        titles.append("--enforce-eager (no CUDA graphs)")
    for hit in hits or []:
        ev.append(Evidence(hit["source"], hit["text"] + (f" -- {hit['meaning']}" if hit.get("meaning") else "")))
        titles.append(hit.get("title") or hit["text"])
        for c in signature_commands(hit.get("id")):
            if c not in cmds:
                cmds.append(c)
    return ev, cmds, titles
