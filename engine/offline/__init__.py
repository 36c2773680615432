"""Never runs in a worker: training, backtests, the simulator, detector corpus, rule tools, quality metrics."""
