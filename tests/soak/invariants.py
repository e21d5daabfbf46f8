# SPDX-License-Identifier: Apache-2.0
"""The soak test's invariants as pure functions over what the run recorded (docs/soak.md).

Nothing here starts a process or opens a socket, so tests/soak/test_invariants.py checks every
rule on hand-made data in milliseconds. All times are seconds on one monotonic clock.
"""

import bisect
import math

# The status codes a killed endpoint may explain: the gateway's own 502 (connect error, reset
# before the head), 503 (breaker drop) and 504 (timeout).
FAULT_STATUSES = (502, 503, 504)


def median(values):
    """The median of a non-empty sequence (the mean of the middle two for an even count)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of nothing")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def summarize(values):
    """{"min", "median", "max"} of a sequence, or Nones when it is empty."""
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": median(values), "max": max(values)}


# --- resource flatness ---------------------------------------------------------------------


def flatness(samples, warmup_end, window_s, tolerance=0.10, min_slack=0.0, min_samples=3):
    """Is a resource (RSS, open fds) flat after the warm-up?

    samples: (t, value) in time order. The baseline is the median of the samples in
    [warmup_end, warmup_end + window_s). Every later window [warmup_end + k*window_s, ... +
    window_s), k >= 1, with at least min_samples samples (the last one may be partial), has its
    median compared with the baseline: it must lie within max(tolerance * baseline, min_slack)
    of it, either way. Medians of windows, not single samples, so a burst (a slowloris wave, a
    killed endpoint's pool refilling) is not a trend. Verdict "pending" until the baseline
    window is complete.
    """
    values = [v for _, v in samples]
    result = {"verdict": "pending", "baseline": None, "allowed": None, "windows": [],
              **summarize(values)}
    base = [v for t, v in samples if warmup_end <= t < warmup_end + window_s]
    last_t = samples[-1][0] if samples else None
    if last_t is None or last_t < warmup_end + window_s or len(base) < min_samples:
        return result
    baseline = median(base)
    allowed = max(tolerance * baseline, min_slack)
    result.update(verdict="ok", baseline=baseline, allowed=allowed)
    k = 1
    while warmup_end + k * window_s <= last_t:
        start = warmup_end + k * window_s
        window = [v for t, v in samples if start <= t < start + window_s]
        if len(window) >= min_samples:
            m = median(window)
            ok = abs(m - baseline) <= allowed
            result["windows"].append({"start": start, "median": m, "ok": ok})
            if not ok:
                result["verdict"] = "breach"
        k += 1
    return result


def in_any(t, intervals, after_s=0.0):
    """Is t inside any [start, end + after_s] (end None: still open)?"""
    return any(start <= t <= (math.inf if end is None else end + after_s)
               for start, end in intervals)


# --- 5xx and failed requests, explained by faults -------------------------------------------


def overlaps(a_start, a_end, b_start, b_end):
    return a_start <= b_end and b_start <= a_end


def explain_failures(failures, fault_windows, before_s, after_s):
    """Split failed requests into explained and unexplained.

    failures: dicts with "backend", "sent", "done", "status" (None for a failure without a
    status: reset, refused, cut stream) and optionally "count" (several requests at once, h2load).
    fault_windows: dicts with "backend", "start" (the kill) and "end" (the endpoint listening
    again; None while it is still down).
    A failure is explained when its status is None or in FAULT_STATUSES, its request went to a
    backend with a fault window, and [sent, done] overlaps [start - before_s, end + after_s]
    of that window. Anything else (a 500, or any failure outside every window) is unexplained.
    Returns (explained_count, unexplained list).
    """
    explained = 0
    unexplained = []
    for failure in failures:
        count = failure.get("count", 1)
        status = failure.get("status")
        ok_status = status is None or status in FAULT_STATUSES
        hit = ok_status and any(
            window["backend"] == failure["backend"]
            and overlaps(failure["sent"], failure["done"], window["start"] - before_s,
                         (math.inf if window["end"] is None else window["end"]) + after_s)
            for window in fault_windows)
        if hit:
            explained += count
        else:
            unexplained.append(failure)
    return explained, unexplained


# --- rate limits -----------------------------------------------------------------------------


def store_allowance(window_start, window_end, redis_lives, fallback_episodes):
    """How many separate allowances a limited user can draw from in [window_start, window_end].

    Each Redis instance keeps its own counts (a restarted Redis comes back empty: nothing is
    persisted), and while Redis is away the gateway decides in its local store at the full limit
    (`on_error: "local"`), which does not see Redis' counts. So: one allowance per Redis lifetime
    ([start, end], end None while alive) that overlaps the window, plus one when any fallback
    episode ([start, end]) overlaps it (the local store is one store, however many episodes).
    Never less than 1.
    """
    lives = sum(1 for start, end in redis_lives
                if overlaps(window_start, window_end, start, math.inf if end is None else end))
    local = 1 if any(overlaps(window_start, window_end, s, e) for s, e in fallback_episodes) else 0
    return max(1, lives + local)


def limit_windows(admitted, limit, span_s, allowance=lambda start, end: 1):
    """Every window a limited user's admissions are judged in, with its count and bound.

    admitted: (sent, done) of every 2xx the user got, each request admitted somewhere in
    [sent, done]. The guarantee: in any span of span_s (window_ms - window_ms/buckets) at most
    limit admissions per allowance(start, end). A request counts in the window [a, a + span_s]
    only when [sent, done] lies wholly inside it, so client-side latency never makes a breach.
    Every maximal window starts at some request's sent time, so those are the windows checked.
    Returns [{"start", "count", "bound"}], one per request.
    """
    requests = sorted(admitted)
    sent_times = [sent for sent, _ in requests]
    windows = []
    for i, (start, _) in enumerate(requests):
        end = start + span_s
        last = bisect.bisect_right(sent_times, end)
        count = sum(1 for _, done in requests[i:last] if done <= end)
        windows.append({"start": start, "count": count, "bound": limit * allowance(start, end)})
    return windows


def limit_breaches(admitted, limit, span_s, allowance=lambda start, end: 1):
    """The windows of limit_windows whose count is over their bound."""
    return [w for w in limit_windows(admitted, limit, span_s, allowance) if w["count"] > w["bound"]]


def max_admitted_in_span(admitted, span_s, windows=None):
    """The most 2xx wholly inside any span (for the summary, beside the bound)."""
    windows = limit_windows(admitted, 1, span_s) if windows is None else windows
    return max((w["count"] for w in windows), default=0)


def fallback_episodes_from_scrapes(scrapes, margin_s=1.0):
    """Intervals in which the gateway may have decided limits locally, from the metrics.

    scrapes: (t, redis_failed_ops, fallback_active) in time order, where redis_failed_ops is
    sluice_store_operations_total{store="redis",result=~"error|timeout"} (each such decision was
    made by on_error) and fallback_active is sluice_store_fallback_active{store="redis"}.
    Between two scrapes where the counter grew, or either of which saw the gauge at 1, local
    decisions may have happened: [previous t - margin, t + margin].
    """
    episodes = []
    for (t0, failed0, active0), (t1, failed1, active1) in zip(scrapes, scrapes[1:]):
        if failed1 > failed0 or active0 or active1:
            episodes.append((t0 - margin_s, t1 + margin_s))
    return merge_intervals(episodes)


def merge_intervals(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# --- admin changes ---------------------------------------------------------------------------


def check_admin_storm(puts, final_policy, changes_before, changes_after, persisted_policy=None):
    """Problems of one admin storm (an empty list when none was lost).

    puts: (body sent, status answered) in the order sent, one at a time. Every PUT must answer
    200; the policy read back afterwards (and the file, with persist) must equal the last body
    sent (fields left out, in the body or the file, take their defaults: buckets 10, mode
    enforce); and
    sluice_admin_changes_total{resource="limits"} must have grown by exactly the number of PUTs.
    """
    problems = []
    for body, status in puts:
        if status != 200:
            problems.append(f"PUT {body} answered {status}")
    if not puts:
        return problems
    defaults = {"buckets": 10, "mode": "enforce"}
    expected = {**defaults, **puts[-1][0]}
    for where, policy in (("GET", final_policy), ("file", persisted_policy)):
        if where == "file" and persisted_policy is None:
            continue
        # The file keeps what the PUT sent (a left-out field stays out: its default applies).
        got = {key: (policy or {}).get(key, defaults.get(key)) for key in expected}
        if got != expected:
            problems.append(f"{where} shows {got}, the last PUT was {expected}")
    if changes_after - changes_before != len(puts):
        problems.append(f"sluice_admin_changes_total{{resource=\"limits\"}} grew by "
                        f"{changes_after - changes_before}, {len(puts)} PUTs were sent")
    return problems


def parse_metrics(text):
    """Prometheus text -> {(name, frozenset(labels.items())): value} (no escapes in our labels)."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        if "{" in head:
            name, _, rest = head.partition("{")
            labels = {}
            for part in rest.rstrip("}").split(","):
                if "=" in part:
                    key, _, val = part.partition("=")
                    labels[key.strip()] = val.strip().strip('"')
        else:
            name, labels = head, {}
        try:
            samples[(name, frozenset(labels.items()))] = float(value)
        except ValueError:
            continue
    return samples


def metric_sum(samples, name, **labels):
    """The sum of every series of name whose labels include labels (a value may be a tuple of
    alternatives)."""
    total = 0.0
    for (series, label_set), value in samples.items():
        if series != name:
            continue
        have = dict(label_set)
        if all((have.get(k) in v) if isinstance(v, tuple) else have.get(k) == v
               for k, v in labels.items()):
            total += value
    return total
