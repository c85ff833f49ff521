"""What a theory mutation is, and how one is applied (the catalogue itself: theory_mutants.py).

A `Mutation` edits one function of `pytest_anatomy/theory/` (or the format table the GGUF ledger reads; a class
member such as a property, named "Class.member") by an exact source replacement, which must match the current source
exactly once, so a refactor that moves the code fails loudly instead of silently mutating nothing; or, a `catalog`
mutation, scales one number of the hardware catalog in place. `apply` does either; `rebind` points the bindings
taken before it at the mutant; `catches` says whether a ledger entry catches a mutation (a diverging prediction).
Used by the `theory_mutants` plugin (one mutation per interpreter) and `mutant_batch` (one fork per mutation).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Mutation:
    name: str
    area: str
    what: str
    module: str  # dotted module holding the function
    function: str
    old: str  # exact source text, present exactly once in the function
    new: str
    selection: tuple[str, ...]  # pytest paths / node ids replayed for this mutation
    keyword: str = ""  # -k expression narrowing the selection ("" = none)
    survivor: str = ""  # non-empty: a known survivor, and why no reconciliation can catch it
    # "card.field": a number of the hardware catalog (specs/hardware.py) scaled by `factor` in place, instead of a
    # source edit (module, function, old and new then unused); "card.peak_flops" scales every dtype's peak
    catalog: str = ""
    factor: float = 1.0

    @property
    def forkable(self) -> bool:
        """Whether mutant_batch may apply it after collection: a module-level function, whose calls during collection
        its tripwire sees. A catalog number or a class member is read where no tripwire looks: replayed alone."""
        return not self.catalog and "." not in self.function



def _owner(m: Mutation) -> object:
    """The module, or the class of a "Class.member" function, that holds the mutated function."""
    owner: object = importlib.import_module(m.module)
    for part in m.function.split(".")[:-1]:
        owner = getattr(owner, part)
    return owner


def member(m: Mutation) -> object:
    """The mutated function as its owner holds it (a property object for a property)."""
    return vars(_owner(m))[m.function.rsplit(".", 1)[-1]]


def catalog_value(m: Mutation) -> object:
    """The catalog number a `catalog` mutation scales, as it is now."""
    from pytest_anatomy.specs.hardware import HARDWARE

    card, name = m.catalog.split(".", 1)
    return getattr(HARDWARE[card], name)


def mutated_source(m: Mutation) -> str:
    held = member(m)
    source = textwrap.dedent(inspect.getsource(held.fget if isinstance(held, property) else held))
    found = source.count(m.old)
    if found != 1:
        raise RuntimeError(f"mutation {m.name}: {m.old!r} occurs {found} times in {m.module}.{m.function}, "
                           "not once; update the catalogue to the current source")
    return source.replace(m.old, m.new)


def apply(m: Mutation) -> None:
    """Redefine the function with its own module's globals (so they stay live), where it was defined (the module, or
    its class); or scale the catalog number in place, on the one HardwareSpec object every target and test holds."""
    if m.catalog:
        from pytest_anatomy.specs.hardware import HARDWARE

        card, name = m.catalog.split(".", 1)
        value = catalog_value(m)
        if isinstance(value, Mapping):  # peak_flops: every dtype's peak
            scaled: object = MappingProxyType({k: v * m.factor for k, v in value.items()})
        else:
            scaled = float(value) * m.factor  # type: ignore[arg-type]
        object.__setattr__(HARDWARE[card], name, scaled)  # a frozen dataclass: the mutant's one way in
        return
    module = importlib.import_module(m.module)
    # The theory modules postpone annotations; so must the redefinition, or it would evaluate
    # names they import only for type checking.
    code = compile("from __future__ import annotations\n" + mutated_source(m), f"<mutant {m.name}>", "exec")
    defined: dict[str, object] = {}
    exec(code, module.__dict__, defined)  # noqa: S102 - the point of a mutant
    name = m.function.rsplit(".", 1)[-1]
    setattr(_owner(m), name, defined[name])


def rebind(m: Mutation, original: object) -> None:
    """Point every `from ... import f` binding taken before the mutation at the mutant."""
    mutant = getattr(importlib.import_module(m.module), m.function)
    for mod in list(sys.modules.values()):
        namespace = getattr(mod, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if value is original:
                namespace[key] = mutant


CATCHING_KINDS = ("prediction",)  # the reconciliation kinds whose diverge catches a mutation (module docstring)


def catches(entry: dict) -> bool:
    """Whether this ledger entry catches a mutation: a diverging prediction."""
    return entry.get("verdict") == "diverge" and entry.get("kind") in CATCHING_KINDS
