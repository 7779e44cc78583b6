import unittest

from calendar_busy.intervals import free_slots, merge_busy


class MergeBusyTest(unittest.TestCase):
    def test_overlapping_sorted(self):
        self.assertEqual(merge_busy([(540, 600), (570, 630)]), [(540, 630)])

    def test_unsorted_meetings(self):
        self.assertEqual(
            merge_busy([(780, 840), (540, 600), (570, 630)]), [(780, 840), (540, 630)]
        )

    def test_reversed_meeting_rejected(self):
        with self.assertRaises(ValueError):
            merge_busy([(600, 540)])


class FreeSlotsTest(unittest.TestCase):
    def test_gap_between_meetings(self):
        self.assertEqual(
            free_slots([(600, 660), (540, 570)], day=(540, 720), minimum=15),
            [(570, 600), (660, 720)],
        )


if __name__ == "__main__":
    unittest.main()
