"""Event-time features: one implementation (``compute``), two backends.

``MemoryFeatureStore`` serves training and backtests; ``RedisFeatureStore`` serves the
stream. Both satisfy ``FeatureStore`` and pass the same contract test
(``tests/integration/test_feature_store_contract.py``). Feature names and definitions:
``engine.features.spec``.
"""

from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import CONTEXT_FEATURES
from engine.features.store import ContextUnavailable, FeatureStore, LabelArrival

__all__ = ["CONTEXT_FEATURES", "ContextSnapshot", "ContextUnavailable", "FeatureStore", "LabelArrival",
           "MemoryFeatureStore"]
