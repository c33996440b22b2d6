"""The engine's hooks: what feature apps plug into a run's life, so the engine never imports them.

A feature registers its function in its AppConfig.ready(); the engine calls every registered
function at its point of the run's life, in the order they were registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from delegation.models import Run

# A new expert's run, before it is written: its pinned config, as the feature would have it
# (e.g. an eval turn's draft), given the model calls its delegation granted it.
ChildPin = Callable[[Run, int], dict[str, Any]]
_child_pins: list[ChildPin] = []


def child_pin_register(pin: ChildPin) -> None:
    """Have `pin` adjust the config of every expert's run before it is written."""
    if pin not in _child_pins:
        _child_pins.append(pin)


def child_config(child: Run, *, calls_granted: int) -> dict[str, Any]:
    """The config a new expert's run pins, after every registered `ChildPin`."""
    config = child.agent_config
    for pin in _child_pins:
        child.agent_config = config = pin(child, calls_granted)
    return config
