"""Streaming vLLM log parser: every format from 0.4 to 0.33, noise-tolerant, constant memory.

    from spec_doctor.parsers.logparse import parse_log
    lf = parse_log("vllm.log.gz")
    for stream in lf.spec_streams:
        print(stream.label, stream.mean_acceptance_length, stream.per_position)
"""

from spec_doctor.parsers.logparse.lines import (
           Record,
           SpecLine,
           StatsLine,
           parse_envelope,
           parse_spec,
           parse_stats,
           split_records,
)
from spec_doctor.parsers.logparse.reader import LogReadError
from spec_doctor.parsers.logparse.signatures import Signature, load_signatures
from spec_doctor.parsers.logparse.summary import LogFile, SignatureHit, Stream, Window, parse_log, parse_text

__all__ = ["LogFile", "LogReadError", "Record", "Signature", "SignatureHit", "SpecLine", "StatsLine", "Stream",
           "Window", "load_signatures", "parse_envelope", "parse_log", "parse_spec", "parse_stats", "parse_text",
           "split_records"]
