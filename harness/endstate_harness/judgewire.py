"""The judge's wire format: a canonical, typed encoding of plain data, and nothing else.

Also shipped as source to the child (:mod:`endstate_harness.inside.judge_child`): standard
library only, Python 3.8+.
"""

import base64
import datetime
import decimal
import fractions
import json
import time

MAX_DEPTH = 64
"""Deepest nesting of containers a message may carry."""

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Longest line either side accepts; a longer one ends the conversation."""


MAX_VALUES = 1000000
"""Most values (containers and scalars) one message may rebuild."""

MAX_SAME_HASH = 64
"""Most distinct values sharing one hash that a conversation may carry (see :class:`Budget`)."""

_MODULUS = (1 << 61) - 1
"""CPython's numeric hash modulus: two ints collide only when one is at least this large."""

_STEERABLE = (tuple, frozenset, complex, decimal.Decimal, fractions.Fraction,
              datetime.timedelta)
"""Types whose hash the sender can choose freely (numbers, and combinations of hashes); str
and bytes hash with a key the sender does not control, small ints and floats cannot collide
more than a few at a time."""


class WireError(ValueError):
    """A message that is not a valid encoding (malformed, too deep, too large, too costly)."""


class Budget:
    """What one side lets the other make its decoder do.

    Per message (:meth:`start`): at most :data:`MAX_VALUES` values and, when a deadline is
    given, no rebuilding past it (checked every few thousand values). Per conversation: at most
    :data:`MAX_SAME_HASH` distinct values whose hash the sender can steer share one hash, so a
    set or dict of them, here or in the code that receives them, costs linear time, not
    quadratic. Anything over a bound is a :class:`WireError`.
    """

    def __init__(self):
        self.left = MAX_VALUES
        self.deadline = None
        self.first = {}  # hash -> the first value seen with it
        self.many = {}  # hash -> set of the distinct values seen with it, once there are two

    def start(self, deadline=None):
        """A new message: a fresh count, and the monotonic time rebuilding must end by."""
        self.left = MAX_VALUES
        self.deadline = deadline

    def spend(self, count=1):
        self.left -= count
        if self.left < 0:
            raise WireError("a value of more than %d parts" % MAX_VALUES)
        if self.deadline is not None and self.left & 4095 == 0:
            if time.monotonic() > self.deadline:
                raise WireError("rebuilding the value took longer than the call's deadline")

    def note(self, value):
        """Count ``value`` among the distinct values of its hash (when the sender can steer
        that hash)."""
        kind = type(value)
        if kind is int:
            if -_MODULUS < value < _MODULUS:
                return
        elif kind not in _STEERABLE:
            return
        try:
            key = hash(value)
            seen = self.many.get(key)
            if seen is None:
                if key not in self.first:
                    self.first[key] = value
                    return
                other = self.first[key]
                if type(other) is kind and other == value:
                    return
                seen = self.many[key] = {other}
            if value in seen:  # at most MAX_SAME_HASH comparisons, in C
                return
        except Exception:  # unhashable or not comparable: no set or dict can hold it
            return
        if len(seen) >= MAX_SAME_HASH:
            raise WireError(
                "more than %d distinct values share one hash (a set or dict of them would take "
                "quadratic time to build)" % MAX_SAME_HASH
            )
        seen.add(value)


