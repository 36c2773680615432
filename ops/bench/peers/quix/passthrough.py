"""The quix-streams peer of ``ops/bench/peers.py``: an exactly-once pass-through that
decides nothing. Runs in its own virtual environment (``ops/bench/peers/quix/.venv``,
made by the bench on first use): quixstreams pins pydantic, pydantic-settings and
confluent-kafka below the versions Tollgate uses.

    python passthrough.py BOOTSTRAP INPUT OUTPUT GROUP default|COMMIT_INTERVAL_S

``default`` keeps quix's own settings (commit_interval 5 s); a number is the tuned-down
commit interval, with the consumer's fetch wait, the producer's linger and its retry
backoff at the relay's (5 ms, 0 ms, 1 ms). Prints ``quix ready`` before it starts consuming.
"""

from __future__ import annotations

import sys
import tempfile

from quixstreams import Application


def main(argv: list[str]) -> None:
    bootstrap, source, sink, group, commit = argv
    tuned = commit != "default"
    extra = {"consumer_extra_config": {"fetch.wait.max.ms": 5},
             "producer_extra_config": {"linger.ms": 0, "retry.backoff.ms": 1},
             "commit_interval": float(commit)} if tuned else {}
    app = Application(broker_address=bootstrap, consumer_group=group, processing_guarantee="exactly-once",
                      auto_offset_reset="earliest", auto_create_topics=False, use_changelog_topics=False,
                      state_dir=tempfile.mkdtemp(prefix="quix-state-"), **extra)  # stateless: an empty dir
    source_topic = app.topic(source, key_deserializer="bytes", value_deserializer="bytes")
    sink_topic = app.topic(sink, key_serializer="bytes", value_serializer="bytes")
    app.dataframe(source_topic).to_topic(sink_topic)
    print("quix ready", flush=True)
    app.run()


if __name__ == "__main__":
    main(sys.argv[1:])
