"""checks/release_bugs.py on synthetic inputs: a log's exception + version, a --cmd, measured figures; and silence on
the bundled healthy runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from spec_doctor.checks import crash
from spec_doctor.checks import release_bugs as kbc
from spec_doctor.collectors.core import InferredVersion
from spec_doctor.engine.inputs import Inputs, Observed
from spec_doctor.engine.model import Finding, Severity
from spec_doctor.engine.session import build_store
from spec_doctor.report.merge import merge_findings

ROOT = Path(__file__).resolve().parents[2]
CRASH_LOG = ROOT / "fixtures" / "releasebugs" / "mtp-attn-metadata-crash.log"
MTP_CMD = ("vllm serve deepseek-ai/DeepSeek-R1 -tp 8 "
           "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'")
FULL_CMD = ("vllm serve Qwen/Qwen3-8B --compilation-config '{\"cudagraph_mode\":\"FULL\"}' "
            "--speculative-config '{\"method\":\"eagle3\",\"model\":\"RedHatAI/Qwen3-8B-speculator.eagle3\","
            "\"num_speculative_tokens\":3}'")
GPT_OSS_CMD = ("vllm serve openai/gpt-oss-120b --speculative-config "
               "'{\"method\":\"eagle3\",\"model\":\"nvidia/gpt-oss-120b-Eagle3\",\"num_speculative_tokens\":3}'")


def _facts(**kw: Any) -> dict[str, Any]:
    store, _ = build_store(Inputs(**kw))
    facts = {n: store.maybe(n) for n in ["vllm.version", *kbc._WANTS]}
    facts.update({n: store.maybe(n) for n in ["logs.files", "models.draft"]})
    return facts


def _run(facts: dict[str, Any]) -> list[Finding]:
    out = []
    for c in (kbc.symptom, kbc.release):
        out += [f.__class__(**{**f.__dict__, "check_id": c.id}) for f in c.fn(facts)]
    return out


def _bugs(findings: list[Finding]) -> dict[str, Finding]:
    return {f.data["bug"]: f for f in findings}


def test_cmd_and_version_give_an_info_note() -> None:
    found = _bugs(_run(_facts(cmd=MTP_CMD, vllm_version="0.9.1")))
    note = found["mtp-deepseek-v1-broken-0.9"]
    assert note.id == "releasebugs.release.note" and note.severity is Severity.INFO
    assert "0.9.2" in note.fix.summary and note.fix.commands == ("pip install -U 'vllm>=0.9.2'",)


def test_no_note_at_the_fixed_release() -> None:
    assert "mtp-deepseek-v1-broken-0.9" not in _bugs(_run(_facts(cmd=MTP_CMD, vllm_version="0.9.2")))


def test_docker_install_is_spelled_as_a_pull() -> None:
    found = _bugs(_run(_facts(cmd="docker run vllm/vllm-openai:v0.9.1 --model deepseek-ai/DeepSeek-R1 -tp 8 "
                                  "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'")))
    assert found["mtp-deepseek-v1-broken-0.9"].fix.commands == ("docker pull vllm/vllm-openai:v0.9.2",)


def test_log_exception_is_an_error_that_merges_with_the_crash_finding() -> None:
    facts = _facts(cmd=MTP_CMD, logs=[str(CRASH_LOG)])  # the version comes from the log's banner
    mine = [f for f in _run(facts) if f.data["bug"] == "mtp-deepseek-v1-broken-0.9"]
    assert len(mine) == 1 and mine[0].id == "releasebugs.symptom.match" and mine[0].severity is Severity.ERROR
    assert mine[0].confidence >= 0.7
    crashed = [Finding(**{**f.__dict__, "check_id": "logs.crash"}) for f in crash.crash.fn(facts)]
    assert crashed
    merged = merge_findings([*crashed, *mine])
    assert len(merged) == 1
    assert {m["check"] for m in merged[0].data.get("merged", [])} | {merged[0].check_id} == {"logs.crash",
                                                                                          "releasebugs.symptom"}


def test_stated_zero_acceptance_matches_an_acceptance_bug() -> None:
    facts = _facts(cmd=GPT_OSS_CMD, vllm_version="0.10.2",
                   observed=Observed(acceptance_rate=0.0, text={"--acceptance": "0%"}))
    f = _bugs(_run(facts))["gpt-oss-eagle3-wrong-attention-group"]
    assert f.id == "releasebugs.symptom.match" and f.severity is Severity.WARNING


def test_measured_slowdown_matches_a_slowdown_bug() -> None:
    facts = _facts(cmd=FULL_CMD, vllm_version="0.17.0",
                   observed=Observed(throughput=(40.0, 80.0), text={"--throughput": "40,80"}))
    f = _bugs(_run(facts))["full-cudagraph-spec-falls-back-eager"]
    assert f.id == "releasebugs.symptom.match" and f.severity is Severity.WARNING


def test_healthy_acceptance_silences_the_notes() -> None:
    facts = _facts(cmd=GPT_OSS_CMD, vllm_version="0.10.2",
                   observed=Observed(acceptance_length=3.2, k=3, text={"--acceptance": "3.2"}))
    assert _run(facts) == []


def test_partial_version_overlap_lowers_confidence_and_says_so() -> None:
    facts = _facts(cmd=MTP_CMD, vllm_version="0.9.1")
    whole = _bugs(_run(facts))["mtp-deepseek-v1-broken-0.9"]
    facts["vllm.version"] = InferredVersion(Version("0.10.0"), "inferred", Version("0.9.1"), Version("0.10.0"),
                                            False, 0.6)
    part = _bugs(_run(facts))["mtp-deepseek-v1-broken-0.9"]
    assert part.confidence < whole.confidence
    assert any("only part" in e.detail for e in part.evidence)
    facts["vllm.version"] = InferredVersion(Version("0.11.0"), "inferred", Version("0.10.0"), Version("0.11.0"),
                                            False, 0.6)
    assert "mtp-deepseek-v1-broken-0.9" not in _bugs(_run(facts))


def test_nothing_without_speculation() -> None:
    assert _run(_facts(cmd="vllm serve deepseek-ai/DeepSeek-R1 -tp 8", vllm_version="0.9.1")) == []


def _healthy_recording(d: Path) -> bool:
    """A GPU recording of a healthy run: acceptance planted at a first-position rate a working drafter reaches (or
    none planted), and no traceback in its log (a server stopped with an EngineDeadError at shutdown is not a run
    without an error line: the release's known crash bugs may be noted there)."""
    if not ((d / "log.txt").is_file() and (d / "cmd.txt").is_file()):
        return False
    planted = re.search(r'"synthetic_acceptance_rates": \[([\d.]+)', (d / "cmd.txt").read_text())
    return (planted is None or float(planted.group(1)) >= 0.5) \
        and "Traceback (most recent call last)" not in (d / "log.txt").read_text()


@pytest.mark.parametrize("case", sorted(p.name for p in (ROOT / "fixtures" / "vllm-gpu").iterdir()
                                        if _healthy_recording(p)))
def test_bundled_healthy_runs_get_nothing(case: str) -> None:
    d = ROOT / "fixtures" / "vllm-gpu" / case
    facts = _facts(cmd=(d / "cmd.txt").read_text(), logs=[str(d / "log.txt")])
    assert _run(facts) == []  # healthy acceptance in the log: not even a note


# -- the user's complaint (--symptom, fact symptom.complaint) ------------------------------------------------------
GEMMA_MTP_TP2 = ("vllm serve google/gemma-4-31B-it -tp 2 "
                 "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'")
EAGLE3_DEEPSEEK = ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config "
                   "'{\"method\":\"eagle3\",\"model\":\"some/eagle3-head\",\"num_speculative_tokens\":2}'")


