"""``EventConsumer.poll`` branches on librdkafka's error codes: partition EOF is skipped,
a retriable error is logged, a fatal one ends the worker (engine/stages/consume.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from engine.settings import Settings
from engine.stages.consume import EventConsumer, FatalKafkaError


class _ErrorMessage:
    def __init__(self, error: KafkaError):
        self._error = error

    def error(self) -> KafkaError:
        return self._error


class _Consumer:
    """Hands out the messages it was given, once."""

    def __init__(self, messages: list[_ErrorMessage]):
        self.messages = messages

    def consume(self, num_messages: int, timeout: float) -> list[_ErrorMessage]:
        out, self.messages = self.messages, []
        return out


def _consumer_with(*errors: KafkaError) -> EventConsumer:
    consumer = EventConsumer(Settings())  # no broker is contacted before subscribe
    consumer._consumer = _Consumer([_ErrorMessage(e) for e in errors])
    return consumer


def test_partition_eof_and_a_retriable_error_return_no_records():
    consumer = _consumer_with(KafkaError(KafkaError._PARTITION_EOF), KafkaError(KafkaError._TRANSPORT, retriable=True))
    assert consumer.poll(10, 0.0) == []


@pytest.mark.parametrize("error", [
    # how librdkafka hands a consumer its fatal error: code _FATAL, fatal() False
    KafkaError(KafkaError._FATAL, "Static consumer fenced by other consumer with same group.instance.id"),
    KafkaError(KafkaError.FENCED_INSTANCE_ID, fatal=True),
], ids=["fatal-event", "fatal-flag"])
def test_a_fatal_consumer_error_ends_the_worker(error):
    assert error.code() == KafkaError._FATAL or error.fatal()
    with pytest.raises(FatalKafkaError, match="fenced|FENCED"):
        _consumer_with(error).poll(10, 0.0)
