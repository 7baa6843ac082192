"""parsers/settings.py: the deployment settings a complaint names in prose, on real complaint texts from public
threads (each with its URL) and on negations."""

from __future__ import annotations

from spec_doctor.parsers.settings import named_settings


def _args(text: str) -> dict[str, object]:
    return named_settings(text).args()


def test_data_parallel_and_mtp_from_a_pr_description() -> None:
    # https://github.com/vllm-project/vllm/pull/44954
    named = named_settings("This PR fixes a vLLM hang during MTP speculative decoding with DP + EP near "
                           "`max_model_len`.")
    assert named.args() == {"data_parallel_size": 2}
    assert named.phrase_of("data_parallel_size") == "DP"
    assert named.method == "mtp"


def test_data_parallelism_spelled_out() -> None:
    # https://github.com/vllm-project/vllm/issues/44185
    assert _args("[Bug]: vLLM hangs during speculative decoding with MoE draft model near max_model_len under "
                 "Data Parallelism (DP)") == {"data_parallel_size": 2}


def test_pipeline_parallel_greater_than_one() -> None:
    # https://github.com/vllm-project/vllm/issues/49355
    named = named_settings("[Bug]: MTP speculative decoding is broken with pipeline parallelism (PP>1) — three "
                           "distinct failures")
    assert named.args() == {"pipeline_parallel_size": 2} and named.method == "mtp"


def test_tp_fp8_kv_and_prefix_caching_from_an_environment_list() -> None:
    # https://github.com/vllm-project/vllm/issues/53670
    named = named_settings("Dual RTX 5090 TP=2, FP8 weights + FP8 KV, prefix caching on")
    assert named.args() == {"tensor_parallel_size": 2, "kv_cache_dtype": "fp8", "quantization": "named",
                            "enable_prefix_caching": True}
    assert named.phrase_of("kv_cache_dtype") == "FP8 KV"


def test_pd_disaggregation_with_nixl() -> None:
    # https://github.com/vllm-project/vllm/issues/54926
    named = named_settings("[Bug]: Gemma 4 MTP + NIXL PD disaggregation — draft model KV not transferred, MTP "
                           "ineffective")
    assert named.args()["kv_transfer_config"] == "named"
    assert "gemma 4" in named.models


def test_rocm_and_an_mi_gpu() -> None:
    # https://github.com/vllm-project/vllm/issues/47548
    assert _args("[Bug]: Combination of sleep mode and speculative decoding cause crash (ROCm / MI250)") == \
        {"device": "rocm"}


def test_stated_k_is_the_symptom_parsers() -> None:
    # https://github.com/vllm-project/vllm/issues/40624 (a comment's config)
    named = named_settings('running `--speculative-config \'{"model": "/root/eagle3", "num_speculative_tokens": 3, '
                           '"method": "eagle3"}\'`')
    assert named.k == 3 and named.k_phrase is not None and "3" in named.k_phrase


def test_negated_settings_are_not_named() -> None:
    # https://github.com/vllm-project/vllm-metal/pull/762 ("Scope")
    named = named_settings("Greedy sampling, synchronous scheduling; no tensor parallelism, LoRA, or multimodal "
                           "targets.")
    assert "tensor_parallel_size" not in named.args() and "enable_lora" not in named.args()
    assert "tensor parallelism" in named.negated


def test_negation_of_prefix_caching_and_tp() -> None:
    named = named_settings("without prefix caching it works; not using TP")
    assert named.args() == {} and set(named.negated) >= {"prefix caching", "TP"}


def test_the_disabling_flag_is_not_the_enabling_one() -> None:
    assert _args("served with --no-enable-prefix-caching") == {"enable_prefix_caching": False}
    assert _args("served with --enable-prefix-caching") == {"enable_prefix_caching": True}


def test_two_values_of_one_argument_name_neither() -> None:
    assert "tensor_parallel_size" not in _args("works with tp=1 but crashes with tp=2")


def test_words_that_only_contain_a_short_name_are_not_it() -> None:
    assert _args("TPOT got worse and the dpo model is fine") == {}


def test_speculation_named_without_a_method() -> None:
    # https://github.com/vllm-project/vllm/pull/4808
    named = named_settings("[Speculative decoding] Enable TP>1 speculative decoding")
    assert named.args() == {"tensor_parallel_size": 2}
    assert named.method is None and named.speculation == "Speculative decoding"
    assert named_settings("it is slow, and not with speculative decoding").speculation is None


def test_a_no_flag_negates_what_it_names_and_nothing_after_it() -> None:
    # a negation case written for this test: vLLM's `--no-` form of a boolean flag, then other settings
    named = named_settings("Started with `--no-enable-chunked-prefill`, speculative decoding with tensor parallel 2 "
                           "crashes")
    assert named.args() == {"tensor_parallel_size": 2}
    assert any("chunked" in n for n in named.negated)
    assert named.speculation == "speculative decoding"
