import unittest

from workdays.span import business_days


class HeldOutSpanTest(unittest.TestCase):
    def test_end_is_not_counted(self):
        self.assertEqual(business_days("2024-03-04", "2024-03-08"), 4)
        self.assertEqual(business_days("2024-03-04", "2024-03-09"), 5)

    def test_empty_range(self):
        self.assertEqual(business_days("2024-03-06", "2024-03-06"), 0)

    def test_holidays_are_not_working_days(self):
        self.assertEqual(business_days("2024-12-23", "2025-01-06",
                                       ["2024-12-25", "2024-12-26", "2025-01-01"]), 7)

    def test_holiday_on_a_weekend_changes_nothing(self):
        self.assertEqual(business_days("2024-03-04", "2024-03-18", ["2024-03-09"]), 10)

    def test_two_months(self):
        self.assertEqual(business_days("2024-01-01", "2024-03-01"), 44)

    def test_end_before_start(self):
        with self.assertRaises(ValueError):
            business_days("2024-03-08", "2024-03-04")


if __name__ == "__main__":
    unittest.main()
