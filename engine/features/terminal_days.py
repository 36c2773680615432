"""A terminal's activity in Redis: hour buckets plus a sum per day, so that a batch reads
a few days of hours and whole days as one number each, not 744 hours.

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
* ``"v"``: ``2``: the hash carries the fields above. A hash without it holds hours only
  (written before this layout); the read then takes every hour, and the next write adds
  the day sums.

The in-memory store keeps every hour (``compute.TerminalState``), and ``RedisFeatureStore``
runs ``compute.enrich_batch`` on the state rebuilt here: each stretch of hours that no
edge splits (a whole day, or part of one) becomes one bucket holding its sum, which
leaves every window total of the batch's events as it is over the hours. That is what keeps one feature implementation for both backends; the
contract tests hold them equal on busy terminals.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from engine.features.compute import TERMINAL_KEEP_BUCKETS, BucketCounter, TerminalState
from engine.features.spec import BUCKET_MS, DAY_MS, TERMINAL_WINDOWS

HOURS_PER_DAY = DAY_MS // BUCKET_MS
_WINDOWS = tuple(ms // BUCKET_MS for _, ms in TERMINAL_WINDOWS)
assert all(w % HOURS_PER_DAY == 0 for w in _WINDOWS), "day sums need windows of whole days"
#: The most fields a terminal's hash holds (hours within the kept span, their days, the
#: metadata): a plan that would ask for more reads the whole hash instead.
_MOST_FIELDS = TERMINAL_KEEP_BUCKETS + 1 + TERMINAL_KEEP_BUCKETS // HOURS_PER_DAY + 2 + 3

#: What the read script is asked for one terminal: ``[first day, last day, [edges]]``,
#: an edge ``p`` lying between hours ``p - 1`` and ``p``; ``None``: every hour field.
ReadPlan = list[Any] | None


def read_plan(hours: Collection[int]) -> ReadPlan:
    """What a batch whose events fall in ``hours`` (hour buckets) reads of a terminal: the
    days from the oldest window start to the newest event's day, and the edges that fall
    strictly inside one of them (a day holding an edge is read hour by hour and summed
    between its edges; every other day as its sum).

    The edges: each window's first hour, the hour after the event's, and the floor
    ``compute.record_event`` prunes at (inside the days read only when a batch spans more
    than a day).

    >>> read_plan([24 * 100 + 5])  # one event at 05:00 of day 100
    [70, 100, [1686, 2238, 2382, 2406]]
    >>> read_plan([24 * 100 + 23])  # a day's last hour: every window is whole days
    [71, 100, []]
    """
    if not hours:
        return None
    lo_day = (min(hours) - max(_WINDOWS) + 1) // HOURS_PER_DAY
    hi_day = max(hours) // HOURS_PER_DAY
    offsets = [1 - w for w in _WINDOWS] + [1, -TERMINAL_KEEP_BUCKETS]
    edges = {p for h in set(hours) for off in offsets
             if (p := h + off) % HOURS_PER_DAY and lo_day <= p // HOURS_PER_DAY <= hi_day}
    split_days = len({p // HOURS_PER_DAY for p in edges})
    if HOURS_PER_DAY * split_days + (hi_day - lo_day + 1 - split_days) >= _MOST_FIELDS:
        return None  # a batch spanning weeks: the whole hash is fewer fields
    return [lo_day, hi_day, sorted(edges)]


def activity_from_reply(reply: list[int] | dict[str, Any]) -> tuple[BucketCounter, int | None]:
    """The activity counter a batch computes on, and the newest hour written (``None``
    when unknown: the reply then holds every hour, whose newest it is).

    ``reply`` is the read script's: a flat ``[hour, count, ...]`` list (every hour), or
    ``{"n": newest, "d": [day, sum, ...], "s": [first hour, sum, ...]}`` (the plan's: the
    days left whole, and the stretches between the edges of the others)."""
    if isinstance(reply, list):
        return BucketCounter.from_items(zip(reply[0::2], reply[1::2])), None
    days, stretches = reply["d"], reply["s"]
    items = list(zip(stretches[0::2], stretches[1::2]))
    items += [(day * HOURS_PER_DAY, total) for day, total in zip(days[0::2], days[1::2])]
    return BucketCounter.from_items(items), reply["n"]


def terminal_state(activity: list[int] | dict[str, Any], labels: list[str]) -> tuple[TerminalState, int | None]:
    """A terminal's state from the read script's activity reply and its label hash (a
    flat list of strings), with the newest hour written (``activity_from_reply``)."""
    t = TerminalState()
    t.activity, newest = activity_from_reply(activity)
    known, bad = [], []
    for i in range(0, len(labels), 2):
        kind, bucket = labels[i].split(":", 1)
        (known if kind == "k" else bad).append((int(bucket), int(labels[i + 1])))
    t.known, t.bad = BucketCounter.from_items(known), BucketCounter.from_items(bad)
    return t, newest


# The Lua both the single server's scripts and the cluster's per-slot scripts include.
# Counts are integers and hours about 5e5, well inside the 2^53 that Lua's doubles hold,
# and Lua 5.1 prints such numbers without a decimal point, so '"d:" .. day' is exact.
_LUA_CONSTANTS = f"""
local HOURS_PER_DAY, KEEP_HOURS = {HOURS_PER_DAY}, {TERMINAL_KEEP_BUCKETS}
"""

LUA_READ_ACTIVITY = _LUA_CONSTANTS + """
-- The hour fields of a terminal's activity hash as a JSON list [hour, count, ...] (its
-- day sums and metadata left out), or, given a plan {first day, last day, {edges}} and a
-- hash in the day layout, {"n": newest, "d": [day, sum, ...], "s": [first hour, sum,
-- ...]}: the sums of the days no edge splits, and of the stretches between the edges of
-- the others (engine.features.terminal_days).
local function hmget_chunked(key, fields)
  local got = {}
  for i = 1, #fields, 1000 do  -- unpack has a limit on its arguments
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #part do got[#got + 1] = part[j] end
  end
  return got
