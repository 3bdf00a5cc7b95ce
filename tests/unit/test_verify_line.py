"""`verify`'s line per chain: counts in words a reader expects ("1 record", "4 records")."""

from __future__ import annotations

import pytest

from agentsessions.cli.verify import verify_line
from agentsessions.v1.results import VerifyReport


@pytest.mark.parametrize("n, words", [(0, "0 records"), (1, "1 record"), (4, "4 records")])
def test_the_count_agrees_with_its_noun(n: int, words: str) -> None:
    report = VerifyReport(source="s", records=n, last_seq=n, last_hash="ab" * 32)
    assert verify_line(report, "s").plain.startswith(f"✓ s: {words} verified, last seq {n}")


def test_a_keyless_verify_of_an_encrypted_chain_says_what_it_did_not_check() -> None:
    report = VerifyReport(source="s", records=2, last_seq=2, last_hash="ab" * 32)
    report.notes.append(
        "encrypted records: ... checked without the key; content hashes not recomputed"
    )
    assert verify_line(report, "s").plain.endswith(
        "(encrypted, checked without the key: content hashes not recomputed)"
    )
