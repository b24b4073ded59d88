"""A helper module that neither defines a model class nor its forward, whose functions
change its own globals (test_helper_state.py): state an exported program may depend on."""

from __future__ import annotations

import types

COUNT = 0
LOGGED = 0
MODE = "a"
_NEXT = {"a": "b", "b": "c", "c": "a"}


def step() -> int:
    global COUNT
    COUNT += 1
    return COUNT


def log_call() -> None:
    global LOGGED
    LOGGED += 1


def rotate() -> str:
    global MODE
    MODE = _NEXT[MODE]
    return MODE


class Counter:
    """Module-level state behind a class method (``Counter.tick()``)."""

    @staticmethod
    def tick() -> int:
        return step()


class Tally:
    """State on a plain object the helper module holds (``tally.n``)."""

    def __init__(self) -> None:
        self.n = 0

    def bump(self) -> int:
        self.n += 1
        return self.n


tally = Tally()
settings = types.SimpleNamespace(scale=1)
HOOKS = [tally.bump]  # a callback kept in a list: a bound method of the module's object


def grow() -> int:
    settings.scale += 1
    return settings.scale


TABLE = {"grow": grow}  # a callback kept in a dict


def reset() -> None:
    global COUNT, LOGGED, MODE
    COUNT = LOGGED = 0
    MODE = "a"
    tally.n, settings.scale = 0, 1
