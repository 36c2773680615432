"""The detector's training data: generated corpus and tasks, splits, and training."""
