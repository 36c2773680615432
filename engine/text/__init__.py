"""Untrusted text: cleaning (textproc) and the byte-level BPE tokenizer."""
