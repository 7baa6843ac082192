"""Spec-decode metrics lines cut at either end, and headers that lost their time stamp, are read as far as they go."""

from __future__ import annotations

from spec_doctor.parsers.logparse import parse_text
from spec_doctor.parsers.logparse.lines import parse_envelope, parse_spec


def test_cut_tail_keeps_what_is_complete():
    sp = parse_spec("SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 1234.50 tokens/s, "
                    "Drafted thr")
    assert sp is not None and sp.fmt == "v1c" and sp.mean_len == 2.5 and not sp.counts
    v0 = parse_spec("Speculative metrics: Draft acceptance rate: 0.672, System efficiency: 0.571, Number of "
                    "speculative tokens: 5, Number of accepted tokens: 16832, Number of dra")
    assert v0 is not None and v0.k == 5 and v0.efficiency == 0.571 and not v0.counts
    assert parse_spec("SpecDecoding metrics: Mean acc") is None


def test_cut_head_is_a_piece_of_a_v1_line():
    lf = parse_text("Per-position acceptance rate: 0.844, 0.599, 0.385, 0.271\nAvg Draft acceptance rate: 52.5%\n")
    (s,) = lf.spec_streams
    assert s.k == 4 and s.per_position == (0.844, 0.599, 0.385, 0.271) and s.acceptance_rate == 0.525
    assert s.spec_formats == {"v1"} and s.accepted == 0  # no counts: never summed as counts


def test_header_without_time_stamp():
    rec = parse_envelope("WARNING [speculative.py:940] Enabling num_speculative_tokens > 1 will run")
    assert rec.level == "WARNING" and rec.file == "speculative.py" and rec.ts is None


OFFLINE = """\
num_drafts: 43221
num_draft_tokens: 259326
num_accepted_tokens: 63669
mean acceptance length: 2.47
acceptance at token 0: 0.58
acceptance at token 1: 0.34
acceptance at token 2: 0.22

Number of draft proposals: 8,914
Number of draft tokens generated: 53,484
Number of accepted tokens: 12,814
Mean acceptance length: 2.44
Acceptance rate at token 0: 0.57
Acceptance rate at token 1: 0.3
"""


def test_offline_example_summaries():
    lf = parse_text(OFFLINE)
    (s,) = lf.spec_streams
    assert s.n_spec == 2 and s.accepted == 63669 + 12814 and s.drafted == 259326 + 53484 and s.k == 3
    # The second summary's curve was cut after two positions: only the first one's curve counts.
    assert s.per_position == (0.58, 0.34, 0.22)


def test_metrics_lines_pasted_without_their_header(tmp_path):
    from spec_doctor.parsers.logparse import parse_log

    p = tmp_path / "x.log"
    p.write_text("SpecDecoding metrics: Draft acceptance rate: 100.0%, Accepted: 66 tokens, Drafted: 66 tokens\n")
    (s,) = parse_log(str(p)).spec_streams  # selected by the reader, not only by parse_text
    assert s.accepted == 66 and s.drafted == 66 and s.spec_formats == {"v1a"}


def _warning_signatures():
    from spec_doctor.parsers.logparse.signatures import load_signatures

    for sig in load_signatures():
        rec = parse_envelope(sig.example)
        m = sig.pattern.search(rec.msg)
        if rec.level == "WARNING" and m is not None and " " in m.group(0).strip():
            yield sig, rec.msg, m


def test_a_warning_wrapped_over_two_lines_is_one_message():
    checked = 0
    for sig, msg, m in _warning_signatures():
        text = m.group(0)
        cut = m.start() + text.rfind(" ", 0, len(text) // 2 + 1)  # break at a space inside the matched text
        if cut <= m.start():
            continue
        head, tail = msg[:cut], msg[cut + 1:]
        if sig.pattern.search(head) or sig.pattern.search(tail):
            continue
        lf = parse_text(f"WARNING 11-20 14:03:21 [x.py:1] {head}\n{tail}\n")
        assert sig.id in lf.signatures, (sig.id, head, tail)
        assert lf.signatures[sig.id].count == 1 and lf.signatures[sig.id].lines == [1]
        checked += 1
    assert checked >= 3


def test_wrapped_lines_are_joined_only_after_a_warning_and_never_counted_twice():
    from spec_doctor.parsers.logparse.signatures import load_signatures

    sig, msg, m = next(_warning_signatures())
    cut = m.start() + m.group(0).rfind(" ", 0, len(m.group(0)) // 2 + 1)
    head, tail = msg[:cut], msg[cut + 1:]
    # After an INFO line, or with a line in between, the halves are two texts.
    assert sig.id not in parse_text(f"INFO 11-20 14:03:21 [x.py:1] {head}\n{tail}\n").signatures
    assert sig.id not in parse_text(f"WARNING 11-20 14:03:21 [x.py:1] {head}\nINFO other\n{tail}\n").signatures
    # A whole warning followed by a header-less line: matched once, on its own line.
    lf = parse_text(f"WARNING 11-20 14:03:21 [x.py:1] {msg}\nsome continuation\n")
    assert lf.signatures[sig.id].count == 1
    assert any(s.id == sig.id for s in load_signatures())
