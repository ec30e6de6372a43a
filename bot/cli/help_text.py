"""How ``coderag … --help`` shows options: a flag (``--json``, ``--keep-jobs``, ``--help``)
takes no value, so it shows no type. typer's rich help writes ``<bool>`` beside every
flag, which reads as if the flag wanted a value (``--keep-jobs <bool>``)."""
from __future__ import annotations


def flags_without_a_type() -> None:
    """Make typer's rich help show no type for flags and counters (idempotent); options
    that take a value keep theirs (``<int range>``, ``<str>``)."""
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "coderag_flags", False):
        return
    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        if (getattr(self, "is_flag", False) or getattr(self, "count", False)) and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich.coderag_flags = True
    TyperOption.display_type_rich = display_type_rich
