import json
import unittest
from pathlib import Path

from ledger.balances import month_balances

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"


class HeldOutDataTest(unittest.TestCase):
    def test_february_is_still_there(self):
        expected = json.loads(HERE.joinpath("february.json").read_text(encoding="utf-8"))
        result = month_balances(DATA / "2024-02.csv")
        self.assertIs(type(result), dict)
        self.assertEqual(json.dumps(result), json.dumps(expected))


if __name__ == "__main__":
    unittest.main()
