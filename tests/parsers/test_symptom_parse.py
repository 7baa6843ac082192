"""The complaint parser (parsers/symptom.py): classes per SYMPTOM.md, negation, stage, empty and abusive input."""

from __future__ import annotations

import pytest

from spec_doctor.engine.facts import InputError
from spec_doctor.knowledge.symptoms import CLASSES, symptom_classes
from spec_doctor.parsers.symptom import MAX_SYMPTOM_CHARS, classify, clean_symptoms, complaint_of


@pytest.mark.parametrize("text, cls", [
    ("it crashes when I enable MTP", "crash"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "crash"),
    ("the server does not start with --speculative-config", "startup"),
    ("torch.OutOfMemoryError: CUDA out of memory", "memory"),
    ("No available memory for the cache blocks", "memory"),
    ("throughput dropped with EAGLE-3", "slowdown"),
    ("output throughput at high concurrency drops", "slowdown"),
    ("no speedup at all with the draft", "slowdown"),
    ("TTFT doubled", "latency"),
    ("the acceptance rate is very low", "low-acceptance"),
    ("the acceptence rates drop significantly", "low-acceptance"),
    ("Avg Draft acceptance rate: 0.0%", "zero-acceptance"),
    ("nothing is accepted", "zero-acceptance"),
    ("the output is gibberish with speculation", "wrong-output"),
    ("the server hangs after a few requests", "hang"),
    ("I do not see any spec decode metrics", "no-metrics"),
    ("lots of preemptions under load", "preemption"),
    ("eagle3 is not supported for this model", "unsupported"),
    ("the draft acceptance rate collapsed after the upgrade", "low-acceptance"),
    ("Memory access fault by GPU node-2 (Agent handle: 0x55d0) on address 0x7f00", "crash"),
    ("the server faults the GPU with MTP on", "crash"),
    ("spec_config is None when ngram is enabled", "crash"),
])
def test_each_class_is_recognised(text, cls):
    assert cls in classify(text).classes


@pytest.mark.parametrize("text", ["acceptance rate is 80 %, no collapse", "the acceptance never collapses",
                                  "the answer is none of them"])
def test_collapse_and_none_words_need_their_subject(text):
    assert classify(text).classes == ()


def test_case_insensitive():
    assert classify("CUDA OUT OF MEMORY").classes == classify("cuda out of memory").classes == ("memory",)


@pytest.mark.parametrize("text", ["no crash", "it runs without errors", "it is not slower", "never hangs",
                                  "no OOM so far"])
def test_negated_symptoms_do_not_count(text):
    c = classify(text)
    assert c.classes == () and c.negated


@pytest.mark.parametrize("text", ["TTFT improved by 20%", "lower ITL with EAGLE-3", "latency is fine"])
def test_a_latency_gain_is_no_complaint(text):
    assert "latency" not in classify(text).classes


def test_failing_to_speed_up_is_a_slowdown_not_a_crash():
    assert classify("speculative decoding fails to improve throughput").classes == ("slowdown",)


def test_negation_stays_in_its_clause():
    c = classify("no errors at startup, but the output is gibberish")
    assert c.classes == ("wrong-output",)
    assert "crash" not in classify("runs without errors; throughput dropped").classes
    assert "crash" in classify("There was no problem until it crashed").classes


def test_stage():
    assert classify("server fails to start while loading the draft").stage == "startup"
    assert classify("crashes during CUDA graph capture").stage == "startup"
    assert classify("crashes after a few requests").stage == "serving"
    assert classify("throughput dropped").stage == "serving"
    assert classify("it crashes").stage is None


def test_no_class_is_kept_as_text():
    c = classify("how do I enable eagle3 with k=3")
    assert c.classes == () and c.text == "how do I enable eagle3 with k=3"


def test_a_smaller_k_beating_a_larger_one_is_read():
    assert classify("k=3 beat k=7 by a lot").classes == ("larger-k-worse",)
    assert "larger-k-worse" not in classify("k=7 beat k=3 by a lot").classes


def test_joined_texts():
    c = complaint_of(["it crashes", "and hangs"])
    assert c is not None and c.classes == ("crash", "hang") and " [...] " in c.text
    assert complaint_of([]) is None


def test_clean_and_bounds():
    assert clean_symptoms(["  it\x1b[2J crashes \n\n at load "]) == ("it [2J crashes at load",)
    with pytest.raises(InputError, match="more than"):
        clean_symptoms(["x" * (MAX_SYMPTOM_CHARS + 1)])
    with pytest.raises(InputError, match="empty"):
        clean_symptoms(["\x1b\x07  "])
    with pytest.raises(InputError, match="times"):
        clean_symptoms(["slow"] * 21)


def test_vocabulary_has_every_class_with_a_source():
    table = symptom_classes()
    assert set(table) == set(CLASSES)
    for cls in table.values():
        assert cls.patterns and cls.source and cls.why and cls.confirm
        assert cls.default in cls.points_at
        assert 0 < cls.confidence < 0.5  # a complaint alone is a low-confidence pointer


