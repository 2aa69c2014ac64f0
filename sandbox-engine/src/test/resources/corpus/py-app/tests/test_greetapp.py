import unittest

import greetapp


class BannerTest(unittest.TestCase):
    def test_banner_centres_the_greeting(self):
        b = greetapp.banner(80)
        self.assertEqual(80, len(b))
        self.assertIn("hello from berth-greet 1.0.0 with berth-util 1.0.0", b)

    def test_banner_never_cuts_the_greeting(self):
        self.assertTrue(greetapp.banner(1).startswith("*hello"))


if __name__ == "__main__":
    unittest.main()
