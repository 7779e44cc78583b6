import io
import json
import unittest
from pathlib import Path

from kvjournal.journal import decode_record, encode_record
from kvjournal.store import Store, replay
from tests.doubles import stream

CASES = json.loads(Path(__file__).with_name("journal_cases.json").read_text(encoding="utf-8"))


class HeldOutJournalTest(unittest.TestCase):
    def test_values_round_trip(self):
        for value in CASES["values"]:
            with self.subTest(value=value):
                line = encode_record("set", "k", value)
                self.assertIs(type(line), str)
                self.assertEqual(line.count("\n"), 1)
                self.assertEqual(line.count("\t"), 2)
                record = decode_record(line)
                self.assertIs(type(record), tuple)
                self.assertEqual(json.dumps(record), json.dumps(["set", "k", value]))

    def test_history_replays(self):
        journal = stream()
        store = Store(journal)
        for op, key, *value in CASES["history"]:
            if op == "set":
                store.set(key, value[0])
            else:
                store.delete(key)
        state = replay(io.StringIO(journal.getvalue()).readlines())
        self.assertIs(type(state), dict)
        self.assertEqual(json.dumps(state, sort_keys=True), json.dumps(CASES["final"]))
        torn = journal.getvalue() + "set\tz\tpartial"
        self.assertEqual(json.dumps(replay(io.StringIO(torn).readlines()), sort_keys=True),
                         json.dumps(CASES["final"]))


if __name__ == "__main__":
    unittest.main()
