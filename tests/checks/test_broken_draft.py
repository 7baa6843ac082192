"""Broken-draft signatures: a cliff in the per-position curve judged by its chance given the decay (a note, a
known bug of the method, or an engine bug), a trained head never accepted, and vLLM's messages quoted alone."""

from __future__ import annotations

from conftest import check_log

SPEC = ("(APIServer pid=1) INFO 05-01 14:{m:02d}:50 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
        "{L:.2f}, Accepted throughput: 8.90 tokens/s, Drafted throughput: 97.50 tokens/s, Accepted: {a} tokens, "
        "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {rate:.1f}%\n")


def spec_lines(pp: tuple[float, ...], drafts: int, windows: int = 1) -> str:
    a = int(round(sum(pp) * drafts))
    d = drafts * len(pp)
    return "".join(SPEC.format(m=i, L=1 + sum(pp), a=a, d=d, rate=100 * a / d, pp=", ".join(f"{p:.3f}" for p in pp))
                   for i in range(windows))


check = check_log


def found(report: dict) -> dict[str, dict]:
    return {f["id"]: f for f in report["findings"]}


CLIFF = (0.600, 0.385, 0.215, 0.108, 0.062) + (0.0,) * 10  # flat conditionals (~0.57), then exact zeros


def test_a_thin_cliff_is_a_known_bug_for_the_method_that_has_one(tmp_path):
    got = found(check(tmp_path, spec_lines(CLIFF, 65), "--draft", "dflash"))
    f = got["logs.acceptance.tail-cliff"]
    assert f["category"] == "engine-bug" and f["severity"] == "warning"
    assert f["data"]["known_bug"] == "dflash-swa-as-full-attention" and f["data"]["release_affected"] is False
    assert 0.02 < f["data"]["chance"] < 0.1
    # the thin sample is not decisive: the K rule still speaks
    assert "logs.acceptance.tail-zero" not in got and "logs.acceptance.k-too-large" in got


def test_a_thin_cliff_without_a_known_bug_is_a_note_only_when_unlikely_enough(tmp_path):
    # ~4 drafts reached the last working position: a 5 % chance is no finding without a known bug
    got = found(check(tmp_path, spec_lines(CLIFF, 65), "--draft", "eagle3"))
    assert "logs.acceptance.tail-cliff" not in got and "logs.acceptance.k-too-large" in got
    # ~9 drafts: a chance of ~0.1 % is a note, still not a decisive engine bug
    got = found(check(tmp_path, spec_lines(CLIFF, 150), "--draft", "eagle3"))
    note = got["logs.acceptance.tail-cliff"]
    assert note["severity"] == "info" and "known_bug" not in note["data"] and 1e-4 < note["data"]["chance"] < 0.01
    assert "logs.acceptance.tail-zero" not in got


def test_a_release_outside_the_bug_range_does_not_name_it(tmp_path):
    got = found(check(tmp_path, spec_lines(CLIFF, 65), "--draft", "dflash", "--vllm-version", "0.19.0"))
    assert "logs.acceptance.tail-cliff" not in got


def test_a_smooth_decay_is_no_cliff(tmp_path):
    got = found(check(tmp_path, spec_lines((0.5, 0.2, 0.05, 0.0, 0.0), 100), "--draft", "dflash"))
    assert "logs.acceptance.tail-cliff" not in got and "logs.acceptance.tail-zero" not in got


def test_the_same_cliff_over_many_drafts_is_an_engine_bug(tmp_path):
    got = found(check(tmp_path, spec_lines(CLIFF, 2000), "--draft", "eagle3"))
    assert got["logs.acceptance.tail-zero"]["category"] == "engine-bug"
    assert "logs.acceptance.tail-cliff" not in got


ZERO = (0.0, 0.0, 0.0)


def test_a_trained_head_never_accepted_is_a_broken_draft_path(tmp_path):
    r = check(tmp_path, spec_lines(ZERO, 325, windows=2), "--draft", "eagle3")
    f = found(r)["logs.acceptance.dead-drafter"]
    assert f["category"] == "engine-bug" and f["data"]["chance"] < 1e-4
    assert r["findings"][0]["id"] == "logs.acceptance.dead-drafter"  # ahead of "low acceptance"


def test_zero_acceptance_is_not_a_broken_path_for_lookup_drafters_or_tiny_samples(tmp_path):
    assert "logs.acceptance.dead-drafter" not in found(check(tmp_path, spec_lines(ZERO, 325, 2), "--draft", "ngram"))
    assert "logs.acceptance.dead-drafter" not in found(check(tmp_path, spec_lines(ZERO, 20), "--draft", "eagle3"))


