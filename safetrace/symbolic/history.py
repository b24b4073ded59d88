"""Names of an environment's states that two traces can share (``Env.state_name``).

An ``Env`` starts empty, and every change of its state is made by one of its described
methods (a new symbol, a guard, a requirement, a settled answer, a fact): the state it
reaches is a function of the state before and the method's arguments (where they came
from, ``origin``, only names them in messages) and of what the caller's probes answered
(a guard's ``precondition`` and ``required_from``).  So a state is named by the name
before it and that event: two environments that went through the same events, in the
same order, from the same configuration (``Env.note``), are in the same state, and a
computation that reads only the state and its arguments (``trace/memo.py``: a shape
rule's answer) gives both the same result.  A change made any other way (a block's facts
forgotten, ``scope.py``; a question whose answer came from a policy that looked at the
asking code) gives a name no other environment will ever have.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, TypeVar, cast

_LIMIT = 200_000  # names kept (a few MB); then the table starts again
_NAMES: dict[tuple[Any, ...], int] = {}
_COUNT = itertools.count(1)
ROOT = 0  # an empty environment's name


def after(name: int, event: tuple[Any, ...]) -> int:
    """The name of the state that `event` leads to from the state named `name`."""
    key = (name, event)
    found = _NAMES.get(key)
    if found is None:
        if len(_NAMES) >= _LIMIT:  # (names already handed out stay unique: new numbers)
            _NAMES.clear()
        found = _NAMES[key] = next(_COUNT)
    return found


def unique() -> int:
    """A name no state reached by described events will have."""
    return -next(_COUNT)


_F = TypeVar("_F", bound=Callable[..., Any])


def described(origin_at: int) -> Callable[[_F], _F]:
    """An ``Env`` method whose change of state is named by its arguments (but the
    positional or keyword ``origin``, at `origin_at`) and the guards it recorded; a raise
    after a change gives a unique name."""
    def wrap(method: _F) -> _F:
        what = method.__name__

        @functools.wraps(method)
        def run(env: Any, *args: Any, **kwargs: Any) -> Any:
            epoch, name, n_guards = env.epoch, env.state_name, len(env.guards)
            env.describing += 1
            try:
                out = method(env, *args, **kwargs)
            except BaseException:
                env.describing -= 1
                if env.epoch != epoch:
                    env.state_name = unique()
                raise
            env.describing -= 1
            if env.epoch != epoch and not env.describing and env.state_name == name:
                if not env.shares_state_names:  # (nothing kept: st.load's scratch envs)
                    env.state_name = unique()
                    return out
                kept = args[:origin_at] + args[origin_at + 1:]
                if kwargs:
                    kept += tuple(sorted((k, v) for k, v in kwargs.items() if k != "origin"))
                guards = tuple((g.cond, g.precondition, g.required_from, g.sizes)
                               for g in env.guards[n_guards:])
                try:
                    env.state_name = after(name, (what, kept, guards))
                except TypeError:  # (an argument that cannot name a state)
                    env.state_name = unique()
            return out
        return cast(_F, run)
    return wrap
