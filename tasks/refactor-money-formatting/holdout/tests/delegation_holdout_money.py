"""Delegation: the one check that needs a monkeypatch, so it runs in process (tests_pass).

judged_tests grades the behaviour; patching the package cannot cross its boundary.
"""

import json
import unittest
from pathlib import Path
from unittest import mock

from money import format as money_format

CASES = json.loads(Path(__file__).with_name("money_cases.json").read_text(encoding="utf-8"))
WRAPPERS = {"USD": "format_usd", "EUR": "format_eur", "JPY": "format_jpy"}



class HeldOutDelegationTest(unittest.TestCase):
    def test_wrappers_delegate(self):
        # The point of the refactor: one implementation. A wrapper that still carries its own
        # copy of the code would not notice format_money being replaced.
        for code, wrapper in WRAPPERS.items():
            with self.subTest(wrapper):
                with mock.patch.object(money_format, "format_money", return_value="sentinel") as fm:
                    self.assertEqual(getattr(money_format, wrapper)(1234), "sentinel")
                fm.assert_called_once_with(1234, code)


if __name__ == "__main__":
    unittest.main()
