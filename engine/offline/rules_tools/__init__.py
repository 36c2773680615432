"""Rule tooling: rule test cases, rule backtests and replays over history."""