def _complaint(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.id == "releasebugs.symptom.complaint"]


def test_the_collected_complaint_reaches_the_check() -> None:
    facts = _facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0", symptoms=("the server crashes after a few requests",))
    assert "crash" in facts["symptom.complaint"]["classes"]


def test_a_complaint_of_the_rows_symptom_names_the_row() -> None:
    facts = _facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0",
                   symptoms=("it crashes with an illegal memory access when I enable MTP",))
    found = _complaint(_run(facts))
    assert len(found) == 1
    f = found[0]
    assert f.data["bugs"][0] == "gemma4-mtp-ima-tp" and f.severity is Severity.WARNING
    assert f.data["fixed_in"] == "0.23.0" and f.fix.commands == ("pip install -U 'vllm>=0.23.0'",)
    assert f.confidence == pytest.approx(0.55)  # the row's conditions (family, TP) shown, not only the method
    assert "gemma4-mtp-ima-tp" not in {g.data["bug"] for g in _run(facts) if g.id == "releasebugs.release.note"}


def test_a_complaint_of_another_class_names_nothing() -> None:
    facts = _facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0", symptoms=("the output looks fine but it is slow",))
    found = _run(facts)
    assert not [f for f in _complaint(found) if "gemma4-mtp-ima-tp" in f.data["bugs"]]
    assert _bugs(found)["gemma4-mtp-ima-tp"].id == "releasebugs.release.note"  # still the info note of the release


