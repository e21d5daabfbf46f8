# SPDX-License-Identifier: Apache-2.0
"""The soak test's invariant rules (tests/soak/invariants.py) on hand-made data: no process, no
socket, well under a second. Run by ctest (soak.invariants) and by hand:
    /usr/bin/python3 tests/soak/test_invariants.py -v
"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import invariants as inv  # noqa: E402


class FlatnessTest(unittest.TestCase):
    def samples(self, values, start=0.0, step=1.0):
        return [(start + i * step, v) for i, v in enumerate(values)]

    def test_pending_until_the_baseline_window_is_complete(self):
        r = inv.flatness(self.samples([100] * 15), warmup_end=10, window_s=10)
        self.assertEqual(r["verdict"], "pending")

    def test_flat_within_ten_percent_is_ok(self):
        values = [50] * 10 + [100] * 10 + [105, 108, 104, 109, 106, 107, 103, 105, 108, 104]
        r = inv.flatness(self.samples(values), warmup_end=10, window_s=10)
        self.assertEqual(r["verdict"], "ok")
        self.assertEqual(r["baseline"], 100)
        self.assertEqual(len(r["windows"]), 1)

    def test_the_warm_up_never_counts(self):
        values = [10] * 10 + [100] * 20
        self.assertEqual(inv.flatness(self.samples(values), 10, 10)["verdict"], "ok")

    def test_growth_beyond_ten_percent_is_a_breach(self):
        values = [100] * 20 + [112] * 10
        r = inv.flatness(self.samples(values), warmup_end=0, window_s=10)
        self.assertEqual(r["verdict"], "breach")
        self.assertFalse(r["windows"][-1]["ok"])

    def test_a_drop_beyond_ten_percent_is_a_breach_too(self):
        values = [100] * 10 + [85] * 10
        self.assertEqual(inv.flatness(self.samples(values), 0, 10)["verdict"], "breach")

    def test_a_spike_does_not_move_a_window_median(self):
        values = [100] * 10 + [100, 300, 290, 100, 100, 100, 100, 100, 100, 100]
        self.assertEqual(inv.flatness(self.samples(values), 0, 10)["verdict"], "ok")

    def test_min_slack_for_small_counts(self):
        values = [40] * 10 + [45] * 10
        self.assertEqual(inv.flatness(self.samples(values), 0, 10)["verdict"], "breach")
        self.assertEqual(inv.flatness(self.samples(values), 0, 10, min_slack=6)["verdict"], "ok")

    def test_a_partial_last_window_needs_enough_samples(self):
        values = [100] * 20 + [200, 200]  # 2 samples in the third window: not judged
        r = inv.flatness(self.samples(values), 0, 10, min_samples=3)
        self.assertEqual(r["verdict"], "ok")
        self.assertEqual(len(r["windows"]), 1)

    def test_summary_figures(self):
        self.assertEqual(inv.summarize([3, 1, 2, 10]), {"min": 1, "median": 2.5, "max": 10})
        self.assertEqual(inv.summarize([]), {"min": None, "median": None, "max": None})


class ExplainFailuresTest(unittest.TestCase):
    WINDOWS = [{"backend": "pool", "start": 100.0, "end": 110.0}]

    def failure(self, sent, done, status=502, backend="pool", count=1):
        return {"backend": backend, "sent": sent, "done": done, "status": status, "count": count}

    def explain(self, failures, windows=None):
        return inv.explain_failures(failures, self.WINDOWS if windows is None else windows,
                                    before_s=1.0, after_s=10.0)

    def test_a_gateway_5xx_inside_the_window_and_its_grace_is_explained(self):
        for sent in (99.5, 100, 105, 119.9):
            explained, unexplained = self.explain([self.failure(sent, sent + 0.1)])
            self.assertEqual((explained, unexplained), (1, []), sent)

    def test_a_request_that_started_before_and_ended_inside_is_explained(self):
        self.assertEqual(self.explain([self.failure(50, 100.5, status=None)])[0], 1)

    def test_outside_the_window_it_is_not(self):
        for sent in (90.0, 120.5):
            explained, unexplained = self.explain([self.failure(sent, sent + 0.2)])
            self.assertEqual((explained, len(unexplained)), (0, 1), sent)

    def test_a_500_is_never_explained(self):
        self.assertEqual(len(self.explain([self.failure(105, 105.1, status=500)])[1]), 1)

    def test_another_backend_is_not_explained(self):
        self.assertEqual(len(self.explain([self.failure(105, 105.1, backend="other")])[1]), 1)

    def test_an_endpoint_still_down_explains_everything_after_its_kill(self):
        windows = [{"backend": "pool", "start": 100.0, "end": None}]
        self.assertEqual(self.explain([self.failure(5000, 5001)], windows)[0], 1)

    def test_counts_of_grouped_failures(self):
        self.assertEqual(self.explain([self.failure(100, 101, count=7)])[0], 7)


class LimitTest(unittest.TestCase):
    def test_at_the_limit_is_fine_one_more_is_a_breach(self):
        admitted = [(i * 0.1, i * 0.1 + 0.01) for i in range(20)]
        self.assertEqual(inv.limit_breaches(admitted, 20, 9.0), [])
        breaches = inv.limit_breaches(admitted + [(5.0, 5.01)], 20, 9.0)
        self.assertEqual(breaches[0]["count"], 21)
        self.assertEqual(breaches[0]["bound"], 20)

    def test_the_next_window_gives_a_fresh_allowance(self):
        admitted = [(i * 0.1, i * 0.1 + 0.01) for i in range(20)]
        admitted += [(10 + i * 0.1, 10 + i * 0.1 + 0.01) for i in range(20)]
        self.assertEqual(inv.limit_breaches(admitted, 20, 9.0), [])
        self.assertEqual(inv.max_admitted_in_span(admitted, 9.0), 20)

    def test_a_request_only_partly_inside_a_window_is_not_counted(self):
        # 20 quick answers, then one slow one whose answer arrives after the span: it may have
        # been admitted after the window, so it proves nothing.
        admitted = [(i * 0.1, i * 0.1 + 0.01) for i in range(20)] + [(1.0, 9.5)]
        self.assertEqual(inv.limit_breaches(admitted, 20, 9.0), [])

    def test_a_store_switch_widens_the_bound(self):
        admitted = [(i * 0.1, i * 0.1 + 0.01) for i in range(40)]
        self.assertEqual(len(inv.limit_breaches(admitted, 20, 9.0)) > 0, True)
        self.assertEqual(inv.limit_breaches(admitted, 20, 9.0, lambda s, e: 2), [])

    def test_store_allowance(self):
        lives = [(0.0, 100.0), (108.0, None)]
        episodes = [(99.0, 118.0)]
        self.assertEqual(inv.store_allowance(10, 19, lives, episodes), 1)
        self.assertEqual(inv.store_allowance(95, 104, lives, episodes), 2)  # Redis + local
        self.assertEqual(inv.store_allowance(98, 107, lives, episodes), 2)
        self.assertEqual(inv.store_allowance(99, 108, lives, episodes), 3)  # both lives + local
        self.assertEqual(inv.store_allowance(120, 129, lives, episodes), 1)
        self.assertEqual(inv.store_allowance(120, 129, [], []), 1)

    def test_fallback_episodes_from_scrapes(self):
        scrapes = [(0, 0, 0), (5, 0, 0), (10, 3, 1), (15, 3, 1), (20, 3, 0), (25, 3, 0),
                   (30, 4, 0)]
        self.assertEqual(inv.fallback_episodes_from_scrapes(scrapes, margin_s=1.0),
                         [(4, 21), (24, 31)])

    def test_merge_and_in_any(self):
        self.assertEqual(inv.merge_intervals([(5, 7), (1, 3), (2, 4)]), [(1, 4), (5, 7)])
        self.assertTrue(inv.in_any(5.5, [(1, 5)], after_s=1))
        self.assertFalse(inv.in_any(6.5, [(1, 5)], after_s=1))
        self.assertTrue(inv.in_any(100, [(1, None)]))


class AdminStormTest(unittest.TestCase):
    PUTS = [({"requests": 1001, "window_ms": 60000}, 200),
            ({"requests": 1005, "window_ms": 60000, "buckets": 60}, 200)]

    def test_nothing_lost(self):
        final = {"requests": 1005, "window_ms": 60000, "buckets": 60, "mode": "enforce"}
        self.assertEqual(inv.check_admin_storm(self.PUTS, final, 3, 5, dict(final)), [])

    def test_a_file_without_the_defaults_matches(self):
        puts = [({"requests": 7, "window_ms": 1000}, 200)]
        final = {"requests": 7, "window_ms": 1000, "buckets": 10, "mode": "enforce"}
        self.assertEqual(inv.check_admin_storm(puts, final, 0, 1,
                                               {"requests": 7, "window_ms": 1000}), [])

    def test_an_older_value_read_back_is_a_lost_change(self):
        final = {"requests": 1001, "window_ms": 60000, "buckets": 10, "mode": "enforce"}
        problems = inv.check_admin_storm(self.PUTS, final, 0, 2)
        self.assertEqual(len(problems), 1)
        self.assertIn("GET shows", problems[0])

    def test_the_file_is_checked_too(self):
        final = {"requests": 1005, "window_ms": 60000, "buckets": 60, "mode": "enforce"}
        problems = inv.check_admin_storm(self.PUTS, final, 0, 2, {"requests": 1001,
                                                                   "window_ms": 60000})
        self.assertIn("file shows", problems[0])

    def test_a_refused_put_and_a_counter_that_did_not_grow(self):
        puts = [(self.PUTS[0][0], 200), (self.PUTS[1][0], 409)]
        final = {"requests": 1005, "window_ms": 60000, "buckets": 60, "mode": "enforce"}
        problems = inv.check_admin_storm(puts, final, 10, 11)
        self.assertEqual(len(problems), 2)
        self.assertIn("answered 409", problems[0])
        self.assertIn("grew by 1", problems[1])


class MetricsTest(unittest.TestCase):
    TEXT = """# HELP sluice_store_operations_total x
# TYPE sluice_store_operations_total counter
sluice_store_operations_total{store="redis",result="ok"} 120
sluice_store_operations_total{store="redis",result="error"} 3
sluice_store_operations_total{store="redis",result="timeout"} 2
sluice_store_operations_total{store="memory",result="ok"} 9
sluice_admin_changes_total{resource="limits"} 4
process_open_fds 31
"""

    def test_parse_and_sum(self):
        samples = inv.parse_metrics(self.TEXT)
        self.assertEqual(inv.metric_sum(samples, "sluice_store_operations_total", store="redis",
                                        result=("error", "timeout")), 5)
        self.assertEqual(inv.metric_sum(samples, "sluice_store_operations_total"), 134)
        self.assertEqual(inv.metric_sum(samples, "sluice_admin_changes_total",
                                        resource="limits"), 4)
        self.assertEqual(inv.metric_sum(samples, "process_open_fds"), 31)
        self.assertEqual(inv.metric_sum(samples, "absent"), 0)


if __name__ == "__main__":
    unittest.main()
