"""knowledge/data/release_bugs.toml, the one table of known vLLM bugs: every row sourced, with a valid release range;
the matcher's yes and no, by deployment (the release-bug checks) and by symptom (the crash and acceptance checks)."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from spec_doctor.engine.model import Category
from spec_doctor.knowledge import release_bugs as kb
from spec_doctor.knowledge.eras import ReleaseRange

SOURCE = re.compile(r"^https://(github\.com/vllm-project/vllm/(pull|issues|releases|security|blob/v[\w.]+)/|"
                    r"osv\.dev/vulnerability/)")


def _row(bug_id: str) -> kb.KnownBug:
    return next(b for b in kb.bugs() if b.id == bug_id)


def test_rows_are_sourced_and_ranged() -> None:
    rows = kb.bugs()
    assert len(rows) >= 30
    assert len({b.id for b in rows}) == len(rows)
    releases = kb.release_dates()
    for b in rows:
        assert SOURCE.match(b.source), b.id
        assert all(a.startswith("https://") for a in b.also), b.id
        assert b.fixed_in is None or str(b.fixed_in) in releases, b.id
        assert b.affected_from is None or str(b.affected_from) in releases, b.id
        assert b.affected_from is None or b.fixed_in is None or b.affected_from < b.fixed_in, b.id
        assert b.fixed_basis in kb.BASES and b.symptom in kb.SYMPTOMS, b.id
        assert b.category in kb.CATEGORIES and Category(b.category), b.id
        assert set(b.when) <= set(kb.CONDITIONS), b.id
        assert b.methods and b.title and b.fix, b.id
        assert b.fixed_in is not None or b.fixed_note, b.id  # an open bug says what the sources state of the fix
        if b.by_symptom:  # said whole in the finding of the check that sees the symptom
            assert b.meaning and b.commands, b.id
            assert b.symptom in ("crash", "tail-zero", "zero-acceptance"), b.id  # the symptoms those checks see
            assert b.symptom != "crash" or b.texts or b.exceptions, b.id
        else:  # the release-bug checks say "upgrade to fixed_in"
            assert b.fixed_in is not None and not b.commands, b.id


def test_pr_date_rows_follow_the_release_rule() -> None:
    """A fixed_in from a merge date is the first main-line release cut after it (recomputable, not hand-set)."""
    dated = [b for b in kb.bugs() if b.fixed_basis == "pr-date"]
    assert dated
    for b in dated:
        assert b.pr_date, b.id
        assert kb.release_after(b.pr_date) == str(b.fixed_in), b.id


def test_catalogue_rows_follow_the_message_catalogue() -> None:
    """A limit vLLM lifted: the error exists from affected_from to the release before fixed_in, per the catalogue."""
    from spec_doctor.knowledge.catalogue import identify, releases

    order = list(releases())
    rows = [b for b in kb.bugs() if b.fixed_basis == "catalogue"]
    assert rows
    for b in rows:
        assert b.message, b.id
        t = identify(b.message)
        assert t is not None and t.first_version and t.last_version, b.id
        assert str(b.affected_from) == t.first_version, b.id
        assert str(b.fixed_in) == order[order.index(t.last_version) + 1], b.id
        assert any(p.search(b.message) for p in b.texts), b.id  # the row matches its own message in a log


def test_release_after_skips_hotfixes_and_the_branch_margin() -> None:
    assert kb.release_after("2025-06-24") == "0.9.2"  # 0.9.2 published 2025-07-08
    assert kb.release_after("2026-01-21") == "0.16.0"  # 0.14.1 / 0.15.1 are patch releases; 0.15.0 too close
    assert not kb.is_mainline("0.9.0.1") and not kb.is_mainline("0.14.1") and kb.is_mainline("0.15.0")
    assert kb.release_after("2030-01-01") is None


def test_normalize_method() -> None:
    assert kb.normalize_method("deepseek_mtp") == kb.normalize_method("qwen3_next_mtp") == "mtp"
    assert kb.normalize_method("EAGLE3") == "eagle3" and kb.normalize_method(None) is None


def test_match_positive() -> None:
    bug = _row("mtp-deepseek-v1-broken-0.9")
    d = kb.Deployment(method="deepseek_mtp", k=1, args={"tensor_parallel_size": 8},
                      families=("deepseek-ai/deepseek-r1",))
    m = kb.match(bug, d)
    assert m is not None and not m.unknown and m.satisfied
    assert bug.affects(Version("0.9.1")) and bug.affects(Version("0.9.0"))


def test_no_match_at_or_after_the_fix_or_before_the_bug() -> None:
    bug = _row("mtp-deepseek-v1-broken-0.9")
    assert not bug.affects(Version("0.9.2")) and not bug.affects(Version("0.10.0"))
    assert not bug.affects(Version("0.8.5"))  # affected from 0.9.0


def test_no_match_on_another_method() -> None:
    d = kb.Deployment(method="eagle3", k=3, args={"tensor_parallel_size": 8}, families=("deepseek-ai/deepseek-r1",))
    assert kb.match(_row("mtp-deepseek-v1-broken-0.9"), d) is None


def test_no_match_when_a_condition_is_missing() -> None:
    bug = _row("eagle-graph-capture-segfault-tp")  # needs TP > 1 and CUDA graphs
    assert kb.match(bug, kb.Deployment(method="eagle", args={"tensor_parallel_size": 1})) is None
    assert kb.match(bug, kb.Deployment(method="eagle", args={"tensor_parallel_size": 2, "enforce_eager": True})) is None
    assert kb.match(bug, kb.Deployment(method="eagle", args={"tensor_parallel_size": 2})) is not None


def test_unknown_conditions_are_reported_not_assumed() -> None:
    m = kb.match(_row("mtp-deepseek-v1-broken-0.9"), kb.Deployment(method="mtp"))
    assert m is not None and m.unknown  # no target known: the family condition cannot be told


def test_flag_conditions() -> None:
    raw = _row("spec-raw-logprobs-modified-logits")
    assert kb.match(raw, kb.Deployment(method="ngram", args={"logprobs_mode": "raw_logprobs"})) is not None
    assert kb.match(raw, kb.Deployment(method="ngram", args={"logprobs_mode": "processed_logprobs"})) is None
    full = _row("full-cudagraph-spec-falls-back-eager")
    assert kb.match(full, kb.Deployment(method="eagle3", args={"compilation_config": '{"cudagraph_mode": "FULL"}'}))
    assert kb.match(full, kb.Deployment(method="eagle3", args={"compilation_config": {"cudagraph_mode":
                                                                                      "FULL_AND_PIECEWISE"}})) is None


def test_spec_value_condition() -> None:
    bug = _row("v0-draft-tp-only-1")
    assert kb.match(bug, kb.Deployment(method="draft_model", spec={"draft_tensor_parallel_size": 2})) is not None
    assert kb.match(bug, kb.Deployment(method="draft_model", spec={"draft_tensor_parallel_size": 1})) is None
    legacy = kb.Deployment(method="draft_model", args={"speculative_draft_tensor_parallel_size": 4})
    assert kb.match(bug, legacy) is not None


def test_exception_matching() -> None:
    bug = _row("mtp-deepseek-v1-broken-0.9")
    assert kb.exception_matches(bug, "AttributeError", "'GPUModelRunner' object has no attribute 'attn_metadata_builder'")
    assert not kb.exception_matches(bug, "RuntimeError", "attn_metadata_builder")
    assert not kb.exception_matches(bug, "AttributeError", "something else")
    assert not kb.exception_matches(_row("spec-prefix-cache-too-conservative"), "AttributeError", "anything")
    assert kb.exception_matches(bug, "AttributeError", "x attn_metadata_builder") == "exact"
    # a row naming only its exception class matches on the class, less specifically
    assert kb.exception_matches(_row("extract-hidden-states-penalties-crash"), "RuntimeError", "shape") == "class"
    # a row with `sites` needs the traceback to pass through them
    top0 = _row("spec-logprobs-top0-crash")
    assert not kb.exception_matches(top0, "IndexError", "list index out of range", ["vllm/v1/engine/core.py"])
    assert kb.exception_matches(top0, "IndexError", "list index out of range",
                                ["vllm/v1/sample/rejection_sampler.py"]) == "exact"


def ids(rows) -> list[tuple[str, bool]]:
    return [(b.id, sure) for b, sure in rows]


def test_release_checks_leave_symptom_rows_to_the_symptom_checks() -> None:
    named = {b.id for b in kb.bugs() if b.by_symptom}
    assert named and not named & {b.id for b in kb.for_release()}
    assert len(kb.for_release()) + len(named) == len(kb.bugs())


def test_symptom_bug_by_method_release_and_symptom() -> None:
    assert ids(kb.symptom_bugs("tail-zero", "dflash")) == [("dflash-swa-as-full-attention", False)]  # release unknown
    assert ids(kb.symptom_bugs("tail-zero", "dflash", Version("0.27.1"))) == [("dflash-swa-as-full-attention", True)]
    assert kb.symptom_bugs("tail-zero", "dflash", Version("0.19.0")) == []  # before DFlash had the bug
    assert kb.symptom_bugs("tail-zero", "eagle3") == []  # another method
    assert kb.symptom_bugs("zero-acceptance", "dflash") == []  # another symptom


def test_symptom_bug_against_an_inferred_release_range() -> None:
    inside = ReleaseRange(Version("0.21.0"), Version("0.24.0"), False, 0.8)
    overlap = ReleaseRange(Version("0.15.0"), Version("0.22.0"), False, 0.8)
    before = ReleaseRange(Version("0.10.0"), Version("0.18.0"), False, 0.8)
    assert ids(kb.symptom_bugs("tail-zero", "dflash", None, inside)) == [("dflash-swa-as-full-attention", True)]
    assert ids(kb.symptom_bugs("tail-zero", "dflash", None, overlap)) == [("dflash-swa-as-full-attention", False)]
    assert kb.symptom_bugs("tail-zero", "dflash", None, before) == []


def test_crash_bug_by_exception_frames_method_and_release() -> None:
    msg, spec = "'num_seq_groups'", ["vllm/worker/worker_base.py", "vllm/spec_decode/spec_decode_worker.py"]
    got = kb.crash_bug("KeyError", msg, spec, None)
    assert got is not None and got[0].id == "v0-draft-tp-chunked-prefill-keyerror" and got[1] is False
    assert kb.crash_bug("KeyError", msg, spec, "draft_model", Version("0.6.3")) == (got[0], True)
    assert kb.crash_bug("KeyError", msg, spec, None, Version("0.6.5")) is None  # the fixed release
    assert kb.crash_bug("KeyError", msg, spec, "eagle3") is None  # a method the V0 bug did not have
    assert kb.crash_bug("KeyError", msg, ["vllm/worker/model_runner.py"], None) is None  # outside spec-decode code
    assert kb.crash_bug("IndexError", msg, spec, None) is None
    pp = kb.crash_bug("AttributeError", "'GPUModelRunner' object has no attribute 'drafter'", [], "eagle3")
    assert pp is not None and pp[0].id == "v1-pp-drafter-attribute" and pp[0].versions_label() == ">=0.16.0,<0.33.0"


def test_generic_meaning_of_a_dead_drafter() -> None:
    row = kb.generic_bug("dead-drafter")
    assert row["meaning"] and row["fix"] and row["source"]
    assert kb.generic_bug("no-such-symptom") == {}


@pytest.mark.parametrize("name", kb.CONDITIONS)
def test_every_condition_is_described(name: str) -> None:
    want: object = ["x"] if name == "flags_set" else {"a": "b"} if name in ("flag_prefix", "env", "spec_min") else 2
    assert kb.describe_condition(name, want) != name
