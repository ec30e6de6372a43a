"""How ``coderag … --help`` shows options: a flag (``--json``, ``--keep-jobs``, ``--help``)
takes no value, so it shows no type. typer's rich help writes ``<bool>`` beside every
flag, which reads as if the flag wanted a value (``--keep-jobs <bool>``). An option with a
value shows what the value is (``--port PORT``, ``--stalled-after SECONDS``, ``--name
NAME``), not the Python type (``<int range>``, ``<str>``, ``<float range>``)."""
from __future__ import annotations


def flags_without_a_type() -> None:
    """Make typer's rich help show no type for flags and counters, and a natural metavar
    (:func:`natural_metavar`) for options whose own is a Python type (idempotent)."""
    from typer.core import TyperArgument, TyperOption

    for cls in (TyperOption, TyperArgument):
        if not getattr(cls.display_type_rich, "coderag_flags", False):
            cls.display_type_rich = _natural(cls.display_type_rich)


def _natural(shown):
    def display_type_rich(self, ctx):
        if (getattr(self, "is_flag", False) or getattr(self, "count", False)) and self.metavar is None:
            return None
        if self.metavar is None and not getattr(self.type_descriptor, "is_choice", False):
            named = natural_metavar(self)
            if named is not None:
                return named
        return shown(self, ctx)

    display_type_rich.coderag_flags = True
    return display_type_rich


#: Words of an option's name that say the unit of its number (``--stalled-after``: seconds).
_UNITS = (("port", "PORT"), ("hours", "HOURS"), ("days", "DAYS"), ("seconds", "SECONDS"), ("timeout", "SECONDS"),
          ("after", "SECONDS"), ("heartbeat", "SECONDS"), ("interval", "SECONDS"), ("every", "SECONDS"))


def natural_metavar(option) -> str | None:
    """What the value of ``option`` is, in capitals: its unit for a number (``PORT``,
    ``SECONDS``, ``HOURS``; ``N`` for a count), its name for text or a path (``--name``:
    ``NAME``); ``None`` for anything else (a choice, a list: typer's own display)."""
    desc = option.type_descriptor
    if getattr(desc, "is_list", False) or getattr(desc, "is_tuple", False):
        return None
    longs = [o for o in option.opts if o.startswith("--")] or list(option.opts)
    name = (longs[0] if longs else option.name or "value").lstrip("-").lower()
    annotation = getattr(desc, "annotation", None)
    kind = getattr(desc, "ranged_type_name", None) if getattr(desc, "is_ranged", False) else None
    kind = kind or getattr(annotation, "__name__", "")
    if kind in ("int", "float"):
        for word, unit in _UNITS:
            if word in name.split("-"):
                return unit
        return "N" if kind == "int" else "NUMBER"
    if kind == "str" or getattr(desc, "is_path", False):
        return name.replace("-", "_").upper()
    return None
