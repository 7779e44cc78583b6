import json
import unittest
from pathlib import Path

from calendar_busy.intervals import free_slots, merge_busy

CASES = json.loads(Path(__file__).with_name("busy_cases.json").read_text(encoding="utf-8"))


def _plain(blocks):
    """Intervals as JSON text, after checking they really are tuples of ints."""
    for block in blocks:
        if type(block) is not tuple or len(block) != 2:
            raise AssertionError(f"not a (start, end) tuple: {block!r}")
        for value in block:
            if type(value) is not int:
                raise AssertionError(f"not an int: {value!r}")
    return json.dumps([list(block) for block in blocks])


class HeldOutMergeTest(unittest.TestCase):
    def test_merge_cases(self):
        for case in CASES["merge"]:
            with self.subTest(case["meetings"]):
                meetings = [tuple(m) for m in case["meetings"]]
                result = merge_busy(meetings)
                self.assertIs(type(result), list)
                self.assertEqual(_plain(result), json.dumps(case["busy"]))

    def test_free_cases(self):
        for case in CASES["free"]:
            result = free_slots(
                [tuple(m) for m in case["meetings"]], tuple(case["day"]), case["minimum"]
            )
            self.assertEqual(_plain(result), json.dumps(case["slots"]))


if __name__ == "__main__":
    unittest.main()