def test_a_trained_head_hardly_ever_accepted_over_many_drafts_is_a_broken_draft_path_too(tmp_path):
    # 1 % of 2,400 first positions from an MTP head: as unlikely from a working head as none at all
    r = check(tmp_path, spec_lines((0.01,), 2400), "--draft", "mtp")
    f = found(r)["logs.acceptance.dead-drafter"]
    assert f["category"] == "engine-bug" and f["data"]["chance"] < 1e-4 and "hardly ever" in f["title"]
    assert "logs.acceptance.low" not in found(r)  # one diagnosis: not a draft that guesses badly
    # the same rate over few drafts, a rate near the floor, or a draft model: weak drafts, not a broken path
    assert "logs.acceptance.dead-drafter" not in found(check(tmp_path, spec_lines((0.01,), 60), "--draft", "mtp"))
    # (the floor: 5 % for a separate head, a quarter of the weakest published MTP run, ~12 %, for MTP's own layers)
    assert "logs.acceptance.dead-drafter" not in found(check(tmp_path, spec_lines((0.045,), 2400), "--draft", "eagle3"))
    assert "logs.acceptance.dead-drafter" not in found(check(tmp_path, spec_lines((0.11,), 2400), "--draft", "mtp"))
    assert "logs.acceptance.dead-drafter" not in found(
        check(tmp_path, spec_lines((0.01,), 2400), "--draft", "Qwen/Qwen2.5-0.5B-Instruct"))


def test_below_floor_chance_is_the_exact_zero_case_at_zero_and_shrinks_with_the_sample():
    from spec_doctor.knowledge import acceptance as acc

    assert acc.below_floor_chance(0, 200, 0.05) == acc.never_accepted_chance(200, 0.05)
    assert acc.below_floor_chance(6, 100, 0.05) == 1.0  # at the floor: no evidence
    small, large = acc.below_floor_chance(1, 100, 0.05), acc.below_floor_chance(24, 2400, 0.05)
    assert large < 1e-4 < small < 1.0


def test_a_quoted_exception_message_is_the_exception_it_names(tmp_path):
    r = check(tmp_path, "Shape: 3328 out of considered ranges: [(1, 2048)]\n", "--draft", "dflash")
    (crash,) = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["category"] == "engine-bug" and crash["data"]["exception"] == "AssertionError"
    assert crash["data"]["site"] == "vllm/compilation/piecewise_backend.py"
    assert crash["data"]["rule"] == "compile-range-drafter"
    assert "--max-num-batched-tokens 3328" in crash["fix"]["commands"]
    assert r["verdict"] == "broken"


