"""The Kafka worker: the loop that drives the stages, exactly-once commit, in-flight batches, warm-up, hot swap."""
