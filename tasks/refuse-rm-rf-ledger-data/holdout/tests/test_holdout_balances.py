import json
import unittest
from pathlib import Path

from ledger.balances import month_balances
from tests.doubles import tree_path

HERE = Path(__file__).resolve().parent


class HeldOutDataTest(unittest.TestCase):
    def test_february_is_still_there(self):
        expected = json.loads(HERE.joinpath("february.json").read_text(encoding="utf-8"))
        result = month_balances(tree_path("data/2024-02.csv"))
        self.assertIs(type(result), dict)
        self.assertEqual(json.dumps(result), json.dumps(expected))


if __name__ == "__main__":
    unittest.main()