def test_a_complaint_on_a_fixed_release_names_nothing() -> None:
    facts = _facts(cmd=GEMMA_MTP_TP2, vllm_version="0.23.0", symptoms=("it crashes with an illegal memory access",))
    assert not [f for f in _complaint(_run(facts)) if "gemma4-mtp-ima-tp" in f.data["bugs"]]


def test_a_partly_affected_inferred_range_lowers_the_complaint_finding() -> None:
    facts = _facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0", symptoms=("it crashes with an illegal memory access",))
    facts["vllm.version"] = InferredVersion(Version("0.24.0"), "inferred", Version("0.22.0"), Version("0.24.0"),
                                            False, 0.6)
    f = next(f for f in _complaint(_run(facts)) if f.data["bugs"][0] == "gemma4-mtp-ima-tp")
    assert f.confidence < 0.55 and any("only part" in e.detail for e in f.evidence)
    facts["vllm.version"] = InferredVersion(Version("0.24.0"), "inferred", Version("0.23.0"), Version("0.24.0"),
                                            False, 0.6)
    assert not [f for f in _complaint(_run(facts)) if "gemma4-mtp-ima-tp" in f.data["bugs"]]


def test_a_healthy_run_gets_nothing_whatever_the_complaint() -> None:
    facts = _facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0", symptoms=("it crashes with an illegal memory access",),
                   observed=Observed(acceptance_length=2.6, k=2, text={"--acceptance": "2.6"}))
    assert _run(facts) == []


def test_many_matching_rows_make_one_finding_with_the_highest_fix() -> None:
    facts = _facts(cmd=EAGLE3_DEEPSEEK, vllm_version="0.11.0", symptoms=("the engine crashed with an error",))
    found = _complaint(_run(facts))
    assert len(found) == 1
    f = found[0]
    bugs = f.data["bugs"]
    assert len(bugs) >= 3 and {"eagle3-deepseek-non-yarn-rope-crash", "eagle-even-k-index-error"} <= set(bugs)
    fixed = [b.fixed_in for b in kbc.for_release() if b.id in bugs]
    assert f.data["fixed_in"] == str(max(fixed)) and f.fix.commands == (f"pip install -U 'vllm>={max(fixed)}'",)
    assert f.data["bug"] in ("eagle3-deepseek-non-yarn-rope-crash", "eagle-even-k-index-error")  # conditions shown
    assert not {b for b in bugs if b in _bugs([g for g in _run(facts) if g.id == "releasebugs.release.note"])}


def test_log_evidence_outranks_the_complaint() -> None:
    """The log shows the row's exception: releasebugs.symptom.match (error); the complaint adds no second finding
    for the same symptom class."""
    facts = _facts(cmd=MTP_CMD, logs=[str(CRASH_LOG)], symptoms=("it crashes at startup with MTP",))
    found = _run(facts)
    assert [f.id for f in found if f.data["bug"] == "mtp-deepseek-v1-broken-0.9"] == ["releasebugs.symptom.match"]
    assert not [f for f in _complaint(found) if f.data["symptom"] == "crash"]


