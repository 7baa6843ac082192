"""Benchmark invocations read from real pastes (fixtures/bench/README.md), and the pitfalls each shows
(knowledge/data/benchmarks.toml)."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from spec_doctor.knowledge.benchmarks import named_pitfalls, tool
from spec_doctor.parsers.bench import comparable_command, differences, flaws, runs_in_text

BENCH = Path(__file__).resolve().parents[2] / "fixtures" / "bench"


def _runs(name: str):
    return runs_in_text((BENCH / name).read_text(), name)


def _flaws(runs, version=None, results=()):
    return {f.pitfall: f for f in flaws(runs, list(results), version, 50)}


def test_multiline_command_is_one_run_with_every_flag():
    (run,) = _runs("vllm-33497-random.txt")
    assert run.tool == "vllm bench serve"
    assert run.get("dataset_name") == "random" and run.get("num_prompts") == 128
    assert run.get("max_concurrency") == 8 and run.get("ignore_eos") is True
    assert run.get("model") == "deepseek-ai/DeepSeek-V3.2"


def test_random_dataset_ignore_eos_and_default_sampling_of_0_15():
    found = _flaws(_runs("vllm-33497-random.txt"), Version("0.15.0"))
    assert {"random-prompts", "ignore-eos", "sampling"} <= set(found)
    assert "few-prompts" not in found  # 128 prompts
    assert found["sampling"].share == 1.0


def test_bench_serve_before_0_15_sampled_greedily():
    assert "sampling" not in _flaws(_runs("vllm-33497-random.txt"), Version("0.14.1"))
    # release unknown: the default holds for part of the releases only
    assert _flaws(_runs("vllm-33497-random.txt"), None)["sampling"].share == 0.5


def test_natural_dataset_at_temperature_zero_has_no_flaw():
    (run,) = _runs("vllm-36029-speed-bench.txt")
    assert run.get("dataset_name") == "speed_bench" and run.get("temperature") == 0
    assert _flaws([run], Version("0.18.0")) == {}


def test_namespace_dump_is_read_and_a_cut_off_dump_says_nothing_of_what_it_lost():
    (run,) = _runs("dflash-133-namespace.txt")
    assert run.tool == "vllm bench serve"
    assert run.get("dataset_name") == "custom" and run.get("num_prompts") == 16
    assert not run.knows("temperature")  # the paste ends before the sampling options
    found = _flaws([run], Version("0.15.0"))
    assert set(found) == {"few-prompts"}


def test_default_dataset_of_bench_serve_is_random_but_not_of_the_old_script():
    (cli,) = runs_in_text("vllm bench serve --model m --num-prompts 200 --temperature 0", "--cmd")
    assert "random-prompts" in _flaws([cli])
    (script,) = runs_in_text("python benchmarks/benchmark_serving.py --model m --num-prompts 200", "--cmd")
    assert "random-prompts" not in _flaws([script])


def test_tool_named_in_prose_says_nothing_of_its_prompts():
    runs = runs_in_text("I measured with vllm bench serve and the acceptance is low", "--symptom")
    assert runs and _flaws(runs) == {}


def test_offline_benchmarks_sample_hot_on_random_tokens():
    (lat,) = runs_in_text("vllm bench latency --model m --batch-size 1 --num-iters-warmup 0", "--cmd")
    found = _flaws([lat], Version("0.15.0"))
    assert {"random-prompts", "sampling", "ignore-eos", "no-warmup"} <= set(found)
    (thr,) = runs_in_text("vllm bench throughput --model m --dataset-name sharegpt "
                          "--dataset-path ShareGPT_V3_unfiltered_cleaned_split.json", "--cmd")
    assert "random-prompts" not in _flaws([thr]) and "sampling" in _flaws([thr])


def test_two_runs_of_different_workloads():
    a, b = runs_in_text("vllm bench serve --model m --dataset-name sharegpt --num-prompts 200 --max-concurrency 1\n"
                        "vllm bench serve --model m --dataset-name sharegpt --num-prompts 200 --max-concurrency 16",
                        "--cmd")
    assert differences(a, b) == [("max_concurrency", 1, 16)]
    f = _flaws([a, b])["unequal-runs"]
    assert "max-concurrency: 1 vs 16" in f.basis[-1][1]
    same = runs_in_text("vllm bench serve --model m --num-prompts 200\nvllm bench serve --model m", "--cmd")
    assert differences(*same, {"num_prompts": 1000}) == [("num_prompts", 200, 1000)]


def test_result_block_with_few_requests():
    found = _flaws([], results=[{"source": "log:1-9", "successful_requests": 8.0}])
    assert "few-prompts" in found


def test_comparable_command_keeps_the_server_and_load_and_fixes_the_workload():
    (run,) = _runs("vllm-33497-random.txt")
    cmd = comparable_command(run, 200)
    assert cmd.startswith("vllm bench serve --model deepseek-ai/DeepSeek-V3.2 --base-url http://127.0.0.1:8000")
    assert "--max-concurrency 8" in cmd and "--dataset-name sharegpt" in cmd and "--temperature 0" in cmd
    assert "--ignore-eos" not in cmd and "random" not in cmd and "--sharegpt-output-len 1000" in cmd


def test_tool_defaults_by_release_from_vllm_source():
    assert tool("vllm bench serve").dataset_default == "random"
    assert tool("benchmarks/benchmark_serving.py").dataset_default == "sharegpt"
    assert [s.value for s in tool("vllm bench serve").sampling(Version("0.14.1"))] == [0.0]
    assert [s.value for s in tool("vllm bench serve").sampling(Version("0.16.0"))] == ["server"]


def test_complaint_words_name_a_reading():
    names = {p.id for p, _ in named_pitfalls("Peak output token throughput is only 113 tok/s with MTP")}
    assert "peak" in names
    assert {p.id for p, _ in named_pitfalls("ITL went up from 20ms to 35ms with EAGLE")} == {"itl-per-chunk"}
    assert "both-arms-slow" in {p.id for p, _ in named_pitfalls(
        "the throughput is poor both with dflash and when not using it")}
    assert "chunks-as-tokens" in {p.id for p, _ in named_pitfalls("llmperf says tokens/s dropped")}
    assert named_pitfalls("the server crashes at startup with MTP", {"crash"}) == []
    # words that count only with their complaint: ITL with a latency complaint
    assert named_pitfalls("ITL is 30 ms", {"crash"}) == []


def test_two_result_blocks_of_different_workloads():
    a = {"source": "log:1-9", "successful_requests": 128.0, "maximum_request_concurrency": 8.0,
         "total_input_tokens": 128000.0}
    b = {"source": "log:12-20", "successful_requests": 128.0, "maximum_request_concurrency": 8.0,
         "total_input_tokens": 131072.0}
    f = _flaws([], results=[a, b])["unequal-runs"]
    assert "total input tokens: 128000 vs 131072" in f.basis[-1][1]
    assert "unequal-runs" not in _flaws([], results=[a, dict(a, source="log:12-20")])


def test_itl_with_tpot_or_throughput_named_is_no_chunk_reading():
    assert named_pitfalls("ITL and TPOT both got worse with MTP", {"latency"}) == []
    assert named_pitfalls("ITL got worse and output throughput dropped with MTP", {"latency", "slowdown"}) == []


def test_acceptance_rate_lower_at_a_larger_k_is_its_definition():
    names = {p.id for p, _ in named_pitfalls(
        "the acceptance rate dropped from 70% to 45% after I increased num_speculative_tokens from 2 to 5",
        {"low-acceptance"})}
    assert names == {"rate-falls-with-k"}
    # a speed complaint with the larger K is k-too-large's, not a reading of the rate
    assert named_pitfalls("with more speculative tokens the acceptance rate drops and throughput is lower",
                          {"low-acceptance", "slowdown"}) == []


def test_sharegpt_run_without_temperature_samples_by_the_release():
    (run,) = _runs("sglang-13553-sharegpt.txt")
    found = _flaws([run])
    assert "random-prompts" not in found and "few-prompts" not in found
    assert found["sampling"].share == 0.5  # greedy before 0.15, the server's default from 0.15
    assert _flaws([run], Version("0.11.0")) == {}


def test_a_long_log_keeps_the_benchmark_lines_it_holds():
    from spec_doctor.parsers.logparse.summary import QUOTED_MAX_BYTES, parse_text

    filler = "INFO 02-01 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, " \
             "Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs\n"
    dump = (BENCH / "dflash-133-namespace.txt").read_text().splitlines()[0]
    text = filler * (QUOTED_MAX_BYTES // len(filler) + 10) + dump + "\n" + filler * 5
    lf = parse_text(text, "long.log")
    assert not lf.quoted
    ((line, kept),) = lf.bench_lines
    assert kept.startswith("Namespace(") and line == QUOTED_MAX_BYTES // len(filler) + 11
    (run,) = runs_in_text(kept, f"long.log:{line}")
    assert run.get("num_prompts") == 16
