"""Public names imported on first use (PEP 562 module ``__getattr__``), for the indexer's
interface modules: a command that needs only the call graph never pays for the Weaviate
client, torch or ONNX Runtime at start-up."""
from __future__ import annotations

from collections.abc import Callable
from importlib import import_module


def lazy_names(package: str, namespace: dict, where: dict[str, tuple[str, ...]],
               renamed: dict[str, str] | None = None) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a module whose public names live in other modules.

    ``where`` maps a module (relative to ``package``, e.g. ``".graph"``) to the names it
    provides; ``renamed`` maps a public name to the attribute's own name in its module.
    The first access imports the module and caches the value in ``namespace`` (the
    calling module's ``globals()``). An unknown name raises ``AttributeError``.
    """
    module_of = {name: module for module, names in where.items() for name in names}
    renamed = renamed or {}
    label = namespace.get("__name__", package)

    def __getattr__(name: str):
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {label!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), renamed.get(name, name))
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(module_of))

    return __getattr__, __dir__
