"""Model providers by name, and the model spec that the CLI's ``--model`` flag takes.

On the layer map (:mod:`agentsessions`) beside ``tools`` and ``runtimes``: over the
controller (whose ModelProvider seam they implement), under ``sessions``.

Spec grammar (surrounding whitespace ignored)::

    spec    = "" | "echo" | "scripted" [":" options] | "openai:" model ["," options] | plugin
    options = key "=" value *("," key "=" value)

- ``""`` or ``echo``: the built-in echo model (:mod:`.echo`), the default.
- ``scripted``: the offline scripted model (:mod:`.scripted`): ``scripted:seed=7``,
  ``scripted:file=answers.json``, ``scripted:nondeterministic=1``; plain ``scripted`` is seed 0.
- ``openai:MODEL``: an OpenAI-compatible chat-completions model (:mod:`.openai`), e.g.
  ``openai:gpt-4o-mini`` or ``openai:llama3:8b,base_url=http://127.0.0.1:11434/v1``. Options:
  ``base_url`` (else env ``MODEL_BASE_URL``, else ``https://api.openai.com/v1``), ``path``,
  ``auth_header``, ``connect_timeout`` and ``read_timeout`` (seconds).
- a name registered in :data:`MODELS` (in code, or by an entry point in the group
  ``agentsessions.models``): that provider, which takes no options.
- a NAME of the operator's catalog (:mod:`.catalog`, given to :func:`create_model`): the
  model its SPEC makes.

Any other spec (a misspelt ``scriptd:seed=7``, a bare ``gpt-4o-mini``) is refused: a spec
names its provider explicitly, so a typo can never send the user's input to a remote
endpoint. :func:`known_providers` lists what is accepted, for the error and ``--help``.

Invariants: :func:`create_model` touches no network and no file other than a scripted
``file``; every bad spec or option raises InvalidArgumentError naming it (an unknown provider
also lists the known ones); options given both
inline and in ``options`` must not disagree; an empty option value means "unset"; the API key
is never an option (it comes only from ``MODEL_API_KEY`` or ``OPENAI_API_KEY``); an error
quotes at most 200 bytes of the spec (:func:`.catalog.clip`: a spec is caller input).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.controller.registry import Registry
from agentsessions.controller.spi import ModelProvider
from agentsessions.errors import InvalidArgumentError
from agentsessions.models.catalog import CatalogModel, ModelCatalog, clip
from agentsessions.models.echo import EchoModel
from agentsessions.models.scripted import ScriptedModel
from agentsessions.valueclass import field, value

if TYPE_CHECKING:
    from agentsessions.models.openai import OpenAIModel

__all__ = [
    "MODELS",
    "EchoModel",
    "ModelCatalog",
    "ModelSpec",
    "OpenAIModel",
    "ScriptedModel",
    "create_model",
    "known_providers",
    "parse_spec",
]

MODELS: Registry[ModelProvider] = Registry("model", "agentsessions.models")
"""Model providers that need no options, by name (``echo``, ``scripted`` and plugins)."""
MODELS.register("echo", EchoModel)
MODELS.register("scripted", ScriptedModel)

_SECRET_OPTIONS = ("api_key", "key", "token")
_OPENAI = "openai"


@value(frozen=True)
class ModelSpec:
    """A parsed spec: the provider ``kind``, the ``model`` name (openai only) and options."""

    kind: str
    model: str = ""
    options: Mapping[str, str] = field(default_factory=dict)


def parse_spec(spec: str) -> ModelSpec:
    """Split a ``--model`` spec into kind, model and inline options (see the module doc)."""
    spec = spec.strip()
    head, colon, rest = spec.partition(":")
    quoted = clip(spec)
    if not spec:
        return ModelSpec("echo")
    if head == "scripted":
        return ModelSpec("scripted", options=_options(rest.split(","), spec))
    if head == _OPENAI:
        model, *items = rest.split(",")
        if not model.strip():
            raise InvalidArgumentError(f"model spec {quoted!r}: openai needs a model name")
        return ModelSpec("openai", model.strip(), _options(items, spec))
    if colon and MODELS.shared(head):
        raise InvalidArgumentError(f"model spec {quoted!r}: {head} takes no options")
    if MODELS.shared(spec):
        return ModelSpec(spec)
    # Never guess: falling back to the remote provider would send a typo's input off-host.
    raise InvalidArgumentError(
        f"unknown model provider {clip(head)!r} in model spec {quoted!r} "
        f"(known: {', '.join(known_providers())})",
        hint=_unknown_hint(spec),
    )


def _unknown_hint(spec: str) -> str:
    # ``llama3:8b`` probably means an OpenAI-compatible model; ``scriptd:seed=7`` a typo
    plain = "=" not in spec and "," not in spec and len(spec) <= 64
    remote = f"{_OPENAI}:{spec}" if plain else f"{_OPENAI}:MODEL"
    return (
        f"for example --model echo, --model scripted:seed=7 or --model {remote}"
        " (or a name the operator defines: serve --model NAME=SPEC)"
    )


def known_providers() -> list[str]:
    """The provider names a spec may start with: ``openai`` and every registered model."""
    return sorted({_OPENAI, *MODELS.names()})


def create_model(
    name: str,
    *,
    options: Mapping[str, str] | None = None,
    catalog: Mapping[str, str] | None = None,
) -> ModelProvider:
    """The model provider for spec ``name`` with extra ``options`` (e.g. from CLI flags);
    a NAME of ``catalog`` (the operator's, :mod:`.catalog`) stands for its SPEC: the
    provider its SPEC makes, asked as if each request named that SPEC (the request, and
    what the journal records of it, keeps the NAME)."""
    if catalog and name.strip() in catalog:
        resolved = catalog[name.strip()]
        return CatalogModel(create_model(resolved, options=options), resolved)
    spec = parse_spec(name)
    merged = _merge(spec.options, options or {}, name)
    if spec.kind == "scripted":
        return ScriptedModel.from_options(merged)
    if spec.kind == "openai":
        from agentsessions.models.openai import OpenAIModel

        return OpenAIModel.from_options(spec.model, merged)
    if merged:
        keys = clip(", ".join(sorted(merged)))
        raise InvalidArgumentError(f"model {spec.kind!r} takes no options, got [{keys}]")
    return MODELS.create(spec.kind)


def __getattr__(name: str) -> Any:
    # the OpenAI provider loads http.client, ssl and email (~10 ms): only a spec naming it
    if name == "OpenAIModel":
        from agentsessions.models.openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _options(items: list[str], spec: str) -> dict[str, str]:
    """``key=value`` items (empty items skipped); a key given twice is an error."""
    out: dict[str, str] = {}
    for item in items:
        if not item.strip():
            continue
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or not key:
            raise InvalidArgumentError(
                f"model spec {clip(spec)!r}: expected key=value, got {clip(item)!r}"
            )
        if key in out:
            raise InvalidArgumentError(
                f"model spec {clip(spec)!r}: option {clip(key)!r} given twice"
            )
        out[key] = value.strip()
    return out


def _merge(inline: Mapping[str, str], extra: Mapping[str, str], spec: str) -> dict[str, str]:
    """Inline and extra options together, empty values dropped; no key may disagree."""
    for key in (*inline, *extra):
        if key in _SECRET_OPTIONS:
            raise InvalidArgumentError(
                f"model option {clip(key)!r} is not accepted: the API key comes only from the"
                " MODEL_API_KEY or OPENAI_API_KEY environment variable"
            )
    merged = {k: v for k, v in inline.items() if v != ""}
    for key, option in extra.items():
        if option == "":
            continue
        if merged.get(key, option) != option:
            raise InvalidArgumentError(
                f"model spec {clip(spec)!r}: option {clip(key)!r} is {clip(merged[key])!r}"
                f" inline but {clip(option)!r}"
            )
        merged[key] = option
    return merged
