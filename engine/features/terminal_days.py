"""A busy terminal's activity and labels in Redis: hour buckets plus a sum per day, so
that a batch reads a few stretches of hours and whole days as one number each, not 744
hours.

A terminal's windows (``TERMINAL_WINDOWS``: 1, 7 and 30 days) are whole days long, so the
window edges of an event at hour ``h`` fall inside at most four days: ``h``'s own day and
the days 1, 7 and 30 before it (none when ``h`` is a day's last hour). Every other day in
reach counts whole or not at all, and its sum stands for its 24 hours. The read script
reads the hours of the four days and sums them between the edges, so a busy terminal
costs Redis about ``24 * 4 + 27`` field lookups per batch and the client about a dozen
numbers, not ``TERMINAL_KEEP_BUCKETS`` of each (``python ops/bench/busy_terminals.py``).

The layout of ``{p}:tact:{terminal}`` (one hash, so the day sums cannot be evicted or
expire apart from the hours they sum):

* ``"<hour>"``: events in that hour bucket (hours since the epoch), as before;
* ``"d:<day>"``: the sum of that day's hour fields (``day = hour // 24``), kept by every
  write, including when old hours are deleted;
* ``"n"``: the newest hour written; ``"o"``: no hour field is older than this;
* ``"v"``: ``2``: the hash carries the fields above. A hash without it holds hours only:
  a quiet terminal's (day sums would double it, and reading it whole is cheap), or one
  an older release wrote. The read takes every hour of it and the client names the hours
  to delete; the write that takes it past ``SMALL_FIELDS`` adds the day sums;
* ``"h"``: a string of zeros longer than ``hash-max-listpack-value`` (64 bytes by default),
  so that Redis keeps the hash as a hashtable (below). Every write in the day layout adds
  it where it is missing (a hash an older release moved to the day layout).

``{p}:tlab:{terminal}`` has the same layout for the labels (by arrival hour): ``"k:<hour>"``
and ``"b:<hour>"`` (known, bad), their sums ``"dk:<day>"`` and ``"db:<day>"``, ``"o"`` and
``"v"``. The label windows end at the hour before the event's, so their edges are one
hour earlier than activity's.

A hash in the day layout is read by its plan only while Redis keeps it as a hashtable.
Up to ``hash-max-listpack-entries`` fields (512 by default) of short values Redis keeps a
hash as a listpack, where every field lookup scans the hash, so the read script takes
such a hash whole, in one pass, and the client gets every hour (the day sums and
metadata left out). A whole read of a busy shop's few hundred fields costs Redis and the
client more than its plan on a hashtable, so the ``"h"`` field turns every day-layout
hash into a hashtable: a listpack is then only a hash an older release left (until its
next write) or a server configured with longer listpack values than ``"h"``. What it
saves and costs in memory: ``python ops/bench/enrich_ab.py`` and docs/performance.md,
"Busy shops' hashes kept as hashtables".

The in-memory store keeps every hour (``compute.TerminalState``), and ``RedisFeatureStore``
runs ``compute.enrich_batch`` on the state rebuilt here: each stretch of hours that no
edge splits (a whole day, or part of one) becomes one bucket holding its sum, which
leaves every window total of the batch's events as it is over the hours. That keeps one
feature implementation for both backends; the contract tests hold them equal on busy
terminals (tests/integration/test_feature_store_contract.py) and a property test on
random ones (tests/unit/test_terminal_days.py).
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from collections.abc import Collection
from typing import Any

from engine.features.compute import TERMINAL_KEEP_BUCKETS, BucketCounter, TerminalState
from engine.features.spec import BUCKET_MS, DAY_MS, TERMINAL_WINDOWS

HOURS_PER_DAY = DAY_MS // BUCKET_MS
_WINDOWS = tuple(ms // BUCKET_MS for _, ms in TERMINAL_WINDOWS)
assert all(w % HOURS_PER_DAY == 0 for w in _WINDOWS), "day sums need windows of whole days"
#: The most fields a terminal's hash holds (hours within the kept span, their days, the
#: metadata): a plan that would ask for more reads the whole hash instead.
_MOST_FIELDS = TERMINAL_KEEP_BUCKETS + 1 + TERMINAL_KEEP_BUCKETS // HOURS_PER_DAY + 2 + 4

#: A hash with more fields than this (a week of hours; twice that for labels, known and
#: bad) moves to the day layout on its next write. A quiet terminal's hash stays hours
#: only: its day sums would double its size, and reading it whole is cheaper than a plan.
SMALL_FIELDS = 7 * HOURS_PER_DAY

#: The length of ``"h"``'s zeros: longer than ``hash-max-listpack-value`` (64 by default,
#: Debian's too), so that Redis converts a day-layout hash to a hashtable.
HASHTABLE_PAD_BYTES = 256

#: What the read script is asked for one of a terminal's hashes: ``[first day, last day,
#: [edges], fields]``, an edge ``p`` lying between hours ``p - 1`` and ``p``, and how many
#: fields of one kind that reads (a hash with no more fields is read whole, without
#: working out the plan); ``None``: all of it.
ReadPlan = list[Any] | None


def read_plans(hours: Collection[int]) -> list[ReadPlan]:
    """What a batch whose events fall in ``hours`` (hour buckets) reads of a terminal's
    activity and of its labels: the days from the oldest window start to the newest
    window end, and the edges that fall strictly inside one of them. A day holding an
    edge is read hour by hour and summed between its edges; every other day as its sum.

    The edges: each window's first hour and the hour after its last (activity counts the
    event's own hour, labels only the hours before it), and the floor that
    ``compute.record_event`` prunes at (inside the days read only when a batch spans more
    than a day).

    >>> read_plans([24 * 100 + 5])  # one event at 05:00 of day 100
    [[70, 100, [1686, 2238, 2382, 2406], 123], [70, 100, [1685, 2237, 2381, 2405], 123]]
    >>> read_plans([24 * 100 + 23])[0]  # a day's last hour: activity's windows are whole days
    [71, 100, [], 30]
    """
    if not hours:
        return [None, None]
    return [_plan(hours, [1 - w for w in _WINDOWS] + [1]), _plan(hours, [-w for w in _WINDOWS] + [0])]


def _plan(hours: Collection[int], offsets: list[int]) -> ReadPlan:
    lo_day = (min(hours) + min(offsets)) // HOURS_PER_DAY
    hi_day = (max(hours) + max(offsets) - 1) // HOURS_PER_DAY
    offsets = offsets + [-TERMINAL_KEEP_BUCKETS]
    edges = {p for h in set(hours) for off in offsets
             if (p := h + off) % HOURS_PER_DAY and lo_day <= p // HOURS_PER_DAY <= hi_day}
    split_days = len({p // HOURS_PER_DAY for p in edges})
    fields = HOURS_PER_DAY * split_days + (hi_day - lo_day + 1 - split_days)
    if fields >= _MOST_FIELDS:
        return None  # a batch spanning weeks: the whole hash is fewer fields
    return [lo_day, hi_day, sorted(edges), fields]


def wire_plan(plan: ReadPlan) -> list[Any] | None:
    """``plan`` as the read script takes it: followed by the whole days, the hours of the
    split days (24 each, in order) and the stretches between their edges (``[first hour,
    hours]``), every number already a string. Lua formats numbers slowly: building a busy
    terminal's ~120 field names in the script cost more than Redis looking them up
    (ad hoc probes; the effect on enrich: ``python ops/bench/enrich_ab.py --before <tree>``,
    docs/performance.md, "A month of history in the benchmarks"). The script builds each
    kind's names once per batch from these and shares them among the terminals of the plan.

    >>> w = wire_plan([70, 72, [1690], 27])  # days 70-72, an edge at 10:00 of day 70
    >>> w[4], len(w[5]), w[5][0], w[6]
    (['71', '72'], 24, '1680', [['1680', 10], ['1690', 14]])
    """
    if plan is None:
        return None
    lo, hi, edges, _ = plan
    split = sorted({p // HOURS_PER_DAY for p in edges})
    hours: list[str] = []
    stretches: list[list[Any]] = []
    for d in split:
        start = d * HOURS_PER_DAY
        bounds = [start, *(p for p in edges if p // HOURS_PER_DAY == d), start + HOURS_PER_DAY]
        stretches += [[str(a), b - a] for a, b in zip(bounds, bounds[1:])]
        hours += [str(h) for h in range(start, start + HOURS_PER_DAY)]
    whole = [str(d) for d in range(lo, hi + 1) if d not in split]
    return [*plan, whole, hours, stretches]


def _summed(part: dict[str, list[int]]) -> BucketCounter:
    # the stretches at their first hour, each whole day at its first hour
    stretches, days = part["s"], part["d"]
    items = list(zip(stretches[0::2], stretches[1::2]))
    items += [(day * HOURS_PER_DAY, total) for day, total in zip(days[0::2], days[1::2])]
    return BucketCounter.from_items(items)


@dataclasses.dataclass(slots=True)
class LoadedTerminal:
    """A terminal's state as a batch read it, and what that batch's write tells Redis.

    A hash read whole (a quiet terminal's, of hours only): the client knows every hour,
    and names those to delete, which the script heeds while the hash holds hours only. A
    hash in the day layout is kept by the script itself."""

    state: TerminalState
    #: the hours read (sorted), when the activity hash was read whole; None when read as day sums
    activity_read: list[int] | None
    #: the arrival hours of known and of bad labels read (sorted), when the label hash was read whole
    labels_read: tuple[list[int], list[int]] | None
    #: "n" of a hash read as day sums: the newest hour written
    newest_written: int | None

    def floor(self) -> int:
        """Buckets older than this are deleted: the kept span before the newest activity
        (written before, or by this batch), or before the newest label if there is none."""
        buckets = self.state.activity.buckets
        if buckets:
            newest = buckets[-1] if self.newest_written is None else max(buckets[-1], self.newest_written)
        else:
            newest = self.state.known.newest() if self.newest_written is None else self.newest_written
        return newest - TERMINAL_KEEP_BUCKETS

    def write_args(self) -> list[Any]:
        """What the write script needs of this terminal: the hours and the labels read
        whole that are stale (out of the kept span, or pruned by compute), the labels'
        floor, 1 if the labels were read as day sums (the script prunes those), and how
        many hours were read whole (-1: none; the script measures the hash only when that
        and the new hours could pass ``SMALL_FIELDS``)."""
        floor = self.floor()
        stale_activity: list[str] = []
        if self.activity_read is not None:
            # compute prunes only below an event's own hour less the kept span, never at
            # or above this floor, so the hours that went are those below it
            read = self.activity_read
            stale_activity = [str(b) for b in read[:bisect_left(read, floor)]]
        stale_labels: list[str] = []
        if self.labels_read is not None:
            known, bad = self.labels_read
            old = set(known[:bisect_left(known, floor)]) | set(bad[:bisect_left(bad, floor)])
            stale_labels = [f"{kind}:{b}" for b in sorted(old) for kind in ("k", "b")]
        return [stale_activity, stale_labels, floor, 1 if self.labels_read is None else 0,
                -1 if self.activity_read is None else len(self.activity_read)]


def terminal_state(activity: list[int] | dict[str, Any], labels: list[int] | dict[str, Any]) -> LoadedTerminal:
    """A terminal's state from the read script's two replies.

    Activity: a flat ``[hour, count, ...]`` list (every hour), or ``{"n": newest, "d":
    [day, sum, ...], "s": [first hour, sum, ...]}`` (the plan's: the days left whole,
    and the stretches between the edges of the others). Labels: a flat ``[hour, count,
    ...]`` list (every hour; a bad label's hour negated), or ``{"k": ..., "b": ...}``,
    each as activity's.
    """
    t = TerminalState()
    activity_read = labels_read = newest = None
    if isinstance(activity, list):
        if activity:
            t.activity = BucketCounter.from_columns(activity[0::2], activity[1::2])
        activity_read = list(t.activity.buckets)  # a copy: compute changes the counter
    else:
        t.activity, newest = _summed(activity), activity["n"]
    if isinstance(labels, dict):
        t.known, t.bad = _summed(labels["k"]), _summed(labels["b"])
    elif labels:
        hours, counts = labels[0::2], labels[1::2]
        if min(hours) > 0:  # no bad label: the common case
            t.known = BucketCounter.from_columns(hours, counts)
        else:
            t.known = BucketCounter.from_items([(h, n) for h, n in zip(hours, counts) if h > 0])
            t.bad = BucketCounter.from_items([(-h, n) for h, n in zip(hours, counts) if h < 0])
        labels_read = (list(t.known.buckets), list(t.bad.buckets))
    else:
        labels_read = ([], [])
    return LoadedTerminal(t, activity_read, labels_read, newest)


# The Lua that the single server's scripts and the cluster's per-slot scripts include.
# Counts are integers and hours about 5e5, well inside the 2^53 that Lua's doubles hold,
# and Lua 5.1 prints such numbers without a decimal point, so 'd:' .. day is exact.
_LUA_COMMON = f"""
local HOURS_PER_DAY, KEEP_HOURS = {HOURS_PER_DAY}, {TERMINAL_KEEP_BUCKETS}
local SMALL_ACTIVITY, SMALL_LABELS = {SMALL_FIELDS}, {2 * SMALL_FIELDS}
local HASHTABLE_PAD = string.rep('0', {HASHTABLE_PAD_BYTES})
""" + """
-- A terminal's hashes (engine.features.terminal_days): activity holds '<hour>' fields
-- with 'd:<day>' sums, labels 'k:<hour>' and 'b:<hour>' with 'dk:<day>' and 'db:<day>'.
local ACTIVITY, LABELS = {{'', 'd:'}}, {{'k:', 'dk:'}, {'b:', 'db:'}}
"""

LUA_READ_TERMINAL = _LUA_COMMON + """
local function hmget_chunked(key, fields)
  if #fields == 0 then return {} end
  if #fields <= 1000 then return redis.call('HMGET', key, unpack(fields)) end
  local got = {}
  for i = 1, #fields, 1000 do  -- unpack has a limit on its arguments
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #part do got[#got + 1] = part[j] end
  end
  return got
end
-- A plan's field names of one kind (wire_plan: the days left whole, the split days'
-- hours), built once per script call and kept on the plan, which its terminals share.
local function names_of(plan, kind)
  plan.names = plan.names or {}
  local names = plan.names[kind[2]]
  if names then return names end
  local days, hours = {}, {}
  for i, d in ipairs(plan[5]) do days[i] = kind[2] .. d end
  if kind[1] == '' then hours = plan[6] else for i, h in ipairs(plan[6]) do hours[i] = kind[1] .. h end end
  names = {days, hours}
  plan.names[kind[2]] = names
  return names
end
-- '"d":[day, sum, ...],"s":[first hour, sum, ...]': the day sums of the days no edge
-- splits, and the sums of the stretches between the edges of the others.
local function summed(key, plan, kind)
  local names, days, d_out, s_out = names_of(plan, kind), plan[5], {}, {}
  local sums = hmget_chunked(key, names[1])
  for i = 1, #days do
    if sums[i] then d_out[#d_out + 1] = days[i]; d_out[#d_out + 1] = sums[i] end
  end
  local counts, at = hmget_chunked(key, names[2]), 1
  for _, stretch in ipairs(plan[7]) do
    local total = 0
    for _ = 1, stretch[2] do
      if counts[at] then total = total + tonumber(counts[at]) end
      at = at + 1
    end
    if total > 0 then s_out[#s_out + 1] = stretch[1]; s_out[#s_out + 1] = total end
  end
  return '"d":[' .. table.concat(d_out, ',') .. '],"s":[' .. table.concat(s_out, ',') .. ']'
end
-- Every hour of a hash, as the client parses it whole: JSON numbers [hour, count, ...];
-- for labels [+hour, count] known and [-hour, count] bad. The fields are joined as
-- HGETALL returns them and edited with string.gsub, in C: a loop over the fields in
-- Lua, and parsing 'k:<hour>' strings in Python, cost more than the HGETALL itself
-- (python ops/bench/enrich_ab.py; docs/performance.md, "Terminal hashes kept as
-- listpacks"). A hash in the day layout (``hours_only`` false) loses its day sums and
-- metadata (v, n, o, h: single letters, the only fields without a colon but hours; all
-- numbers, h's a run of zeros).
local function every_hour_of(key, hours_only, day_sums, labels)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return '[]' end
  local s = ',' .. table.concat(flat, ',')
  if not hours_only then
    s = string.gsub(s, day_sums, '')
    s = string.gsub(s, ',[vnoh],%-?%d+', '')
  end
  if labels then
    s = string.gsub(s, ',k:', ',')
    s = string.gsub(s, ',b:', ',-')
  end
  return '[' .. string.sub(s, 2) .. ']'
end
local function every_hour(key, hours_only) return every_hour_of(key, hours_only, ',d:%d+,%-?%d+', false) end
local function every_label(key, hours_only) return every_hour_of(key, hours_only, ',d[kb]:%d+,%-?%d+', true) end
-- One of a terminal's hashes as its plan asks, or whole: without a plan, when the hash
-- is no larger than what the plan asks for (a quiet terminal), or of hours only.
local function read_terminal_hash(key, plan, kinds)
  local whole = (kinds == ACTIVITY) and every_hour or every_label
  if plan == nil or plan == cjson.null then return whole(key, redis.call('HEXISTS', key, 'v') == 0) end
  local size = redis.call('HLEN', key)
  if size == 0 then return '[]' end
  if size <= #kinds * plan[4] then return whole(key, redis.call('HEXISTS', key, 'v') == 0) end
  local meta = redis.call('HMGET', key, 'v', 'n')
  if not meta[1] then return whole(key, true) end  -- hours only: grown within this batch's reach
  -- A listpack (an older release's day-layout hash before its next write, or a server
  -- whose hash-max-listpack-value exceeds HASHTABLE_PAD) finds a field by scanning it,
  -- so the plan's lookups cost far more than one pass over the whole hash (python
  -- ops/bench/enrich_ab.py; docs/performance.md, "Terminal hashes kept as listpacks").
  local encoding = redis.call('OBJECT', 'ENCODING', key)
  if encoding == 'listpack' or encoding == 'ziplist' then return whole(key, false) end
  if kinds == ACTIVITY then return '{"n":' .. meta[2] .. ',' .. summed(key, plan, kinds[1]) .. '}' end
  return '{"k":{' .. summed(key, plan, kinds[1]) .. '},"b":{' .. summed(key, plan, kinds[2]) .. '}}'
end
"""

LUA_WRITE_TERMINAL = _LUA_COMMON + """
local function hour_of(field, prefix)
  if prefix == '' then return tonumber(field) end
  if string.sub(field, 1, #prefix) == prefix then return tonumber(string.sub(field, #prefix + 1)) end
  return nil
end
-- Adds the day sums of a hash of hours only (grown past its small size, or an older
-- release's), marks it with "v" and pads it into a hashtable with "h"; returns the newest
-- and oldest hour found.
local function add_day_sums(key, kinds)
  local flat, sums, newest, oldest = redis.call('HGETALL', key), {}, nil, nil
  for i = 1, #flat, 2 do
    for _, kind in ipairs(kinds) do
      local h = hour_of(flat[i], kind[1])
      if h then
        local f = kind[2] .. math.floor(h / HOURS_PER_DAY)
        sums[f] = (sums[f] or 0) + tonumber(flat[i + 1])
        if newest == nil or h > newest then newest = h end
        if oldest == nil or h < oldest then oldest = h end
      end
    end
  end
  for f, total in pairs(sums) do redis.call('HSET', key, f, total) end
  redis.call('HSET', key, 'v', 2, 'h', HASHTABLE_PAD)
  return newest, oldest
end
-- Deletes every field of `kind` older than `floor`, with its share of the day sums,
-- looking from the day of `oldest` (no field of the hash is older).
local function drop_before(key, oldest, floor, kind)
  for d = math.floor(oldest / HOURS_PER_DAY), math.floor((floor - 1) / HOURS_PER_DAY) do
    local day_field = kind[2] .. d
    if redis.call('HEXISTS', key, day_field) == 1 then
      local first, last = d * HOURS_PER_DAY, d * HOURS_PER_DAY + HOURS_PER_DAY - 1
      local fields = {}
      for h = first, math.min(last, floor - 1) do fields[#fields + 1] = kind[1] .. h end
      if last < floor then  -- the whole day is older than the floor
        redis.call('HDEL', key, day_field, unpack(fields))
      else
        local left, gone = redis.call('HMGET', key, unpack(fields)), 0
        for i = 1, #fields do if left[i] then gone = gone + tonumber(left[i]) end end
        if gone > 0 then
          redis.call('HDEL', key, unpack(fields))
          if redis.call('HINCRBY', key, day_field, -gone) <= 0 then redis.call('HDEL', key, day_field) end
        end
      end
    end
  end
end
-- Adds counts {hour string -> events} to a terminal's activity hash. Hours only (a
-- quiet terminal's hash, or an older release's): the hours the client names as stale go,
-- and a hash grown past SMALL_ACTIVITY fields gets its day sums. Day layout: the day sums
-- follow, "n" (the newest hour) and "o" (no hour is older) are kept, and the hours older
-- than KEEP_HOURS before the newest are deleted here (the client saw only sums of them).
local function record_activity(key, counts, stale, size_read)
  local meta = redis.call('HMGET', key, 'v', 'n', 'o', 'h')
  if not meta[1] then
    local grew = 0
    for hour, n in pairs(counts) do
      if redis.call('HINCRBY', key, hour, n) == n then grew = grew + 1 end
    end
    if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
    -- measured only when what the client read and the new hours could pass the bound
    -- (another writer's hours in between are counted by a later write)
    if grew > 0 and (size_read < 0 or size_read + grew > SMALL_ACTIVITY)
        and redis.call('HLEN', key) > SMALL_ACTIVITY then
      local newest, oldest = add_day_sums(key, ACTIVITY)
      redis.call('HSET', key, 'n', newest, 'o', oldest)
    end
    return
  end
  if not meta[4] then redis.call('HSET', key, 'h', HASHTABLE_PAD) end  -- an older release's
  local newest, oldest = tonumber(meta[2]), tonumber(meta[3])
  local was_newest, was_oldest = newest, oldest
  for hour, n in pairs(counts) do
    local h = tonumber(hour)
    redis.call('HINCRBY', key, hour, n)
    redis.call('HINCRBY', key, 'd:' .. math.floor(h / HOURS_PER_DAY), n)
    if h > newest then newest = h end
    if h < oldest then oldest = h end
  end
  if oldest < newest - KEEP_HOURS then
    drop_before(key, oldest, newest - KEEP_HOURS, ACTIVITY[1])
    oldest = newest - KEEP_HOURS
  end
  if newest ~= was_newest or oldest ~= was_oldest then redis.call('HSET', key, 'n', newest, 'o', oldest) end
end
-- A label hash past SMALL_LABELS fields moves to the day layout (with "o").
local function grow_labels(key)
  if redis.call('HLEN', key) <= SMALL_LABELS then return end
  local _, oldest = add_day_sums(key, LABELS)
  if oldest then redis.call('HSET', key, 'o', oldest) end
end
-- One label more (delta 1) or less (-1) in arrival hour `bucket`, bad or not; a label
-- less where none is counted (its hour already deleted) changes nothing.
local function count_label(key, bucket, bad, delta)
  local meta = redis.call('HMGET', key, 'v', 'h')
  local days = meta[1] ~= false
  if days and not meta[2] then redis.call('HSET', key, 'h', HASHTABLE_PAD) end  -- an older release's
  local d = math.floor(bucket / HOURS_PER_DAY)
  for i, kind in ipairs(LABELS) do
    if i == 1 or bad then
      local field, day_field = kind[1] .. bucket, kind[2] .. d
      if delta > 0 then
        redis.call('HINCRBY', key, field, 1)
        if days then redis.call('HINCRBY', key, day_field, 1) end
      elseif redis.call('HEXISTS', key, field) == 1 then
        if redis.call('HINCRBY', key, field, -1) <= 0 then redis.call('HDEL', key, field) end
        if days and redis.call('HINCRBY', key, day_field, -1) <= 0 then redis.call('HDEL', key, day_field) end
      end
    end
  end
  if delta > 0 and days then
    local oldest = tonumber(redis.call('HGET', key, 'o'))
    if oldest == nil or bucket < oldest then redis.call('HSET', key, 'o', bucket) end
  elseif delta > 0 then
    grow_labels(key)
  end
end
-- Deletes the labels of arrival hours older than `floor`: those the client names (it
-- read the hash whole), or, in the day layout, all of them with their day sums. (The
-- callers skip it when the client read the hash whole and found nothing stale.)
local function prune_labels(key, floor, stale)
  local meta = redis.call('HMGET', key, 'v', 'o')
  if not meta[1] then
    if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
    return
  end
  local oldest = tonumber(meta[2])
  if oldest == nil or oldest >= floor then return end
  for _, kind in ipairs(LABELS) do drop_before(key, oldest, floor, kind) end
  redis.call('HSET', key, 'o', floor)
end
"""
