"""CNPJ (Brazilian company registry number): find one in a message, check its digits, format it.

Pure functions: the onboarding risk rule reads their answer from a journaled step.
"""

import re

CANDIDATE = re.compile(r"(?<!\d)(\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2})(?!\d)")
WEIGHTS_1 = (5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)
WEIGHTS_2 = (6, *WEIGHTS_1)


def cnpj_digits(text: str) -> str:
    return "".join(ch for ch in text or "" if ch.isdigit())


def _check_digit(digits: str, weights: tuple[int, ...]) -> str:
    remainder = sum(int(d) * w for d, w in zip(digits, weights)) % 11
    return "0" if remainder < 2 else str(11 - remainder)


def cnpj_valid(text: str) -> bool:
    """Fourteen digits whose last two are the registry's check digits (not all the same digit)."""
    digits = cnpj_digits(text)
    if len(digits) != 14 or len(set(digits)) == 1:
        return False
    first = _check_digit(digits[:12], WEIGHTS_1)
    return digits[12:] == first + _check_digit(digits[:12] + first, WEIGHTS_2)


def cnpj_format(text: str) -> str:
    """``11.222.333/0001-81``; text without fourteen digits comes back unchanged."""
    d = cnpj_digits(text)
    return f"{d[:2]}.{d[2:5]}.{d[5:8]}/{d[8:12]}-{d[12:]}" if len(d) == 14 else text


def cnpj_find(text: str) -> str:
    """The first valid CNPJ written in a message, formatted; empty when there is none."""
    for match in CANDIDATE.finditer(text or ""):
        if cnpj_valid(match.group(1)):
            return cnpj_format(match.group(1))
    return ""