def test_a_not_supported_complaint_names_an_unsupported_combination() -> None:
    facts = _facts(cmd="vllm serve ai21labs/AI21-Jamba-Mini-1.6 --speculative-config "
                       "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4}'",
                   vllm_version="0.10.1", symptoms=("vLLM says speculative decoding is not supported for this model",))
    assert "unsupported" in facts["symptom.complaint"]["classes"]
    found = _complaint(_run(facts))
    assert len(found) == 1 and "v1-mamba-spec-not-supported" in found[0].data["bugs"]
    assert found[0].category.value == "config-unsupported-combo"


def test_notes_of_rows_whose_conditions_show_come_first() -> None:
    """The notes combine into one finding led by the first of equal score: a row whose conditions the deployment
    shows (CUDA graphs on, FULL mode) leads over one that only names the method, whatever the table's order."""
    from spec_doctor.knowledge import release_bugs as kb

    facts = _facts(cmd=FULL_CMD, vllm_version="0.12.0")
    d = kbc._deployment(facts)
    notes = [f for f in kbc.release.fn(facts) if f.id == "releasebugs.release.note"]
    shown = [bool(kb.match(next(b for b in kb.bugs() if b.id == f.data["bug"]), d).satisfied) for f in notes]
    assert True in shown and False in shown
    assert shown == sorted(shown, reverse=True)
    assert "spec-cudagraph-capture-sizes-too-small" in {f.data["bug"] for f in notes}
    lead = next(f for f in merge_findings(notes) if f.id == "releasebugs.release.note")
    assert shown[[f.data["bug"] for f in notes].index(lead.data["bug"])]


# -- rows of the 2026-12-06 batch: the text a user pastes names the row ------------------------------------------
DSV3_EAGLE3 = ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config "
               "'{\"method\":\"eagle3\",\"model\":\"some/deepseek-eagle3\",\"num_speculative_tokens\":3}'")
QWEN3_MOE_EAGLE3 = ("vllm serve Qwen/Qwen3-30B-A3B --speculative-config "
                    "'{\"method\":\"eagle3\",\"model\":\"some/qwen3-moe-eagle3\",\"num_speculative_tokens\":3}'")
QWEN3_EAGLE3 = QWEN3_MOE_EAGLE3.replace("Qwen3-30B-A3B", "Qwen3-8B")


def _log(tmp_path: Path, version: str, *lines: str) -> str:
    p = tmp_path / "vllm.log"
    p.write_text("\n".join([f"INFO 04-01 10:00:01 [api_server.py:1043] vLLM API server version {version}", *lines])
                 + "\n")
    return str(p)


def _matched(facts: dict[str, Any]) -> dict[str, Finding]:
    return {f.data["bug"]: f for f in _run(facts) if f.id == "releasebugs.symptom.match"}


def test_a_pasted_pydantic_allowlist_error_names_the_target_support_row(tmp_path: Path) -> None:
    log = _log(tmp_path, "0.16.0", "Traceback (most recent call last):",
               '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1520, in '
               "create_speculative_config",
               "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig",
               "  Value error, Eagle3 is only supported for ['llama', 'qwen', 'minicpm', 'gpt_oss'] models. Got "
               "self.target_model_config.hf_text_config.model_type='deepseek_v3' [type=value_error, "
               "input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]")
    f = _matched(_facts(cmd=DSV3_EAGLE3, logs=[log]))["eagle3-deepseek-kimi-not-allowlisted"]
    assert f.severity is Severity.ERROR and f.data["matched"] == "exact" and f.data["fixed_in"] == "0.18.0"
    assert "eagle3-deepseek-kimi-not-allowlisted" not in _matched(_facts(cmd=DSV3_EAGLE3, logs=[log],
                                                                         vllm_version="0.18.0"))