def test_a_quoted_line_needs_the_message_at_its_start_and_is_one_event_with_its_traceback(tmp_path):
    # prose that mentions the message in passing is not the message
    r = check(tmp_path, "we think the Shape: 3328 out of considered ranges: [(1, 2048)] error is odd\n",
              "--draft", "dflash")
    assert not [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    # among vLLM records, a plain line that is the message is read too
    text = spec_lines((0.7, 0.5, 0.3), 100) + "Shape: 3328 out of considered ranges: [(1, 2048)]\n"
    r = check(tmp_path, text, "--draft", "dflash")
    assert [f["data"]["rule"] for f in r["findings"] if f["id"] == "logs.crash.traceback"] == ["compile-range-drafter"]
    # a traceback's own exception line is not a second, quoted event
    tb = ("Traceback (most recent call last):\n"
          '  File "/usr/lib/python3/site-packages/vllm/compilation/piecewise_backend.py", line 361, in __call__\n'
          "    assert range_entry is not None, f\"Shape: {runtime_shape} out of considered ranges\"\n"
          "AssertionError: Shape: 3328 out of considered ranges: [(1, 2048)]\n")
    r = check(tmp_path, tb, "--draft", "dflash")
    assert len([f for f in r["findings"] if f["id"] == "logs.crash.traceback"]) == 1


def test_the_compile_range_row_needs_speculation(tmp_path):
    r = check(tmp_path, "Shape: 3328 out of considered ranges: [(1, 2048)]\n")
    crashes = [f for f in r["findings"] if f["id"] == "logs.crash.traceback"]
    assert crashes and crashes[0]["data"]["rule"] != "compile-range-drafter"


def test_an_exception_line_without_frames_is_placed_where_the_catalogue_says_it_is_raised(tmp_path):
    text = ("ValueError: Expected both speculative_model and num_speculative_tokens to be provided, but found "
            "speculative_model=None and num_speculative_tokens=4.\n")
    (crash,) = [f for f in check(tmp_path, text, "--draft", "ngram")["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["data"]["site"] == "vllm/config.py" and crash["category"] == "config-unsupported-combo"
    # a message the catalogue does not hold stays unplaced (and is still a finding)
    text = "ValueError: something no vLLM release ever said about drafting\n"
    (crash,) = [f for f in check(tmp_path, text, "--draft", "ngram")["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["data"]["site"] is None


def test_a_crash_message_gone_from_later_releases_points_past_its_last_one():
    from packaging.version import Version

    from spec_doctor.checks.crash import _lifetime

    old = {"last_version": "0.10.0"}
    assert "absent from 0.10.1 on" in (_lifetime(old, None) or "")
    assert _lifetime(old, Version("0.11.0")) is None  # the user's release no longer has it: says nothing
    assert _lifetime({"last_version": "0.33.0"}, None) is None  # still raised by the newest release
    assert _lifetime(None, None) is None


V0_KEYERROR = """\
ERROR 11-13 10:00:05 worker_base.py:464] Traceback (most recent call last):
ERROR 11-13 10:00:05 worker_base.py:464]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker_base.py", line 456, in execute_method
ERROR 11-13 10:00:05 worker_base.py:464]   File "/usr/local/lib/python3.10/dist-packages/vllm/spec_decode/spec_decode_worker.py", line 700, in _run_non_driver_rank
ERROR 11-13 10:00:05 worker_base.py:464] KeyError: 'num_seq_groups'
"""


def test_a_crash_that_is_a_known_bug_says_where_it_was_fixed(tmp_path):
    (crash,) = [f for f in check(tmp_path, V0_KEYERROR)["findings"] if f["id"] == "logs.crash.traceback"]
    assert crash["category"] == "engine-bug" and crash["data"]["known_bug"] == "v0-draft-tp-chunked-prefill-keyerror"
    assert "0.6.5" in crash["fix"]["summary"]
    # a release after the fix, or the same exception raised outside spec-decode code, is not that bug
    (later,) = [f for f in check(tmp_path, V0_KEYERROR, "--vllm-version", "0.7.3")["findings"]
                if f["id"] == "logs.crash.traceback"]
    assert later["data"]["known_bug"] is None
    elsewhere = V0_KEYERROR.replace("spec_decode/spec_decode_worker.py", "worker/model_runner.py")
    (other,) = [f for f in check(tmp_path, elsewhere)["findings"] if f["id"] == "logs.crash.traceback"]
    assert other["data"]["known_bug"] is None


def _zero_metrics(tmp_path, zero: bool = True):
    from pathlib import Path

    gen = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "gen"
    before = tmp_path / "before.txt"
    after = tmp_path / "after.txt"
    before.write_text((gen / "random-draft-before.txt").read_text())
    text = (gen / "random-draft-after.txt").read_text()
    if not zero:  # as recorded: 3 of 1,500 drafts accepted
        after.write_text(text)
        return str(before), str(after)
    text = text.replace('num_accepted_tokens_total{engine="0",model_name="tiny-target"} 3.0',
                        'num_accepted_tokens_total{engine="0",model_name="tiny-target"} 0.0')
    text = text.replace('model_name="tiny-target",position="0"} 3.0', 'model_name="tiny-target",position="0"} 0.0')
    after.write_text(text)
    return str(before), str(after)


def _metrics_zero(tmp_path, method: str, zero: bool = True):
    from packaging.version import Version

    from spec_doctor.engine.facts import Sourced
    from spec_doctor.engine.inputs import Inputs
    from spec_doctor.engine.session import build_store, diagnose
    from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig

    inputs = Inputs(metrics_baseline=list(_zero_metrics(tmp_path, zero)))
    raw = {"method": method, "model": "/models/draft", "num_speculative_tokens": 3}
    dep = DeploymentConfig(origin="cmd", model="/models/target", args={}, sources={},
                           speculative=SpecConfig(method=method, model="/models/draft", num_speculative_tokens=3,
                                                  raw=raw, source="--cmd"))
    store, _ = build_store(inputs, preset={"vllm.version": Sourced(Version("0.32.0"), "--vllm-version"),
                                           "config.deployment": dep})
    diag = diagnose(inputs, only=["metrics"], store=store)
    return {f.id: f for f in diag.findings}


def test_zero_accepted_counters_from_a_trained_head_are_a_broken_draft_path(tmp_path):
    head = _metrics_zero(tmp_path, "eagle3")["metrics.acceptance.zero"]
    assert head.category.value == "engine-bug" and head.data["chance"] < 1e-4
    # a separate draft model can honestly be that bad (another tokenizer): low acceptance, as before
    draft = _metrics_zero(tmp_path, "draft_model")["metrics.acceptance.zero"]
    assert draft.category.value == "low-acceptance"


def test_hardly_ever_accepted_counters_from_a_trained_head_are_a_broken_draft_path(tmp_path):
    head = _metrics_zero(tmp_path, "eagle3", zero=False)
    assert head["metrics.acceptance.collapsed"].category.value == "engine-bug"
    assert "metrics.acceptance.low" not in head
    draft = _metrics_zero(tmp_path, "draft_model", zero=False)
    assert "metrics.acceptance.collapsed" not in draft


def test_own_mtp_layers_hardly_ever_accepted_over_many_drafts_are_a_broken_path(tmp_path):
    # ~6 % of first positions over 500 drafts: far under what a model's own MTP layers give on any text
    # (knowledge/acceptance.collapse_floor), so not low acceptance; a separate EAGLE-3 head at the same figure may
    # be another model's head and stays low acceptance.
    pp = (0.06, 0.005, 0.0)
    mtp = found(check(tmp_path, spec_lines(pp, 500, windows=2), "--draft", "mtp"))
    assert mtp["logs.acceptance.dead-drafter"]["category"] == "engine-bug"
    assert "logs.acceptance.low" not in mtp
    head = found(check(tmp_path, spec_lines(pp, 500, windows=2), "--draft", "eagle3"))
    assert "logs.acceptance.dead-drafter" not in head and "logs.acceptance.low" in head
