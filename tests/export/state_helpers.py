"""A helper module that neither defines a model class nor its forward, whose functions
change its own globals (test_helper_state.py): state an exported program may depend on."""

from __future__ import annotations

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


def reset() -> None:
    global COUNT, LOGGED, MODE
    COUNT = LOGGED = 0
    MODE = "a"