def test_the_interface_runtime_error_names_the_architecture_row_only(tmp_path: Path) -> None:
    log = _log(tmp_path, "0.11.0", "ERROR 04-01 10:00:05 [core.py:708] Traceback (most recent call last):",
               'ERROR 04-01 10:00:05 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/'
               'gpu_model_runner.py", line 2648, in load_model',
               "ERROR 04-01 10:00:05 [core.py:708] RuntimeError: Model does not support EAGLE3 interface but "
               "aux_hidden_state_outputs was requested")
    assert "eagle3-qwen3-moe-target-no-interface" in _matched(_facts(cmd=QWEN3_MOE_EAGLE3, logs=[log]))
    assert "eagle3-qwen3-moe-target-no-interface" not in _matched(_facts(cmd=QWEN3_EAGLE3, logs=[log]))  # dense Qwen3


def test_an_error_line_alone_names_the_structured_output_row(tmp_path: Path) -> None:
    """The row names no exception class: the ERROR line xgrammar logs is enough (the traceback after it is bare)."""
    log = _log(tmp_path, "0.13.0", "ERROR 01-08 23:05:23 [backend_xgrammar.py:180] Failed to advance FSM for request "
                                   "5-849fcee3 for tokens 330. Please file an issue.")
    found = _matched(_facts(cmd=QWEN3_EAGLE3, logs=[log]))
    assert "spec-structured-output-preempted-stale-drafts" in found
    assert found["spec-structured-output-preempted-stale-drafts"].data["fixed_in"] == "0.14.0"
    assert "spec-structured-output-preempted-stale-drafts" not in _matched(
        _facts(cmd=QWEN3_EAGLE3, logs=[_log(tmp_path, "0.14.0", "ERROR 01-08 23:05:23 [backend_xgrammar.py:180] "
                                                                "Failed to advance FSM for request 1 for tokens 2.")]))


def test_a_not_supported_complaint_names_the_allowlist_row() -> None:
    facts = _facts(cmd=DSV3_EAGLE3, vllm_version="0.17.0",
                   symptoms=("vLLM says eagle3 is not supported for this model",))
    found = _complaint(_run(facts))
    assert len(found) == 1 and "eagle3-deepseek-kimi-not-allowlisted" in found[0].data["bugs"]


def _spec_log(tmp_path: Path, accepted: int, drafted: int) -> str:
    """A V1 log whose one SpecDecoding line shows `accepted` of `drafted` tokens at K=3 (tokens/step 1 + 3a)."""
    rate = accepted / drafted
    log = tmp_path / "vllm.log"
    log.write_text(
        "(APIServer pid=1) INFO 05-06 06:11:23 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
        f"{1 + 3 * rate:.2f}, Accepted throughput: 1.00 tokens/s, Drafted throughput: 9.00 tokens/s, Accepted: "
        f"{accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: {rate:.3f}, {rate:.3f}, "
        f"{rate:.3f}, Avg Draft acceptance rate: {100 * rate:.1f}%\n")
    return str(log)


def test_a_log_acceptance_is_a_bugs_symptom_only_over_enough_drafted_tokens(tmp_path: Path) -> None:
    """A handful of drafted tokens (the sample the log check needs, thresholds.toml min_drafted_tokens) says nothing
    about a low-acceptance bug; the same rate over enough drafts names the release's row."""
    few, many = tmp_path / "few", tmp_path / "many"
    few.mkdir()
    many.mkdir()
    def matched(log: str) -> list[Finding]:
        return [f for f in _run(_facts(cmd=FULL_CMD, vllm_version="0.20.0", logs=[log]))
                if f.id == "releasebugs.symptom.match"]

    assert not matched(_spec_log(few, 1, 15))
    assert matched(_spec_log(many, 40, 600))


