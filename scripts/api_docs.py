"""A griffe extension for the API reference (mkdocs.yml loads it): what griffe, reading the
source without running it, would show otherwise as the code is written rather than as a caller
meets it.

- each `X_async = _in_thread(X)` of s3bulk/api.py is shown as the `async def` it is at run time:
  griffe sees an attribute with no docstring (the wrapper gets `X`'s signature only when
  `_named_after` runs), help() shows `X`'s parameters and result;
- a size field of TransferOptions (`part_size: Size = size_field(8 * MiB)`, a descriptor only a
  type checker sees: config/sizes.py) is shown as what a caller passes, `int | str = 8 * MiB`;
- a NamedTuple (ObjectInfo) shows its fields as a dataclass does, as its constructor's signature."""

from __future__ import annotations

from typing import Any

import griffe


class ApiReference(griffe.Extension):
    """The three rewrites above, on the loaded s3bulk package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != "s3bulk":
            return
        api = pkg["api"]
        _async_twins(api)
        _size_fields(pkg["engine"]["plan"]["TransferOptions"])
        _named_tuple_init(pkg["model"]["ObjectInfo"])


def _async_twins(api: griffe.Module) -> None:
    for name, member in list(api.members.items()):
        if member.is_alias or not member.is_attribute:
            continue
        value = member.value
        if not (isinstance(value, griffe.ExprCall) and str(value.function) == "_in_thread"
                and len(value.arguments) == 1):
            continue
        target = api[str(value.arguments[0])]
        twin = griffe.Function(name, parameters=target.parameters, returns=target.returns,
                               lineno=member.lineno, endlineno=member.endlineno, parent=api)
        twin.docstring = griffe.Docstring(
            f"`{target.name}` awaited inside a running event loop: it runs in a thread of its own, so the "
            "loop stays free. Same arguments, same result.", parent=twin)
        twin.labels.add("async")
        api.set_member(name, twin)


def _size_fields(cls: griffe.Class) -> None:
    sizes = set()
    for name, member in cls.members.items():
        if member.is_attribute and str(member.annotation) == "Size":
            sizes.add(name)
            member.annotation = "int | str"
            if isinstance(member.value, griffe.ExprCall) and str(member.value.function) == "size_field":
                member.value = member.value.arguments[0]
    init = cls.members.get("__init__")
    for parameter in init.parameters if init is not None else ():
        if parameter.name in sizes:
            parameter.annotation = "int | str"
            if isinstance(parameter.default, griffe.ExprCall) and str(parameter.default.function) == "size_field":
                parameter.default = parameter.default.arguments[0]


def _named_tuple_init(cls: griffe.Class) -> None:
    fields = [m for m in cls.members.values() if m.is_attribute and not m.name.startswith("_")]
    parameters = [griffe.Parameter(f.name, annotation=f.annotation, default=f.value,
                                   kind=griffe.ParameterKind.positional_or_keyword) for f in fields]
    init = griffe.Function("__init__", parameters=griffe.Parameters(
        griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword), *parameters), returns="None",
        parent=cls)
    cls.set_member("__init__", init)
