"""A quick password hasher for tests whose hashes the real settings still verify."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2-SHA256 with 1,000 rounds instead of 1,000,000: the same algorithm name and format
    (the rounds are in each hash), so servers the tests start with the project's own settings
    verify these passwords too."""

    iterations = 1_000