def test_any_text_classifies_quickly_into_known_classes():
    import time

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=400))
    def one(text):
        c = classify(text)
        assert set(c.classes) <= set(CLASSES) and c.stage in (None, "startup", "serving")

    one()
    worst = ("throughput " + "a " * 1000 + "enginecore " * 100 + "x" * 500)[:MAX_SYMPTOM_CHARS]
    t0 = time.perf_counter()
    classify(worst)
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize("text, cls", [
    ("服务报错", "crash"), ("开启eagle3卡死", "hang"), ("开启MTP后变慢了", "slowdown"), ("显存不足", "memory"),
    ("接受率太低", "low-acceptance"), ("接受率恒为 0%", "zero-acceptance"), ("输出乱码", "wrong-output"),
    ("speculative decoding开启后无收益", "slowdown"), ("the setting has no effect", "ignored-setting"),
    ("disable_by_batch_size is silently ignored", "ignored-setting"), ("First request OOMs with MTP", "memory"),
    ("EAGLE3 with gpt-oss-120b not working", "crash"), ("tool calls come back malformed", "wrong-output"),
])
def test_broader_vocabulary(text, cls):
    assert cls in classify(text).classes


@pytest.mark.parametrize("text", ["没有报错", "服务正常启动，无报错", "没有变慢", "acceptance rate is not low",
                                  "speculation has no effect on the output", "Add an acceptance length regression test"])
def test_negated_or_neutral_texts_name_no_class(text):
    assert classify(text).classes == ()


def test_chinese_negation_stays_in_its_clause():
    assert classify("无报错，但是输出乱码").classes == ("wrong-output",)
    # words that hold a negator without negating: 不断 (continually), 非常 (very)
    assert classify("不断报错").classes == ("crash",) and classify("开启后非常慢").classes == ("slowdown",)


@pytest.mark.parametrize("text, cls", [
    ("Avg Draft acceptance rate: 9.1%", "low-acceptance"),
    ("Draft acceptance rate: 0.000, Number of speculative tokens: 16", "zero-acceptance"),
    ("throughput 410 tok/s vs 520 tok/s without spec", "slowdown"),
    ("TPS劣化：26token/s->21tokens/s", "slowdown"),
    ("TPOT 45ms -> 60ms", "latency"),
    ("proposal time 13 ms instead of 5 ms", "latency"),
    ("k=2 is 36% faster and k=4 is 28% faster than vanilla", "larger-k-worse"),
    ("num_speculative_tokens=2 outperforms the default of 4", "larger-k-worse"),
])
def test_stated_figures_are_judged(text, cls):
    assert cls in classify(text).classes


@pytest.mark.parametrize("text", [
    "Draft acceptance rate: 0.655, Number of speculative tokens: 4",  # a normal acceptance at K=4
    "the acceptance rate should be 80%",  # an expectation, not an observation
    "mean TTFT got improved from 135.34 ms to 115.42 ms",  # better with speculation
    "throughput 520 tok/s vs 410 tok/s without spec",
    "Speedup: 1.62x",
    "k=4 is 36% faster and k=2 is 28% faster than vanilla",  # the larger K did better
])
def test_stated_figures_that_are_fine_add_no_class(text):
    assert classify(text).classes == ()


def test_stated_acceptance_is_judged_for_the_named_method():
    from spec_doctor.parsers.symptom import stated_figures

    # A mean acceptance length of 1.3 with K unknown: at most 0.3 per token, below every head's floor.
    assert "low-acceptance" in stated_figures("eagle3: Mean acceptance length: 1.30")
    # A look-up drafter's acceptance is the workload's: not judged.
    assert stated_figures("suffix decoding, Mean acceptance length: 1.30") == {}


def test_speculative_decoding_names_the_feature_not_the_serving_stage():
    from spec_doctor.parsers.symptom import classify

    assert classify("fails at config validation, before any model loads: NotImplementedError: Speculative "
                    "decoding is not supported").stage == "startup"
    assert classify("it crashes during decoding after a few requests").stage == "serving"


def test_wrong_output_in_the_words_of_evals_and_of_a_behaviour_only_speculation_changes():
    from spec_doctor.parsers.symptom import classify

    for text in ("every generation is one repeated token", "poor accuracy on our eval set with eagle3",
                 "GSM8K score dropped from 0.91 to 0.62 after enabling MTP",
                 "the stop sequence is not enforced when speculative decoding is enabled",
                 "it works correctly when speculative decoding is disabled"):
        assert "wrong-output" in classify(text).classes, text
    assert "wrong-output" not in classify("accuracy is the same with and without speculation").classes


def test_cuda_graphs_the_user_saw_missing_or_dropped_are_their_own_class():
    from spec_doctor.parsers.symptom import classify

    for text in ("not all cuda graph sizes are being captured", "the drafter falls back to eager mode",
                 "cudagraph_mode is downgraded to PIECEWISE with spec decode", "CUDA graph capture fails for the drafter"):
        assert "cuda-graphs" in classify(text).classes, text
    assert "cuda-graphs" not in classify("graphs are captured fine and it is fast").classes


