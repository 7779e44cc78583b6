import json
import unittest
from pathlib import Path

from money import format as money_format

CASES = json.loads(Path(__file__).with_name("money_cases.json").read_text(encoding="utf-8"))
WRAPPERS = {"USD": "format_usd", "EUR": "format_eur", "JPY": "format_jpy"}


class HeldOutFormatMoneyTest(unittest.TestCase):
    def test_cases(self):
        for code, amount, expected in CASES:
            with self.subTest(code=code, amount=amount):
                text = money_format.format_money(amount, code)
                self.assertIs(type(text), str)
                self.assertEqual(json.dumps(text), json.dumps(expected))
                wrapped = getattr(money_format, WRAPPERS[code])(amount)
                self.assertEqual(json.dumps(wrapped), json.dumps(expected))

    def test_unknown_currency(self):
        with self.assertRaises(ValueError):
            money_format.format_money(100, "XTS")



if __name__ == "__main__":
    unittest.main()
