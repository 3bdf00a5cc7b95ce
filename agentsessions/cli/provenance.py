"""The ``--origin``, ``--identity`` and ``--actor`` options: parsing and their help (the
options themselves: :mod:`.options`, so that parsing imports no typer).

An origin is ``source=github,subject=owner/repo#12,uri=https://...,attr.KEY=VALUE``: its
fields as ``KEY=VALUE`` pairs, comma-separated (a comma inside a value, as in some URIs, is
kept: a piece without ``=`` continues the previous value). An identity or an actor is
``principal=NAME,issuer=ISSUER,subject=ID`` (at least one of them). The values are checked
as the library checks them (:mod:`agentsessions.v1.provenance`), so the CLI refuses what the
engine would, before the home is opened.
"""

from __future__ import annotations

import re
from typing import Any

from agentsessions.errors import InvalidArgumentError

ORIGIN_HELP = (
    "The session's origin: source=SOURCE,subject=SUBJECT[,uri=URI][,attr.KEY=VALUE...] "
    "(e.g. source=github,subject=owner/repo#12). Its source and subject name the session."
)
IDENTITY_HELP = "principal=NAME[,issuer=ISSUER][,subject=ID]"
_PAIR = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*=")


def pairs(text: str, flag: str) -> dict[str, str]:
    """``k=v,k=v`` as a dict (see the module); InvalidArgumentError naming ``flag``."""
    out: dict[str, str] = {}
    last = ""
    for piece in text.split(","):
        if not _PAIR.match(piece):
            if not last:
                raise InvalidArgumentError(
                    f"invalid {flag} {text!r}: expected KEY=VALUE pairs separated by commas",
                    hint=f"for example {flag} source=github,subject=owner/repo#12",
                )
            out[last] += "," + piece
            continue
        key, _, value = piece.partition("=")
        if key in out:
            raise InvalidArgumentError(f"{flag} {key!r} given twice")
        out[key], last = value, key
    return out


def parse_origin(text: str) -> dict[str, Any] | None:
    """``--origin``'s value as an Origin (None for ""); refused as the library refuses."""
    if not text:
        return None  # before the vocabulary's import: a plain list never loads it
    from agentsessions.v1.provenance import check_origin

    fields: dict[str, Any] = {}
    attributes: dict[str, str] = {}
    for key, value in pairs(text, "--origin").items():
        if key.startswith("attr."):
            attributes[key.removeprefix("attr.")] = value
        elif key in ("source", "subject", "uri"):
            fields[key] = value
        else:
            raise InvalidArgumentError(
                f"--origin has no field {key!r}: source, subject, uri or attr.KEY"
            )
    if attributes:
        fields["attributes"] = attributes
    return dict(check_origin(fields))


def parse_identity(text: str, flag: str = "--identity") -> dict[str, str] | None:
    """``--identity`` (or ``--actor``)'s value as an IdentityRef, None for ""."""
    from agentsessions.v1.provenance import check_identity

    if not text:
        return None
    fields = pairs(text, flag)
    unknown = sorted(set(fields) - {"principal", "issuer", "subject"})
    if unknown:
        raise InvalidArgumentError(f"{flag} has no field {unknown[0]!r}: {IDENTITY_HELP}")
    checked = check_identity(fields, flag.removeprefix("--"))
    if checked is None:
        raise InvalidArgumentError(f"{flag} is empty: {IDENTITY_HELP}")
    return checked


def describe_origin(origin: Any) -> str:
    """An origin on one line, as ``get`` shows it: ``source subject  uri  k=v``."""
    if not origin:
        return "-"
    words = [str(origin.get("source", "")), str(origin.get("subject", ""))]
    if origin.get("uri"):
        words.append(str(origin["uri"]))
    words += [f"{k}={v}" for k, v in sorted((origin.get("attributes") or {}).items())]
    return "  ".join(words)


def describe_identity(identity: Any) -> str:
    """An IdentityRef on one line: its principal, then ``(issuer, subject)`` when set."""
    if not identity:
        return "-"
    rest = ", ".join(str(identity[k]) for k in ("issuer", "subject") if identity.get(k))
    name = str(identity.get("principal", "")) or "?"
    return f"{name} ({rest})" if rest else name
