import json
import unittest
from pathlib import Path

from helpfmt.wrap import fill, wrap

CASES = json.loads(Path(__file__).with_name("wrap_cases.json").read_text(encoding="utf-8"))


class HeldOutWrapTest(unittest.TestCase):
    def test_cases(self):
        for case in CASES:
            with self.subTest(case["text"]):
                lines = wrap(case["text"], case["width"])
                self.assertIs(type(lines), list)
                for line in lines:
                    self.assertIs(type(line), str)
                    self.assertLessEqual(len(line), case["width"])
                self.assertEqual(json.dumps(lines), json.dumps(case["lines"]))

    def test_fill_matches_wrap_with_prefix(self):
        case = CASES[0]
        text = fill(case["text"], case["width"] + 4, prefix="  - ")
        self.assertIs(type(text), str)
        expected = "\n".join("  - " + line for line in case["lines"])
        self.assertEqual(json.dumps(text), json.dumps(expected))


if __name__ == "__main__":
    unittest.main()
