"""The worker's copies of customer states (engine.features.customer_cache): bounded by
events, least recently used out first, handed out as copies, never kept when Redis
would order the rows otherwise."""

from engine.features.compute import CustomerState
from engine.features.customer_cache import CustomerCache


def _state(*times: int) -> CustomerState:
    s = CustomerState()
    for i, t in enumerate(times):
        s.add(f"e{i}", t, 1.0 + i, "t1", "BE")
    s.devices["d1"] = times[0]
    return s


def _token(cache: CustomerCache, customer: str) -> str:
    held = cache.get(customer)
    return "" if held is None else held[0]


def test_a_copy_can_be_changed_without_changing_the_held_state():
    cache = CustomerCache(max_events=100)
    cache.put("c1", "tok1", _state(1, 2))
    token, count, taken = cache.get("c1")
    taken.add("e9", 3, 9.0, "t2", "FR")
    taken.devices["d2"] = 3
    assert (token, count) == ("tok1", 2)
    _, count, again = cache.get("c1")
    assert count == 2 and again.times == [1, 2] and again.devices == {"d1": 1}


def test_the_bound_counts_events_and_drops_the_least_recently_used():
    cache = CustomerCache(max_events=5)
    cache.put("c1", "a", _state(1, 2))
    cache.put("c2", "b", _state(1, 2))
    cache.get("c1")  # c1 used last: c2 goes first
    cache.put("c3", "c", _state(1, 2))
    assert [_token(cache, c) for c in ("c1", "c2", "c3")] == ["a", "", "c"]
    cache.put("c4", "d", _state(*range(6)))  # larger than the whole bound: not kept
    assert _token(cache, "c4") == "" and len(cache) == 2


def test_events_at_the_same_millisecond_are_read_back_not_kept():
    cache = CustomerCache(max_events=100)
    cache.put("c1", "a", _state(1, 2))
    cache.put("c1", "b", _state(1, 2, 2))  # replaces, and is not kept
    assert cache.get("c1") is None


def test_putting_again_replaces_and_zero_keeps_nothing():
    cache = CustomerCache(max_events=100)
    cache.put("c1", "a", _state(1, 2))
    cache.put("c1", "b", _state(1, 2, 3))
    assert cache.get("c1")[:2] == ("b", 3)
    cache.drop("c1")
    assert cache.get("c1") is None and len(cache) == 0
    off = CustomerCache(max_events=0)
    off.put("c1", "a", _state(1))
    assert len(off) == 0
