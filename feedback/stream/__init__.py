"""The outcome join worker: faust app, batch processing, join rules and state, metrics."""
