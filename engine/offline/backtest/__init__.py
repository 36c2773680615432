"""The handbook-protocol backtest: replayed windows, their cache, the model families compared."""
