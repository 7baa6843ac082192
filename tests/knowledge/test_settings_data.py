"""knowledge/data/settings.toml: every row has a source and names an engine argument the checks read; and
release_bugs.match reads the complaint's prose only where the inputs cannot tell, never to rule a row out."""

from __future__ import annotations

from spec_doctor.checks.config import _NAMED_COMBOS
from spec_doctor.knowledge import release_bugs as kb
from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.settings import settings


def test_every_row_has_a_source_a_pattern_and_a_unique_id() -> None:
    rows = load("settings.toml")["setting"]
    assert all(r["source"] and r["patterns"] for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert all((r.get("arg") is None) == bool(r.get("family")) for r in rows)


def test_every_argument_is_one_a_check_reads() -> None:
    read = {a for name in ("tp_min", "pp_min", "dp_min", "cuda_graphs", "kv_cache_dtype", "prefix_caching", "device")
            for a in kb._COND_ARGS[name]}  # the conditions that read one fixed argument
    read |= {"quantization", "kv_transfer_config", "async_scheduling", "enable_lora", "enable_chunked_prefill",
             "reasoning_parser"}  # the `quantized` condition and release_bugs.toml's flags_set rows
    read |= {key for key, *_ in _NAMED_COMBOS}
    flags = {f for b in kb.bugs() for f in b.when.get("flags_set", ())}
    for s in settings():
        if s.arg in ("kv_transfer_config", "async_scheduling", "enable_lora", "enable_chunked_prefill",
                     "reasoning_parser"):
            assert s.arg in flags, s.id
        assert s.family or s.arg in read, s.id


def _row(bug_id: str) -> kb.KnownBug:
    return next(b for b in kb.bugs() if b.id == bug_id)


def test_prose_fills_only_what_the_inputs_cannot_tell() -> None:
    row = _row("mtp-dp-hang")  # methods mtp, data_parallel_size >= 2
    said = kb.Deployment(args={"data_parallel_size": 4})
    bare = kb.Deployment(method="mtp", said=said, said_phrases={"data_parallel_size": "dp 4"})
    m = kb.match(row, bare)
    assert m is not None and not m.unknown and m.named == ('data parallel size >= 2 ("dp 4")',)
    shown = kb.Deployment(method="mtp", args={"data_parallel_size": 1}, said=said,
                          said_phrases={"data_parallel_size": "dp 4"})
    assert kb.match(row, shown) is None  # the command line's DP 1 wins over the prose


def test_prose_never_rules_a_row_out() -> None:
    row = _row("mtp-dp-hang")
    said = kb.Deployment(args={"data_parallel_size": 1})
    m = kb.match(row, kb.Deployment(method="mtp", said=said, said_phrases={"data_parallel_size": "dp 1"}))
    assert m is not None and m.unknown and not m.named


def test_a_condition_on_an_argument_the_prose_does_not_name_stays_unknown() -> None:
    row = _row("nemotron-h-mamba-all-spec-crash")  # any method; a Nemotron-H target and prefix caching
    said = kb.Deployment(args={"tensor_parallel_size": 2}, families=("nemotron-h",))
    m = kb.match(row, kb.Deployment(method="mtp", said=said, said_phrases={"tensor_parallel_size": "tp 2"}))
    assert m is not None and m.unknown == ("prefix caching on",) and len(m.named) == 1
