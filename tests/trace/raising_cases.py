"""Functions whose size questions test_raising.py reads (a module pytest does not rewrite:
its `assert` stays Python's)."""


def asserts(n):
    assert n > 1, "needs two"
    return n


def raises_if_small(n):
    if n < 2:
        raise ValueError(f"needs two, got {n}")
    return n


def branch(n):
    if n > 1:
        return n
    return 0


def caught(n):
    try:
        if n < 2:
            raise ValueError
    except ValueError:
        return 0
    return n


class Items:
    def __init__(self, n):
        self.n, self.i = n, 0

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration  # an iterator's end, not an error
        self.i += 1
        return self.i
