import datetime as dt
import json
import unittest
from pathlib import Path

from periods.fiscal import split_fiscal_quarters
from periods.labels import fiscal_label
from periods.quarters import quarter_start, split_quarters
from periods.ranges import parse_range

CASES = json.loads(Path(__file__).with_name("quarter_cases.json").read_text(encoding="utf-8"))


def _texts(pieces):
    out = []
    for piece in pieces:
        text = piece.as_text()
        if type(text) is not str:
            raise AssertionError(f"as_text() returned {text!r}")
        out.append(text)
    return json.dumps(out)


class HeldOutQuarterTest(unittest.TestCase):
    def test_quarter_start(self):
        for day, expected in CASES["quarter_start"]:
            with self.subTest(day):
                start = quarter_start(dt.date.fromisoformat(day))
                self.assertIs(type(start), dt.date)
                self.assertEqual(json.dumps(start.isoformat()), json.dumps(expected))

    def test_split_quarters(self):
        for text, expected in CASES["split_quarters"]:
            with self.subTest(text):
                self.assertEqual(_texts(split_quarters(parse_range(text))), json.dumps(expected))

    def test_fiscal(self):
        for day, start_month, expected in CASES["fiscal_labels"]:
            with self.subTest(day=day, start_month=start_month):
                result = fiscal_label(dt.date.fromisoformat(day), start_month)
                self.assertIs(type(result), str)
                self.assertEqual(json.dumps(result), json.dumps(expected))
        for text, start_month, expected in CASES["split_fiscal"]:
            with self.subTest(text):
                pieces = split_fiscal_quarters(parse_range(text), start_month)
                self.assertEqual(_texts(pieces), json.dumps(expected))


if __name__ == "__main__":
    unittest.main()
