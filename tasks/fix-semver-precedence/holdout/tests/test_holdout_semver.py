import json
import unittest
from pathlib import Path

from semver.version import compare, sort_versions

DATA = json.loads(Path(__file__).with_name("semver_order.json").read_text(encoding="utf-8"))


class HeldOutPrecedenceTest(unittest.TestCase):
    def test_specification_chain(self):
        chain = DATA["spec_chain"]
        for lower, higher in zip(chain, chain[1:]):
            with self.subTest(lower=lower, higher=higher):
                up, down = compare(lower, higher), compare(higher, lower)
                self.assertIs(type(up), int)
                self.assertEqual(json.dumps([up, down]), json.dumps([-1, 1]))

    def test_pairs(self):
        for left, right, expected in DATA["pairs"]:
            with self.subTest(left=left, right=right):
                result = compare(left, right)
                self.assertIs(type(result), int)
                self.assertEqual(json.dumps(result), json.dumps(expected))

    def test_sort(self):
        result = sort_versions(list(DATA["shuffled"]))
        self.assertIs(type(result), list)
        self.assertEqual(json.dumps(result), json.dumps(DATA["sorted"]))


if __name__ == "__main__":
    unittest.main()
