import json
import unittest
from pathlib import Path

from report.aggregate import category_totals

CASES = json.loads(Path(__file__).with_name("report_cases.json").read_text(encoding="utf-8"))


class HeldOutTotalsTest(unittest.TestCase):
    def test_cases(self):
        for case in CASES:
            with self.subTest(case["name"]):
                result = category_totals(case["csv"])
                self.assertIs(type(result), dict)
                for key, value in result.items():
                    self.assertIs(type(key), str)
                    self.assertIs(type(value), str)
                self.assertEqual(json.dumps(result), json.dumps(case["totals"]))


if __name__ == "__main__":
    unittest.main()