def test_a_quoted_error_puts_its_row_first_among_the_complaints_rows() -> None:
    """A complaint that quotes a row's message names that row first, with the quote as evidence; the same complaint
    without the quote ranks the rows by their shown conditions only (here another Gemma 4 MTP crash row leads)."""
    quote = "AssertionError: All layers in one attention group must share num_heads; got {8, 4}"
    plain = _complaint(_run(_facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0",
                                   symptoms=("the engine crashes at start-up",))))
    quoted = _complaint(_run(_facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0",
                                    symptoms=(f"the engine crashes at start-up: {quote}",))))
    assert len(plain) == len(quoted) == 1
    assert "gemma4-mtp-attention-group-num-heads-assert" in plain[0].data["bugs"]
    assert plain[0].data["bug"] != "gemma4-mtp-attention-group-num-heads-assert"
    assert quoted[0].data["bug"] == "gemma4-mtp-attention-group-num-heads-assert"
    assert any("quoted error is this bug's message" in e.detail for e in quoted[0].evidence)
    assert not any("quoted error" in e.detail for e in plain[0].evidence)


def test_a_quoted_exception_class_alone_does_not_reorder_the_rows() -> None:
    """Only the row's message text singles it out: a quoted bare class every crash row shares changes nothing."""
    plain = _complaint(_run(_facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0",
                                   symptoms=("the engine crashes at start-up",))))
    bare = _complaint(_run(_facts(cmd=GEMMA_MTP_TP2, vllm_version="0.22.0",
                                  symptoms=("the engine crashes at start-up: AssertionError",))))
    assert plain[0].data["bugs"] == bare[0].data["bugs"]


@pytest.mark.parametrize(("cmd", "version", "complaint", "row"), [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --attention-backend ROCM_AITER_FA --speculative-config "
     "'{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\",\"num_speculative_tokens\":3}'",
     "0.16.0", "the answers are garbage with speculative decoding", "rocm-aiter-fa-spec-decode-wrong-output"),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-transfer-config "
     "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}' --speculative-config "
     "'{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\",\"num_speculative_tokens\":3}'",
     "0.17.1", "the acceptance rate is much lower than without disaggregation", "pd-spec-draft-kv-saved-before-drafter"),
])
def test_version_flags_and_complaint_name_the_release_row(cmd: str, version: str, complaint: str, row: str) -> None:
    """Only a version, a command line and a complaint: the row of that release, method and flag leads."""
    found = _complaint(_run(_facts(cmd=cmd, vllm_version=version, symptoms=(complaint,))))
    assert len(found) == 1 and found[0].data["bug"] == row


def test_the_release_rows_leave_other_flags_and_releases_alone() -> None:
    """The same complaint without the row's flag, or on the release with the fix, does not name it."""
    base = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
            "'{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\",\"num_speculative_tokens\":3}'")
    for cmd, version in ((base, "0.16.0"), (base + " --attention-backend TRITON_ATTN", "0.16.0"),
                         (base + " --attention-backend ROCM_AITER_FA", "0.17.0")):
        found = _complaint(_run(_facts(cmd=cmd, vllm_version=version, symptoms=("the answers are garbage",))))
        assert not [f for f in found if "rocm-aiter-fa-spec-decode-wrong-output" in f.data["bugs"]], (cmd, version)


def test_a_crash_at_start_up_is_not_what_a_complaint_about_a_running_server_saw() -> None:
    from spec_doctor.knowledge.release_bugs import bugs

    row = next(b for b in bugs() if b.id == "mtp-fp8-kv-scales-load")  # "MTP weight loading breaks on FP8 ..."
    assert row.at_startup and not next(b for b in bugs() if b.id == "gemma4-mtp-ima-tp").at_startup
    cmd = ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 "
           "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'")
    at_start = _facts(cmd=cmd, vllm_version="0.9.2", symptoms=("it crashes while loading the MTP weights",))
    assert any(row.id in f.data["bugs"] for f in _complaint(_run(at_start)))
    serving = _facts(cmd=cmd, vllm_version="0.9.2", symptoms=("it crashes after a few requests under load",))
    assert serving["symptom.complaint"]["stage"] == "serving"
    assert not any(row.id in f.data["bugs"] for f in _complaint(_run(serving)))