def encode(value, make_ref, depth=0):
    """``value`` as JSON-ready data; ``make_ref(obj)`` encodes what is not plain data."""
    if depth > MAX_DEPTH:
        raise WireError("value nested deeper than %d levels" % MAX_DEPTH)
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return {"T": "int", "v": str(value)}
    if kind is float:
        return {"T": "float", "v": float.hex(value)}
    if kind is list:
        return [encode(item, make_ref, depth + 1) for item in value]
    if kind is tuple:
        return {"T": "tuple", "v": [encode(item, make_ref, depth + 1) for item in value]}
    if kind is dict:
        return {
            "T": "dict",
            "v": [
                [encode(k, make_ref, depth + 1), encode(v, make_ref, depth + 1)]
                for k, v in value.items()
            ],
        }
    if kind is set or kind is frozenset:
        name = "set" if kind is set else "frozenset"
        return {"T": name, "v": [encode(item, make_ref, depth + 1) for item in value]}
    if kind is bytes:
        return {"T": "bytes", "v": base64.b64encode(value).decode("ascii")}
    if kind is complex:
        return {"T": "complex", "v": [float.hex(value.real), float.hex(value.imag)]}
    if kind is decimal.Decimal:
        return {"T": "decimal", "v": str(value)}
    if kind is fractions.Fraction:
        return {"T": "fraction", "v": [str(value.numerator), str(value.denominator)]}
    if kind is datetime.datetime and value.tzinfo is None:
        return {"T": "datetime", "v": value.isoformat()}
    if kind is datetime.date:
        return {"T": "date", "v": value.isoformat()}
    if kind is datetime.time and value.tzinfo is None:
        return {"T": "time", "v": value.isoformat()}
    if kind is datetime.timedelta:
        return {"T": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    return make_ref(value)


def _int(text):
    if type(text) is not str or len(text) > 4000:
        raise WireError("bad integer")
    return int(text)


def _flt(text):
    if type(text) is not str or len(text) > 64:
        raise WireError("bad float")
    return float.fromhex(text)


def decode(data, load_ref, depth=0, budget=None):
    """The value ``data`` encodes; ``load_ref(dict)`` turns a reference into an object.

    ``budget`` (a :class:`Budget`) bounds the work; without one, a fresh one with no deadline.

    Raises:
        WireError: ``data`` is not something :func:`encode` makes, or rebuilding it would
            break the budget.
    """
    if budget is None:
        budget = Budget()
    value = _decode(data, load_ref, depth, budget)
    return value


def _decode(data, load_ref, depth, budget):
    if depth > MAX_DEPTH:
        raise WireError("value nested deeper than %d levels" % MAX_DEPTH)
    budget.spend()
    kind = type(data)
    if data is None or kind is bool or kind is str:
        return data
    if kind is list:
        return [_decode(item, load_ref, depth + 1, budget) for item in data]
    if kind is not dict or type(data.get("T")) is not str:
        raise WireError("not an encoded value: %s" % kind.__name__)
    tag, v = data["T"], data.get("v")
    try:
        if tag == "ref":
            return load_ref(data)
        value = _scalar(tag, v)
        if value is _NOT_SCALAR:
            value = _container(tag, v, load_ref, depth, budget)
    except WireError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
        raise WireError("bad %s: %s" % (tag, exc)) from None
    budget.note(value)
    return value


_NOT_SCALAR = object()


def _scalar(tag, v):
    if tag == "int":
        return _int(v)
    if tag == "float":
        return _flt(v)
    if tag == "bytes":
        return base64.b64decode(v, validate=True)
    if tag == "complex":
        return complex(_flt(v[0]), _flt(v[1]))
    if tag == "decimal":
        if type(v) is not str or len(v) > 4000:
            raise WireError("bad decimal")
        return decimal.Decimal(v)
    if tag == "fraction":
        return fractions.Fraction(_int(v[0]), _int(v[1]))
    if tag in ("datetime", "date", "time"):
        if type(v) is not str or len(v) > 64:
            raise WireError("bad %s" % tag)
        cls = {"datetime": datetime.datetime, "date": datetime.date, "time": datetime.time}
        return cls[tag].fromisoformat(v)  # type: ignore[attr-defined]
    if tag == "timedelta":
        return datetime.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    return _NOT_SCALAR


def _container(tag, v, load_ref, depth, budget):
    """A tuple, set, frozenset or dict; its items are counted by the budget before any set
    or dict is built of them, so colliding hashes are refused before they cost anything."""
    if tag in ("tuple", "set", "frozenset"):
        if type(v) is not list:
            raise WireError("bad %s" % tag)
        items = [_decode(item, load_ref, depth + 1, budget) for item in v]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict":
        if type(v) is not list:
            raise WireError("bad dict")
        pairs = []
        for pair in v:
            if type(pair) is not list or len(pair) != 2:
                raise WireError("bad dict item")
            pairs.append((_decode(pair[0], load_ref, depth + 1, budget),
                          _decode(pair[1], load_ref, depth + 1, budget)))
        return dict(pairs)
    raise WireError("unknown tag %r" % tag)


def dumps(message):
    """One message as one line of ASCII JSON (no raw newline can occur inside)."""
    return (json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def loads(line):
    """Parse one line; raises :class:`WireError` for anything that is not a JSON object."""
    if len(line) > MAX_MESSAGE_BYTES:
        raise WireError("message longer than %d bytes" % MAX_MESSAGE_BYTES)
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise WireError("not JSON: %s" % exc) from None
    if type(message) is not dict:
        raise WireError("a message must be a JSON object")
    return message
