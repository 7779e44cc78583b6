"""The judge's wire format: a canonical, typed encoding of plain data, and nothing else.

Also shipped as source to the child (:mod:`endstate_harness.inside.judge_child`): standard
library only, Python 3.8+.
"""

import base64
import datetime
import decimal
import fractions
import json

MAX_DEPTH = 64
"""Deepest nesting of containers a message may carry."""

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Longest line either side accepts; a longer one ends the conversation."""


class WireError(ValueError):
    """A message that is not a valid encoding (malformed, too deep, too large)."""


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


def decode(data, load_ref, depth=0):
    """The value ``data`` encodes; ``load_ref(dict)`` turns a reference into an object.

    Raises:
        WireError: ``data`` is not something :func:`encode` makes.
    """
    if depth > MAX_DEPTH:
        raise WireError("value nested deeper than %d levels" % MAX_DEPTH)
    kind = type(data)
    if data is None or kind is bool or kind is str:
        return data
    if kind is list:
        return [decode(item, load_ref, depth + 1) for item in data]
    if kind is not dict or type(data.get("T")) is not str:
        raise WireError("not an encoded value: %s" % kind.__name__)
    tag, v = data["T"], data.get("v")
    try:
        if tag == "int":
            return _int(v)
        if tag == "float":
            return _flt(v)
        if tag == "ref":
            return load_ref(data)
        if tag in ("tuple", "set", "frozenset"):
            if type(v) is not list:
                raise WireError("bad %s" % tag)
            items = [decode(item, load_ref, depth + 1) for item in v]
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict":
            if type(v) is not list:
                raise WireError("bad dict")
            out = {}
            for pair in v:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("bad dict item")
                out[decode(pair[0], load_ref, depth + 1)] = decode(pair[1], load_ref, depth + 1)
            return out
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
    except WireError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
        raise WireError("bad %s: %s" % (tag, exc)) from None
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
