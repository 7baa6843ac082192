"""spec-doctor: diagnose slow or broken speculative decoding on vLLM.

Kept import-light on purpose: nothing heavy (torch, transformers, vLLM) is imported here.
"""

__version__ = "0.1.0"
