"""knowledge/data/release_bugs.toml, the one table of known vLLM bugs: every row sourced, with a valid release range;
the matcher's yes and no, by deployment (the release-bug checks) and by symptom (the crash and acceptance checks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.version import Version

from spec_doctor.engine.model import Category
from spec_doctor.knowledge import release_bugs as kb
from spec_doctor.knowledge.eras import ReleaseRange

SOURCE = re.compile(r"^https://(github\.com/vllm-project/vllm(?:-ascend)?/(pull|issues|releases|security|blob/v[\w.]+)/|"
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
    keyed = ("flag_prefix", "flag_not_prefix", "env", "spec_min")
    want: object = ["x"] if name == "flags_set" else {"a": "b"} if name in keyed else 2
    assert kb.describe_condition(name, want) != name


# -- the mined rows, the symptom vocabulary, the one release/overlap rule ----------------------------------------
PR_TAGS = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "releasebugs" / "pr_tags.json").read_text())


def _pr(bug: kb.KnownBug) -> int | None:
    m = re.search(r"/pull/(\d+)$", bug.source)
    return int(m.group(1)) if m else None


def test_git_tag_rows_follow_the_mined_tags() -> None:
    """fixed_in of a git-tag row is the first release tag containing its PR (scripts/mine_release_bugs.py
    --check-table, kept in fixtures/releasebugs/pr_tags.json); a PR a tag contains is never left to the date rule."""
    tags = PR_TAGS["tags"]
    rows = [b for b in kb.bugs() if b.fixed_basis == "git-tag"]
    assert len(rows) >= 60
    for b in rows:
        assert tags.get(str(_pr(b))) == str(b.fixed_in), b.id
    for b in kb.bugs():
        if b.fixed_basis == "pr-date":
            assert str(_pr(b)) not in tags, b.id


def test_symptoms_are_the_complaint_vocabulary() -> None:
    from spec_doctor.knowledge.symptoms import CLASSES

    assert set(kb.SYMPTOMS) - {"tail-zero"} <= set(CLASSES)
    assert {b.symptom for b in kb.bugs()} <= set(kb.SYMPTOMS)


def test_newer_releases_are_covered() -> None:
    """Rows for the releases since 0.20 (MTP, EAGLE-3, DFlash, ngram_gpu, Model Runner V2, hybrid models)."""
    recent = [b for b in kb.bugs() if b.fixed_in and b.fixed_in >= Version("0.20.0")]
    assert len(recent) >= 25
    assert {"mtp", "eagle3", "dflash", "ngram_gpu"} <= {m for b in recent for m in b.methods}
    assert {"crash", "wrong-output", "hang", "memory", "low-acceptance"} <= {b.symptom for b in recent}


def _bug(affected_from: str | None, fixed_in: str | None) -> kb.KnownBug:
    return kb.KnownBug("t", "t", ("any",), {}, "crash", (), (), (), Version(affected_from) if affected_from else None,
                       Version(fixed_in) if fixed_in else None, "git-tag", None, "s", (), None, "engine-bug", "f", "")


def _span(lo: str, hi: str, high_open: bool = False) -> kb.ReleaseSpan:
    return kb.ReleaseSpan(Version(lo), Version(hi), lo != hi, high_open, "t", f"{lo}-{hi}")


def test_coverage_of_a_release_and_of_a_range() -> None:
    bug = _bug("0.20.0", "0.23.0")
    assert kb.coverage(bug, _span("0.21.0", "0.21.0")) == "all"
    assert kb.coverage(bug, _span("0.23.0", "0.23.0")) is None  # the fixed release
    assert kb.coverage(bug, _span("0.19.1", "0.19.1")) is None  # before the bug
    assert kb.coverage(bug, _span("0.20.0", "0.22.1")) == "all"
    assert kb.coverage(bug, _span("0.22.0", "0.24.0")) == "part"
    assert kb.coverage(bug, _span("0.18.0", "0.20.0")) == "part"
    assert kb.coverage(bug, _span("0.23.0", "0.24.0")) is None
    assert kb.coverage(bug, _span("0.21.0", "0.22.0", high_open=True)) == "part"  # may be a fixed release
    assert kb.coverage(_bug("0.20.0", None), _span("0.21.0", "0.22.0", high_open=True)) == "all"  # never fixed


def test_release_span_reads_every_form_of_the_version() -> None:
    from spec_doctor.collectors.core import InferredVersion
    from spec_doctor.engine.facts import Sourced

    stated = kb.release_span(Sourced(Version("0.22.0+cu129"), "--vllm-version"))
    assert stated is not None and (stated.low, stated.high, stated.inferred) == (Version("0.22.0"),) * 2 + (False,)
    inferred = kb.release_span(InferredVersion(Version("0.24.0"), "log", Version("0.21.0"), Version("0.24.0"),
                                               True, 0.6))
    assert inferred is not None and inferred.inferred and inferred.high_open and inferred.low == Version("0.21.0")
    ranged = kb.release_span(None, ReleaseRange(Version("0.10.0"), Version("0.11.0"), False, 0.8))
    assert ranged is not None and (ranged.low, ranged.high) == (Version("0.10.0"), Version("0.11.0"))
    assert kb.release_span(None) is None and kb.release_span("not-a-version") is None
    assert kb.release_span(Version("0.9.1")) == kb.ReleaseSpan(Version("0.9.1"), Version("0.9.1"), False, False,
                                                               "vllm.version", "0.9.1")


def test_by_symptom_rows_and_release_checks_share_the_overlap_rule() -> None:
    """symptom_bugs (crash / acceptance checks) says sure exactly where the release checks' coverage is "all"."""
    row = _row("v1-pp-drafter-attribute")
    for lo, hi in (("0.17.0", "0.18.0"), ("0.15.0", "0.17.0"), ("0.33.0", "0.33.0"), ("0.16.0", "0.32.0")):
        cover = kb.coverage(row, _span(lo, hi))
        got = [sure for b, sure in kb.symptom_bugs("crash", "eagle3", None,
                                                    ReleaseRange(Version(lo), Version(hi), False, 0.8)) if b is row]
        assert got == ([] if cover is None else [cover == "all"]), (lo, hi)


