import json
import unittest
from pathlib import Path

from units.convert import convert

CASES = json.loads(Path(__file__).with_name("temperature_cases.json").read_text(encoding="utf-8"))


class HeldOutTemperatureTest(unittest.TestCase):
    def test_cases(self):
        for case in CASES:
            with self.subTest(case):
                result = convert(case["value"], case["from"], case["to"])
                self.assertIs(type(result), float)
                self.assertEqual(json.dumps(result), json.dumps(float(case["expected"])))

    def test_temperature_is_its_own_dimension(self):
        for pair in (("C", "kg"), ("m", "K"), ("F", "ft")):
            with self.subTest(pair), self.assertRaises(ValueError):
                convert(1, *pair)

    def test_lengths_unaffected(self):
        result = convert(3, "km", "m")
        self.assertIs(type(result), float)
        self.assertEqual(json.dumps(result), json.dumps(3000.0))


if __name__ == "__main__":
    unittest.main()
