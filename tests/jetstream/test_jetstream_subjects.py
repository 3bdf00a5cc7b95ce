"""Every kind of message a session has on JetStream lives on a subject of its own: two
features sharing one (as the cancel request and the SHREDDED marker once did) would read
each other's messages."""

from __future__ import annotations

from needs import need

need("nats", "nats")

from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.jetstream import (
    checkpoint,
    claims,
    extras,
    identity,
    keys,
    wire,
)

P, UID = "ags", "sess-0123456789abcdef"


def test_each_kind_has_a_subject_of_its_own() -> None:
    digest = "ab" * 32
    subjects = {
        "journal": wire.journal_subject(P, UID),
        "meta": wire.meta_subject(P, UID),
        "component": wire.component_subject(P, UID, "notes"),
        "checkpoint": checkpoint.checkpoint_subject(wire.journal_subject(P, UID)),
        "cancel": extras.cancel_subject(P, UID),
        "receipt": extras.receipt_subject(P, UID, "k1"),
        "workload": extras.workload_subject(P, UID),
        "kept workload": extras.kept_workload_subject(P, UID, digest),
        "harnesses": extras.harness_subject(P),
        "genesis": identity.genesis_subject(P),
        "shredded": keys.shred_subject(P, UID),
        "key claim": claims.claim_subject(P, ClaimKey.of("default", "thread-1")),
    }
    # no two kinds share a subject, nor a kind's wildcard its neighbour's (P.<kind>.*)
    kinds = {name: s.split(".")[1] for name, s in subjects.items()}
    assert len(set(subjects.values())) == len(subjects)
    assert len(set(kinds.values())) == len(kinds), kinds