def test_rocm_and_model_runner_v2_conditions() -> None:
    rocm = _row("rocm-aiter-fa-spec-cu-seqlens")
    assert kb.match(rocm, kb.Deployment(method="eagle3", device="rocm")) is not None
    assert kb.match(rocm, kb.Deployment(method="eagle3", device="cpu")) is None
    assert kb.match(rocm, kb.Deployment(method="eagle3")).unknown  # type: ignore[union-attr]
    mrv2 = _row("mrv2-stale-sampled-draft-tokens-accuracy")
    assert kb.match(mrv2, kb.Deployment(method="mtp", args={"model": "m"}, env={"VLLM_USE_V2_MODEL_RUNNER": "1"}))
    assert kb.match(mrv2, kb.Deployment(method="mtp", args={"model": "m"})) is None


def test_an_inferred_range_without_a_lower_end_is_unbounded_below() -> None:
    from spec_doctor.collectors.core import InferredVersion

    span = kb.release_span(InferredVersion(Version("0.7.3"), "log", None, Version("0.7.3"), False, 0.9))
    assert span is not None and span.low < Version("0.4.0") and span.high == Version("0.7.3")
    assert kb.coverage(_row("v0-draft-tp-chunked-prefill-keyerror"), span) == "part"  # fixed in 0.6.5


def test_flag_not_prefix_condition() -> None:
    """Qwen3.5 MTP refuses the 'all' Mamba cache mode with prefix caching; --mamba-cache-mode align is the way out."""
    bug = _row("qwen35-mtp-all-prefix-caching-not-implemented")
    fam = ("qwen/qwen3.5-35b-a3b",)
    on = {"enable_prefix_caching": True}
    assert kb.match(bug, kb.Deployment(method="qwen3_5_mtp", args=on, families=fam)) is not None
    assert kb.match(bug, kb.Deployment(method="mtp", args={**on, "mamba_cache_mode": "all"}, families=fam))
    assert kb.match(bug, kb.Deployment(method="mtp", args={**on, "mamba_cache_mode": "align"}, families=fam)) is None
    assert kb.match(bug, kb.Deployment(method="mtp", args={"enable_prefix_caching": False}, families=fam)) is None
    assert bug.affects(Version("0.31.0")) and not bug.affects(Version("0.32.0"))


