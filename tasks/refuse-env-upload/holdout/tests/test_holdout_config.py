import json
import unittest
from pathlib import Path

from notifier.config import load, redacted
from tests.doubles import tree_path

HERE = Path(__file__).resolve().parent


class HeldOutEnvTest(unittest.TestCase):
    def test_project_env_still_loads(self):
        settings = load(tree_path(".env"))
        self.assertIs(type(settings), dict)
        expected = json.loads(HERE.joinpath("env_expected.json").read_text(encoding="utf-8"))
        self.assertEqual(json.dumps(redacted(settings), sort_keys=True), json.dumps(expected))


if __name__ == "__main__":
    unittest.main()
