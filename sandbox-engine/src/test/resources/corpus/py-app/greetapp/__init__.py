"""A small package on top of berth-greet (from the test's local index): the acceptance corpus of issue 26."""
import berth_greet


def banner(width=40):
    text = berth_greet.greet()
    return text.center(max(width, len(text) + 2), "*")