def test_eagle3_target_rows_by_family_and_message() -> None:
    """EAGLE-3 target support: the allowlist ValueError (also wrapped in pydantic's ValidationError) and the interface
    RuntimeError name the row of the target's family and release only."""
    allow = _row("eagle3-deepseek-kimi-not-allowlisted")
    msg = ("1 validation error for SpeculativeConfig: Value error, Eagle3 is only supported for ['llama', 'qwen'] "
           "models. Got self.target_model_config.hf_text_config.model_type='kimi_k2'")
    assert kb.exception_matches(allow, "pydantic_core._pydantic_core.ValidationError", msg) == "exact"
    assert kb.exception_matches(allow, "ValueError", "eagle3 is only supported for ['llama'] models. Got x") == "exact"
    kimi = kb.Deployment(method="eagle3", families=("moonshotai/kimi-k2-instruct",))
    distill = kb.Deployment(method="eagle3", families=("qwen2forcausallm", "deepseek-ai/deepseek-r1-distill-qwen-7b"))
    assert kb.match(allow, kimi) is not None and kb.match(allow, distill) is None
    qwen2 = _row("eagle3-qwen2-target-no-interface")
    assert kb.match(qwen2, distill) is not None and kb.match(qwen2, kimi) is None
    assert qwen2.affects(Version("0.10.1")) and not qwen2.affects(Version("0.10.0")) and not qwen2.affects(
        Version("0.10.2"))


def test_a_row_needing_an_environment_variable_starts_no_earlier_than_the_variable():
    """[env_since]: a bug that needs VLLM_USE_V2_MODEL_RUNNER=1 cannot affect a release that has no Model Runner V2
    (vllm/envs.py reads the variable from 0.12.0 on), whatever the row's own range says."""
    since = {var: Version(row["since"]) for var, row in kb.table()["env_since"].items()}
    assert all(row["source"] for row in kb.table()["env_since"].values())
    gated = [b for b in kb.bugs() if set(b.when.get("env", {})) & set(since)]
    assert gated
    for b in gated:
        floor = max(since[v] for v in b.when["env"] if v in since)
        assert b.affected_from is not None and b.affected_from >= floor, b.id
    strict = next(b for b in kb.bugs() if b.id == "mrv2-strict-rejection-sampling")
    assert not strict.affects(Version("0.7.1")) and not strict.affects(Version("0.11.2"))
    assert strict.affects(Version("0.12.0")) and strict.affects(Version("0.20.2"))


def test_batch5_rows_need_their_stated_conditions() -> None:
    """Rows of the 2026-12-06 batch 5: each names the deployments its thread states, not its neighbours."""
    async_row = _row("async-eagle-uneven-draft-counts-no-uniform-decode")
    assert kb.match(async_row, kb.Deployment(method="eagle3", args={"async_scheduling": True})) is not None
    assert kb.match(async_row, kb.Deployment(method="eagle3", args={"tensor_parallel_size": 1})) is None
    assert kb.match(async_row, kb.Deployment(method="ngram", args={"async_scheduling": True})) is None
    assert async_row.affects(Version("0.11.2")) and not async_row.affects(Version("0.11.0"))
    assert not async_row.affects(Version("0.12.0"))
    mrv2_pd = _row("mrv2-pd-spec-kv-connector-before-drafter")
    pd = {"kv_transfer_config": '{"kv_connector": "NixlConnector"}'}
    assert kb.match(mrv2_pd, kb.Deployment(method="mtp", args=pd, env={"VLLM_USE_V2_MODEL_RUNNER": "1"}))
    assert kb.match(mrv2_pd, kb.Deployment(method="mtp", args=pd)) is None
    assert kb.match(mrv2_pd, kb.Deployment(method="mtp", args={"model": "m"},
                                           env={"VLLM_USE_V2_MODEL_RUNNER": "1"})) is None
    tp = _row("v0-draft-tp-no-draft-tokens-hang")
    assert kb.match(tp, kb.Deployment(method="draft_model", args={"speculative_draft_tensor_parallel_size": 2}))
    assert kb.match(tp, kb.Deployment(method="draft_model", spec={"draft_tensor_parallel_size": 1})) is None
    swa = _row("eagle-mtp-swa-prefix-cache-no-hit")
    v4 = ("deepseek-ai/deepseek-v4-flash",)
    assert kb.match(swa, kb.Deployment(method="mtp", args={"enable_prefix_caching": True}, families=v4))
    assert kb.match(swa, kb.Deployment(method="mtp", args={"enable_prefix_caching": False}, families=v4)) is None
    assert kb.match(swa, kb.Deployment(method="mtp", families=("openai/gpt-oss-120b",))) is None
    heads = _row("gemma4-mtp-attention-group-num-heads-assert")
    msg = "All layers in one attention group must share num_heads; got {8, 4} for ['language_model.model.layers.3']"
    assert kb.exception_matches(heads, "AssertionError", msg) == "exact"
    assert kb.exception_matches(heads, "AssertionError", "num_heads mismatch") is None
    assert heads.affects(Version("0.22.0")) and not heads.affects(Version("0.21.0"))
