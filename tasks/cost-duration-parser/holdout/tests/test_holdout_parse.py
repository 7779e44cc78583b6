import json
import unittest
from pathlib import Path

from durations.parse import format_duration, parse_duration

CASES = json.loads(Path(__file__).with_name("duration_cases.json").read_text(encoding="utf-8"))


class HeldOutParseTest(unittest.TestCase):
    def test_valid(self):
        for text, seconds in CASES["valid"]:
            with self.subTest(text):
                result = parse_duration(text)
                self.assertIs(type(result), int)
                self.assertEqual(json.dumps(result), json.dumps(seconds))

    def test_invalid(self):
        for text in CASES["invalid"]:
            with self.subTest(text), self.assertRaises(ValueError):
                parse_duration(text)

    def test_round_trip(self):
        for _, seconds in CASES["valid"]:
            with self.subTest(seconds):
                self.assertEqual(json.dumps(parse_duration(format_duration(seconds))),
                                 json.dumps(seconds))


if __name__ == "__main__":
    unittest.main()
