import json
import unittest
from pathlib import Path

from minitpl.engine import TemplateError, render

CASES = json.loads(Path(__file__).with_name("filter_cases.json").read_text(encoding="utf-8"))


class HeldOutFilterTest(unittest.TestCase):
    def test_render_cases(self):
        for case in CASES["render"]:
            with self.subTest(case["template"]):
                text = render(case["template"], case["context"])
                self.assertIs(type(text), str)
                self.assertEqual(json.dumps(text), json.dumps(case["text"]))

    def test_error_cases(self):
        for case in CASES["errors"]:
            with self.subTest(case["template"]):
                with self.assertRaises(TemplateError) as caught:
                    render(case["template"], case["context"])
                self.assertIn(case["mentions"], str(caught.exception))


if __name__ == "__main__":
    unittest.main()
