"""The adversarial-input detector's parts: signals, features, model, data, training.

Serving code imports ``engine.stages.detect`` (the stage); this package holds what it is made
of and how it is trained. ``tokens``, ``signals``, ``obfuscation`` and ``features``
define the model's inputs once, for training and serving alike; ``model`` holds the
weights and their artifact; ``corpus`` (memos, names, templated attacks), ``business``
(benign e-mail and invoice prose), ``tasks`` (tasks for an AI reader) and ``data``
build the training and held-out sets; ``train`` fits, thresholds and evaluates.
"""
