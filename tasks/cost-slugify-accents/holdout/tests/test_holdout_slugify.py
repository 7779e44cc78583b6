import json
import unittest
from pathlib import Path

from slugs.slugify import slugify

CASES = json.loads(Path(__file__).with_name("slug_cases.json").read_text(encoding="utf-8"))


class HeldOutSlugifyTest(unittest.TestCase):
    def test_cases(self):
        for title, max_length, expected in CASES:
            with self.subTest(title):
                slug = slugify(title, max_length=max_length)
                self.assertIs(type(slug), str)
                self.assertEqual(json.dumps(slug), json.dumps(expected))


if __name__ == "__main__":
    unittest.main()
