import json
import unittest
from pathlib import Path

from confkit.coerce import coerce, to_bool
from confkit.errors import CoercionError, ConfigError
from confkit.loader import load_config
from confkit.schema import Field

WORDS = json.loads(Path(__file__).with_name("bool_words.json").read_text(encoding="utf-8"))


class HeldOutBoolTest(unittest.TestCase):
    def test_words(self):
        for expected in (True, False):
            for word in WORDS[json.dumps(expected)]:
                with self.subTest(word=word):
                    result = to_bool(word)
                    self.assertIs(type(result), bool)
                    self.assertEqual(json.dumps(result), json.dumps(expected))
                    self.assertEqual(json.dumps(coerce(word, "bool")), json.dumps(expected))

    def test_rejected(self):
        for word in WORDS["rejected"]:
            with self.subTest(word=word), self.assertRaises(CoercionError):
                to_bool(word)

    def test_rejected_through_loader_names_the_field(self):
        fields = [Field("server", "debug", "bool")]
        with self.assertRaises(ConfigError) as caught:
            load_config([("user.ini", "[server]\ndebug = of\n")], fields)
        self.assertIn("debug", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