end
local function every_hour(key)
  local flat, out = redis.call('HGETALL', key), {}
  for i = 1, #flat, 2 do
    if tonumber(flat[i]) then out[#out + 1] = flat[i]; out[#out + 1] = flat[i + 1] end
  end
  return '[' .. table.concat(out, ',') .. ']'
end
local function read_activity(key, plan)
  if plan == nil or plan == cjson.null then return every_hour(key) end
  local edges, split = {}, 0  -- day -> its edges, in order (the client sorts them)
  for _, p in ipairs(plan[3]) do
    local d = math.floor(p / HOURS_PER_DAY)
    if not edges[d] then edges[d] = {}; split = split + 1 end
    table.insert(edges[d], p)
  end
  -- a quiet terminal's hash has fewer fields than the plan would ask for: read it whole
  local asked = split * HOURS_PER_DAY + (plan[2] - plan[1] + 1 - split)
  if redis.call('HLEN', key) <= asked then return every_hour(key) end
  local meta = redis.call('HMGET', key, 'v', 'n')
  if not meta[1] then return every_hour(key) end  -- hours only: written before the day layout
  local days, day_fields, hour_fields = {}, {}, {}
  for d = plan[1], plan[2] do
    if edges[d] then
      for h = d * HOURS_PER_DAY, d * HOURS_PER_DAY + HOURS_PER_DAY - 1 do hour_fields[#hour_fields + 1] = h end
    else
      days[#days + 1] = d
      day_fields[#day_fields + 1] = 'd:' .. d
    end
  end
  local d_out, s_out = {}, {}
  local sums = hmget_chunked(key, day_fields)
  for i = 1, #days do
    if sums[i] then d_out[#d_out + 1] = days[i]; d_out[#d_out + 1] = sums[i] end
  end
  local counts, at = hmget_chunked(key, hour_fields), 1
  for d = plan[1], plan[2] do
    local cuts = edges[d]
    if cuts then
      local stop = d * HOURS_PER_DAY + HOURS_PER_DAY
      for k = 0, #cuts do
        local first = (k == 0) and d * HOURS_PER_DAY or cuts[k]
        local after = cuts[k + 1] or stop
        local total = 0
        for _ = first, after - 1 do
          if counts[at] then total = total + tonumber(counts[at]) end
          at = at + 1
        end
        if total > 0 then s_out[#s_out + 1] = first; s_out[#s_out + 1] = total end
      end
    end
  end
  return '{"n":' .. meta[2] .. ',"d":[' .. table.concat(d_out, ',') .. '],"s":[' .. table.concat(s_out, ',') .. ']}'
end
"""

LUA_RECORD_ACTIVITY = _LUA_CONSTANTS + """
-- Adds counts {hour string -> events} to a terminal's activity hash, keeps its day sums,
-- "n" and "o", and deletes the hours older than KEEP_HOURS before the newest (and their
-- share of the day sums). A hash in the older layout (hours only) gets its day sums first.
local function record_activity(key, counts)
  local meta = redis.call('HMGET', key, 'v', 'n', 'o')
  local newest, oldest = tonumber(meta[2]), tonumber(meta[3])
  local was_newest, was_oldest = newest, oldest
  if not meta[1] then
    local flat, days = redis.call('HGETALL', key), {}
    newest, oldest = nil, nil
    for i = 1, #flat, 2 do
      local h = tonumber(flat[i])
      if h then
        local d = math.floor(h / HOURS_PER_DAY)
        days[d] = (days[d] or 0) + tonumber(flat[i + 1])
        if newest == nil or h > newest then newest = h end
        if oldest == nil or h < oldest then oldest = h end
      end
    end
    for d, total in pairs(days) do redis.call('HSET', key, 'd:' .. d, total) end
  end
  for hour, n in pairs(counts) do
    local h = tonumber(hour)
    redis.call('HINCRBY', key, hour, n)
    redis.call('HINCRBY', key, 'd:' .. math.floor(h / HOURS_PER_DAY), n)
    if newest == nil or h > newest then newest = h end
    if oldest == nil or h < oldest then oldest = h end
  end
  if newest == nil then return end  -- nothing here, and nothing written
  local floor = newest - KEEP_HOURS
  if oldest < floor then
    for d = math.floor(oldest / HOURS_PER_DAY), math.floor((floor - 1) / HOURS_PER_DAY) do
      local day_field = 'd:' .. d
      if redis.call('HEXISTS', key, day_field) == 1 then
        local first, last = d * HOURS_PER_DAY, d * HOURS_PER_DAY + HOURS_PER_DAY - 1
        local fields = {}
        for h = first, math.min(last, floor - 1) do fields[#fields + 1] = h end
        if last < floor then  -- the whole day is older than the floor
          redis.call('HDEL', key, day_field, unpack(fields))
        else
          local counts_left, gone = redis.call('HMGET', key, unpack(fields)), 0
          for i = 1, #fields do if counts_left[i] then gone = gone + tonumber(counts_left[i]) end end
          if gone > 0 then
            redis.call('HDEL', key, unpack(fields))
            if redis.call('HINCRBY', key, day_field, -gone) <= 0 then redis.call('HDEL', key, day_field) end
          end
        end
      end
    end
    oldest = floor
  end
  if newest ~= was_newest or oldest ~= was_oldest or not meta[1] then
    redis.call('HSET', key, 'v', 2, 'n', newest, 'o', oldest)
  end
end
"""