@pytest.mark.parametrize("text, phrase", [
    ("with MTP I get 45 tok/s, 60 tok/s without", "45 tok/s with speculation vs 60 tok/s without"),
    ("baseline 60 tok/s; EAGLE-3 45 tok/s", "45 tok/s with speculation vs 60 tok/s without"),
    ("With speculative decoding: 30 tokens/s. Without: 42 tokens/s.", "30 tokens/s with speculation vs 42 tokens/s without"),
    ("spec decode off: 50 tok/s, with spec decode: 40 tok/s", "40 tok/s with speculation vs 50 tok/s without"),
])
def test_throughput_figures_stated_apart_make_a_with_without_pair(text, phrase):
    c = classify(text)
    assert c.classes == ("slowdown",) and phrase in c.matched["slowdown"]


@pytest.mark.parametrize("text", [
    "MTP throughput: 120, no MTP throughput: 100",  # faster with speculation
    "with MTP 70 tok/s vs 60 tok/s without",
    "we expected 60 tok/s without and got 45 tok/s with MTP",  # the baseline is an expectation
    "Output token throughput (tok/s): 410.61 [...] Peak output token throughput (tok/s): 113.00",  # no with/without
])
def test_throughput_figures_without_a_loss_are_no_slowdown(text):
    assert "slowdown" not in classify(text).classes


@pytest.mark.parametrize("text, cls", [
    ("the acceptance is only 4% with eagle3", "low-acceptance"),
    ("a 3 % draft acceptance with EAGLE-3 at K=3", "low-acceptance"),
])
def test_acceptance_stated_without_the_word_rate(text, cls):
    assert cls in classify(text).classes


def test_a_borderline_acceptance_without_the_word_rate_is_no_complaint():
    assert classify("30% acceptance with K=3 on eagle3").classes == ()


@pytest.mark.parametrize("text, cls", [
    ("each decode step costs about 2x with MTP on", "slowdown"),
    ("with the draft, speculation loses around 15% end to end", "slowdown"),
    ("the speedup is far smaller than the blog post", "slowdown"),
    ("tok/s is identical with and without EAGLE-3", "slowdown"),
    ("turning off MTP brings back the old throughput", "slowdown"),
    ("above 64 requests it falls behind the baseline", "slowdown"),
    ("disabling the draft cuts ~30 ms/token", "latency"),
    ("a regression that hurts the mean acceptance length", "low-acceptance"),
    ("the acceptance is only ~30% with eagle3", "low-acceptance"),
    ("we see only 25% draft acceptance", "low-acceptance"),
    ("ngram 方法无法正常采纳草稿 token", "low-acceptance"),
    ("with MTP the agent is unable to call tools", "wrong-output"),
    ("failed to parse the tool_call in the streamed chunk", "wrong-output"),
    ("strange outputs once dflash is on", "wrong-output"),
    ("long chats degenerate into loops with MTP", "wrong-output"),
    ("开启MTP后输出乱序错乱", "wrong-output"),
    ("the --enable-mtp flag is a no-op on this path", "ignored-setting"),
    ("draft_tensor_parallel_size is still same as the target", "ignored-setting"),
    ("my num_speculative_tokens gets overridden", "ignored-setting"),
    ("the drafter runs entirely eager", "cuda-graphs"),
    ("the engine crashes during graph capture of the drafter", "cuda-graphs"),
    ("there is no spec decode counter in /metrics", "no-metrics"),
    ("this model is not support eagle3", "unsupported"),
    ("starting the server with eagle3 gives an error", "startup"),
    ("部署时开启MTP报错", "startup"),
    ("the config validation rejects the draft", "crash"),
])
def test_wording_of_the_grown_complaint_set(text, cls):
    assert cls in classify(text).classes


@pytest.mark.parametrize("text, cls", [
    ("no failure parsing the tool_call", "crash"),
    ("failed to parse the tool_call", "crash"),  # a parse failure of the output is wrong output, not a crash
    ("greedy load crashes under sampling", "startup"),  # 'load' here is traffic, not loading
    ("the prompts are repetitive text", "wrong-output"),
    ("Eagle3 has no acceleration effect", "ignored-setting"),  # a slowdown, not a setting left unread
    ("the acceptance is not only 30%, it is 70%", "low-acceptance"),
    ("speed is not unchanged, it doubled", "slowdown"),
    ("it never fails to call tools", "wrong-output"),
    ("speculation does not lose 20%", "slowdown"),
    ("the flag is not a no-op", "ignored-setting"),
    ("no degeneration, outputs are coherent", "wrong-output"),
    ("the metrics are there, no missing spec decode counters", "no-metrics"),
])
def test_new_wording_negated_or_out_of_context_is_not_that_class(text, cls):
    assert cls not in classify(text).classes
