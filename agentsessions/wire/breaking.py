"""The wire's breaking-change gate: what a new descriptor set may change relative to the last
committed one (``proto/agentsessions.v1.binpb``).

The rule is "additive only", judged the way a client built from the old protos sees it, on
the wire and in proto3-JSON (which the content hash is computed over, so a field's *name* is
part of the contract too). Allowed: new files, messages, enums, enum values, fields,
services and RPCs, and comment changes. Refused, each reported as one line naming the
element: a removed file, message, enum, enum value, field, service or RPC or reserved number;
a field renumbered, renamed, retyped, moved in or out of a oneof, or whose label or explicit
presence changed; an enum value renumbered or renamed; an RPC's request/response type or
streaming changed; a changed package or ``go_package``. The reference gates the same with
``buf breaking``; this is that check for our four files, with no tool outside the test deps.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from google.protobuf import descriptor_pb2 as pb

FileSet = pb.FileDescriptorSet


def breaking_changes(old: FileSet, new: FileSet) -> list[str]:
    """Every non-additive change from ``old`` to ``new``, one line each ([] = compatible)."""
    new_files = {f.name: f for f in new.file}
    out: list[str] = []
    for f in old.file:
        nf = new_files.get(f.name)
        if nf is None:
            out.append(f"file {f.name}: removed")
            continue
        out.extend(_file(f, nf))
    return out


def _file(old: pb.FileDescriptorProto, new: pb.FileDescriptorProto) -> Iterator[str]:
    where = f"file {old.name}"
    if old.package != new.package:
        yield f"{where}: package changed from {old.package!r} to {new.package!r}"
    if old.options.go_package != new.options.go_package:
        yield f"{where}: go_package changed from {old.options.go_package!r}"
    prefix = old.package
    yield from _messages(prefix, old.message_type, new.message_type)
    yield from _enums(prefix, old.enum_type, new.enum_type)
    new_services = {s.name: s for s in new.service}
    for svc in old.service:
        name = f"{prefix}.{svc.name}"
        nsvc = new_services.get(svc.name)
        if nsvc is None:
            yield f"service {name}: removed"
            continue
        yield from _service(name, svc, nsvc)


def _messages(
    prefix: str, old: Iterable[pb.DescriptorProto], new: Iterable[pb.DescriptorProto]
) -> Iterator[str]:
    by_name = {m.name: m for m in new}
    for m in old:
        name = f"{prefix}.{m.name}"
        nm = by_name.get(m.name)
        if nm is None:
            yield f"message {name}: removed"
            continue
        yield from _message(name, m, nm)


def _message(name: str, old: pb.DescriptorProto, new: pb.DescriptorProto) -> Iterator[str]:
    yield from _messages(name, old.nested_type, new.nested_type)
    yield from _enums(name, old.enum_type, new.enum_type)
    new_by_number = {f.number: f for f in new.field}
    new_by_name = {f.name: f for f in new.field}
    for f in old.field:
        where = f"field {name}.{f.name} = {f.number}"
        nf = new_by_number.get(f.number)
        if nf is None:
            moved = new_by_name.get(f.name)
            if moved is not None:
                yield f"{where}: renumbered to {moved.number}"
            else:
                yield f"{where}: removed"
            continue
        yield from _field(where, old, f, new, nf)
    new_ranges = {(r.start, r.end) for r in new.reserved_range}
    for r in old.reserved_range:
        if (r.start, r.end) not in new_ranges:
            yield f"message {name}: reserved numbers {r.start}..{r.end - 1} no longer reserved"
    for reserved in set(old.reserved_name) - set(new.reserved_name):
        yield f"message {name}: reserved name {reserved!r} no longer reserved"


def _field(
    where: str,
    old_msg: pb.DescriptorProto,
    old: pb.FieldDescriptorProto,
    new_msg: pb.DescriptorProto,
    new: pb.FieldDescriptorProto,
) -> Iterator[str]:
    if old.name != new.name:
        yield f"{where}: renamed to {new.name!r} (proto3-JSON and the content hash use names)"
    if _json_name(old) != _json_name(new):
        yield f"{where}: json_name changed from {_json_name(old)!r} to {_json_name(new)!r}"
    if (old.type, old.type_name) != (new.type, new.type_name):
        yield f"{where}: type changed from {_type(old)} to {_type(new)}"
    if old.label != new.label:
        yield f"{where}: label changed from {_label(old)} to {_label(new)}"
    if old.proto3_optional != new.proto3_optional:
        yield f"{where}: explicit presence (optional) changed"
    was, now = _oneof(old_msg, old), _oneof(new_msg, new)
    if was != now:
        yield f"{where}: oneof changed from {was or '(none)'} to {now or '(none)'}"


def _json_name(f: pb.FieldDescriptorProto) -> str:
    """The JSON name in effect: the declared one, else protoc's lowerCamelCase default (a
    descriptor copied from a loaded module leaves it unset)."""
    if f.HasField("json_name"):
        return f.json_name
    head, *rest = f.name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _oneof(msg: pb.DescriptorProto, f: pb.FieldDescriptorProto) -> str:
    """The real (not synthetic ``optional``) oneof ``f`` belongs to, "" for none."""
    if not f.HasField("oneof_index") or f.proto3_optional:
        return ""
    return msg.oneof_decl[f.oneof_index].name


def _type(f: pb.FieldDescriptorProto) -> str:
    name = pb.FieldDescriptorProto.Type.Name(f.type).removeprefix("TYPE_").lower()
    return f"{name} {f.type_name.lstrip('.')}" if f.type_name else name


def _label(f: pb.FieldDescriptorProto) -> str:
    return pb.FieldDescriptorProto.Label.Name(f.label).removeprefix("LABEL_").lower()


def _enums(
    prefix: str, old: Iterable[pb.EnumDescriptorProto], new: Iterable[pb.EnumDescriptorProto]
) -> Iterator[str]:
    by_name = {e.name: e for e in new}
    for e in old:
        name = f"{prefix}.{e.name}"
        ne = by_name.get(e.name)
        if ne is None:
            yield f"enum {name}: removed"
            continue
        new_by_number = {v.number: v.name for v in ne.value}
        new_by_name = {v.name: v.number for v in ne.value}
        for v in e.value:
            where = f"enum value {name}.{v.name} = {v.number}"
            now = new_by_number.get(v.number)
            if now is None:
                if v.name in new_by_name:
                    yield f"{where}: renumbered to {new_by_name[v.name]}"
                else:
                    yield f"{where}: removed"
            elif now != v.name:
                yield f"{where}: renamed to {now!r} (proto3-JSON writes enum names)"


def _service(
    name: str, old: pb.ServiceDescriptorProto, new: pb.ServiceDescriptorProto
) -> Iterator[str]:
    by_name = {m.name: m for m in new.method}
    for m in old.method:
        where = f"rpc {name}.{m.name}"
        nm = by_name.get(m.name)
        if nm is None:
            yield f"{where}: removed"
            continue
        if m.input_type != nm.input_type:
            yield f"{where}: request changed from {m.input_type} to {nm.input_type}"
        if m.output_type != nm.output_type:
            yield f"{where}: response changed from {m.output_type} to {nm.output_type}"
        if m.client_streaming != nm.client_streaming:
            yield f"{where}: client streaming changed to {nm.client_streaming}"
        if m.server_streaming != nm.server_streaming:
            yield f"{where}: server streaming changed to {nm.server_streaming}"
