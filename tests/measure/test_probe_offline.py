"""The offline probe end to end on tiny real models (transformers + torch, CPU, a few seconds).

Models come from fixtures/probe/tiny.py: a trained 2-layer target, an identical copy, a random draft
and a padded-vocab copy (embedding/lm_head 64 rows larger, like Qwen2.5 7B vs 0.5B).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from spec_doctor.engine.facts import FactUnavailable, InputError  # noqa: E402
from spec_doctor.measure.probe import OfflineSettings, SamplingSpec, run_offline  # noqa: E402
from spec_doctor.measure.probe import offline as O  # noqa: E402
from spec_doctor.measure.probe.prompts import PromptSet, bundled  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("probe_tiny", REPO / "fixtures" / "probe" / "tiny.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["probe_tiny"] = mod
    spec.loader.exec_module(mod)
    return mod.build(tmp_path_factory.mktemp("tiny"))


def prompts(n=6):
    ps = bundled("code")
    return PromptSet("code", ps.prompts[:n], ps.source)


def probe(tiny, draft, temp=0.0, **kw):
    s = OfflineSettings(target=str(tiny["target"]), draft=str(tiny[draft]), sampling=SamplingSpec(temp),
                        max_new_tokens=kw.pop("tokens", 12), batch_size=4, early_stop=False,
                        measure_cost=kw.pop("measure_cost", False), reference_t0=kw.pop("reference_t0", False),
                        device="cpu", **kw)
    return run_offline(s, kw.pop("ps", None) or prompts())


def test_identical_draft_accepts_everything_at_t0(tiny):
    r = probe(tiny, "identical")
    assert r["alpha"]["value"] == 1.0
    for k in (1, 4, 10):
        row = r["per_k"][str(k)]
        assert row["acceptance_rate"]["value"] == 1.0
        assert row["mean_acceptance_length"]["value"] == k + 1
        assert row["survival"] == [1.0] * k


def test_random_draft_is_rejected(tiny):
    r = probe(tiny, "random")
    assert r["alpha"]["hi"] < 0.1
    assert r["per_k"]["4"]["mean_acceptance_length"]["value"] < 1.1


def test_temperature_semantics_follow_vllm_v1(tiny):
    # greedy draft (V1 default): accepted with p_T(argmax q) < 1 even for a perfect draft
    r = probe(tiny, "identical", temp=1.0, reference_t0=True)
    est = r["estimators"]
    assert est["top1_agreement"] == 1.0 and est["probabilistic"] == pytest.approx(1.0)
    assert 0.05 < est["greedy_draft"] < 0.95
    assert r["sampling"]["estimator"] == "greedy-draft"
    assert r["alpha"]["value"] == pytest.approx(est["greedy_draft"], abs=1e-3)
    assert r["reference_t0"]["alpha"]["value"] == 1.0
    # probabilistic drafting (vLLM >= 0.21 draft_sample_method) accepts a perfect draft always
    s = OfflineSettings(target=str(tiny["target"]), draft=str(tiny["identical"]),
                        sampling=SamplingSpec(1.0, draft_sample_method="probabilistic"), max_new_tokens=12,
                        batch_size=4, early_stop=False, measure_cost=False, reference_t0=False, device="cpu")
    rp = run_offline(s, prompts())
    assert rp["per_k"]["4"]["acceptance_rate"]["value"] == pytest.approx(1.0)


def test_padded_vocab_draft_compares_on_the_shared_range(tiny):
    r = probe(tiny, "padded", temp=1.0)
    ref = probe(tiny, "identical", temp=1.0)
    assert r["vocab_compared"] == ref["vocab_compared"] < 400
    assert r["alpha"]["value"] == pytest.approx(ref["alpha"]["value"], abs=1e-6)


def test_chat_template_is_used(tiny):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny["target"])
    ids = O.encode_prompt(tok, {"messages": [{"role": "user", "content": "def add(a, b):"}]})
    assert ids[0] == tok.convert_tokens_to_ids("<|user|>")
    assert ids[-1] == tok.convert_tokens_to_ids("<|assistant|>")
    assert O.encode_prompt(tok, {"prompt_token_ids": [5, 6]}) == [5, 6]


def test_ngram_method_needs_no_draft(tiny):
    s = OfflineSettings(target=str(tiny["target"]), method="ngram", prompt_lookup=(2, 3),
                        sampling=SamplingSpec(0.0), max_new_tokens=32, batch_size=4, early_stop=False,
                        measure_cost=False, reference_t0=False, device="cpu")
    r = run_offline(s, prompts(4))
    assert r["method"] == "ngram" and r["per_k"]["3"]["counters"]["num_steps"] > 0
    assert 0.0 <= r["alpha"]["value"] <= 1.0


def test_early_stop_and_cost(tiny):
    ps = bundled("chat")
    s = OfflineSettings(target=str(tiny["target"]), draft=str(tiny["identical"]), sampling=SamplingSpec(0.0),
                        max_new_tokens=8, batch_size=16, early_stop=True, measure_cost=True, reference_t0=False,
                        device="cpu")
    r = run_offline(s, ps)
    assert r["stopped_early"] and r["prompts"] == 16  # alpha = 1 exactly: known after the first batch
    assert r["cost"]["measured"] and r["cost"]["c"] > 0


def test_bad_input(tiny, monkeypatch):
    with pytest.raises(InputError):
        SamplingSpec(-0.5)
    with pytest.raises(InputError, match="needs a draft"):
        run_offline(OfflineSettings(target=str(tiny["target"]), draft=None), prompts())
    with pytest.raises(InputError, match="not a directory"):
        O.load_pair("/nonexistent/model", None, device="cpu")
    monkeypatch.setattr(O, "_free_memory", lambda device: 1024)
    with pytest.raises(FactUnavailable, match="do not fit"):
        O.load_pair(str(tiny["target"]), str(tiny["random"]), device="cpu")
