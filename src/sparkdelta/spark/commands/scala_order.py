"""The order in which delta-spark applies the column changes of one ALTER TABLE statement.

delta-spark's catalog collects the changes of ``ALTER TABLE t ALTER COLUMN a ..., b ...``
in a Scala ``mutable.HashMap`` keyed by each column's path, and runs them in that map's
iteration order, not in the order written. The order is observable: it is the order of
``operationParameters.columns`` in the commit, and where two changes move columns (``a
FIRST, b FIRST``) it decides the resulting schema. So it is reproduced here exactly:
Scala 2.13's ``MurmurHash3.seqHash`` of the path (Java ``String.hashCode`` per part),
spread by ``HashMap.improveHash``, then bucket by bucket, each bucket in ascending hash
order, with the table doubling from 16 slots at a load factor of 0.75.
"""

from __future__ import annotations

from collections.abc import Sequence

_MASK = 0xFFFFFFFF


def _int(value: int) -> int:
    """``value`` as a Java ``int`` (two's complement, 32 bits)."""
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def _rotl(value: int, distance: int) -> int:
    value &= _MASK
    return _int((value << distance) | (value >> (32 - distance)))


def _mix_last(hash_: int, data: int) -> int:
    k = _rotl(_int(data * 0xCC9E2D51), 15)
    return _int(hash_ ^ _int(k * 0x1B873593))


def _mix(hash_: int, data: int) -> int:
    return _int(_rotl(_mix_last(hash_, data), 13) * 5 + 0xE6546B64)


def _avalanche(hash_: int) -> int:
    h = hash_ & _MASK
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return _int(h)


def string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units)."""
    encoded = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(encoded), 2):
        h = (31 * h + int.from_bytes(encoded[i : i + 2], "little")) & _MASK
    return _int(h)


_SEQ_SEED = string_hash("Seq")


def seq_hash(parts: Sequence[str]) -> int:
    """Scala 2.13's hash of an indexed ``Seq[String]`` (``MurmurHash3.indexedSeqHash``)."""
    hashes = [string_hash(p) for p in parts]
    h = _SEQ_SEED
    if len(hashes) < 2:
        return _avalanche(_int((_mix(h, hashes[0]) if hashes else h) ^ len(hashes)))
    h = _mix(h, hashes[0])
    first = h
    previous = hashes[1]
    step = _int(previous - hashes[0])
    for i in range(2, len(hashes)):
        h = _mix(h, previous)
        current = hashes[i]
        if step != _int(current - previous) or step == 0:
            for rest in hashes[i:]:
                h = _mix(h, rest)
            return _avalanche(_int(h ^ len(hashes)))
        previous = current
    # Hashes in arithmetic progression: Scala hashes them as a range.
    return _avalanche(_mix(_mix(first, step), previous))


def hash_map_order(keys: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``keys`` (distinct column paths) in the iteration order of a Scala ``mutable.HashMap`` holding them."""
    slots = 16
    while len(keys) >= int(slots * 0.75):
        slots *= 2
    improved = [(_int(h ^ ((h & _MASK) >> 16)), key) for key in keys for h in [seq_hash(key)]]
    return [key for _, key in sorted(improved, key=lambda item: (item[0] & (slots - 1), item[0]))]
