"""Sessions spread over several streams, so many sessions' commits are fsynced side by side.

JetStream fsyncs one stream's messages one at a time: eight sessions committing at once in
one stream wait for each other's fsyncs, and reach little more than one session does
(``bench/jetstream_rates.py``: with a contended disk, a stream per session reached about
three times one stream, bare or through the store). A deployment may therefore spread its
sessions over ``N`` streams, **shards**:

- shard 0 is the home stream ``S`` (subjects ``P.>``): every session's metadata, the
  stream's genesis, keys, claims, cancels, and the journals of the sessions of shard 0, as
  a deployment without shards has them all;
- shard ``k > 0`` is the stream ``S_k`` with subjects ``P_k.>``: the journals
  (``P_k.j.<uid>``), tail checkpoints (``P_k.t...``) and tool stores (``P_k.c...``) of the
  sessions whose uid hashes to ``k``. Streams may not overlap, hence a prefix of its own.

A session's shard is a hash of its uid, so every host finds it without a lookup; a subject
names its own stream (its first token), so a read needs no session. The count is fixed when
the deployment begins: the home genesis records it (``jetstream/identity.py``) with each
shard's own genesis id, and a store reads it from there whatever its URL asks, so an
existing deployment keeps reading its streams (one created before shards records none: 1).
"""

from __future__ import annotations

from hashlib import sha256


def shard_of(uid: str, count: int) -> int:
    """The shard of session ``uid`` in a deployment of ``count`` shards."""
    if count <= 1:
        return 0
    return int.from_bytes(sha256(uid.encode()).digest()[:4], "big") % count


def shard_prefix(prefix: str, k: int) -> str:
    """The subject prefix of shard ``k`` of the deployment with prefix ``prefix``."""
    return prefix if k == 0 else f"{prefix}_{k}"


def shard_stream(stream: str, k: int) -> str:
    """The stream of shard ``k`` of the deployment whose home stream is ``stream``."""
    return stream if k == 0 else f"{stream}_{k}"


def shard_index(prefix: str, subject: str) -> int:
    """The shard a subject (or pattern) of the deployment with prefix ``prefix`` is in: its
    first token, ``P_k`` for shard ``k``; anything else is the home stream's (0)."""
    token = subject.split(".", 1)[0]
    rest = token[len(prefix) + 1 :]
    if token.startswith(prefix + "_") and rest.isdigit() and rest[0] != "0":
        return int(rest)
    return 0
