"""Training the decision model: fit, training sets, evaluation and calibration."""
