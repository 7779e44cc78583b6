import json
import unittest
from pathlib import Path

from mdtable.render import render_table

CASES = json.loads(Path(__file__).with_name("table_cases.json").read_text(encoding="utf-8"))


class HeldOutAlignTest(unittest.TestCase):
    def test_cases(self):
        for case in CASES:
            with self.subTest(case["headers"]):
                if case["align"] is None:
                    text = render_table(case["headers"], case["rows"])
                else:
                    text = render_table(case["headers"], case["rows"], align=case["align"])
                self.assertIs(type(text), str)
                self.assertEqual(json.dumps(text), json.dumps(case["text"]))

    def test_bad_align(self):
        for align in (["left"], ["left", "middle"], ["left", "right", "left"]):
            with self.subTest(align), self.assertRaises(ValueError):
                render_table(["a", "b"], [["1", "2"]], align=align)


if __name__ == "__main__":
    unittest.main()
