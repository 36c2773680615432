"""The adversarial-input detector's parts: views, network, signals.

Serving code imports ``engine.stages.detect`` (the stage); this package holds what it is
made of. ``views`` turns a raw field into the network's inputs (one definition for
training and serving); ``network`` is the learned model and its artifact; ``signals``,
``obfuscation`` and ``tokens`` name what a flagged text holds (they explain a flag, and
the obfuscation measures are network inputs, but no pattern decides). Training and its
data live in ``engine.offline.detector_corpus``.
"""
