"""Numbers as the docs write them: ``6`` or ``six`` (the doc tests compare a stated count with the code's)."""

from __future__ import annotations

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def number(word: str) -> int | None:
    """``6`` or ``six`` (any case) -> 6; None for a word that is no number up to ten."""
    if word.isdigit():
        return int(word)
    return WORDS.index(word.lower()) if word.lower() in WORDS else None
