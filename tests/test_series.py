"""The bounded (time, value) series the tracker keeps per run, and its state-file form."""

from __future__ import annotations

import math

import pytest

from exporter.core.series import Series


def test_it_keeps_the_newest_points_oldest_first() -> None:
    s: Series[int] = Series(3, "q")
    for i in range(5):
        s.append(float(i), i * 10)
    assert list(s) == [(2.0, 20), (3.0, 30), (4.0, 40)]
    assert s[-1] == (4.0, 40) and s[1:] == [(3.0, 30), (4.0, 40)] and len(s) == 3
    s.reset(9.0, 1)
    assert list(s) == [(9.0, 1)]


def test_bytes_round_trip_keeps_the_newest_and_refuses_what_is_not_whole() -> None:
    s: Series[float] = Series(10)
    for i in range(6):
        s.append(100.0 + i, 0.5 * i)
    times, values = s.to_bytes(last=4)
    back: Series[float] = Series.from_bytes(3, "d", times, values)
    assert list(back) == [(103.0, 1.5), (104.0, 2.0), (105.0, 2.5)]  # newest maxlen of them
    with pytest.raises(ValueError):
        Series.from_bytes(3, "d", times[:-1], values[:-1])  # not a whole number of points
    with pytest.raises(ValueError):
        Series.from_bytes(3, "d", times, values[:8])  # columns of different lengths
    nan = Series[float](2)
    nan.append(math.nan, 1.0)
    with pytest.raises(ValueError):
        Series.from_bytes(2, "d", *nan.to_bytes())  # a time that is not finite


def test_triples_keep_the_newest_and_stay_in_step() -> None:
    from exporter.core.series import Triples

    record = Triples(3, [(1.0, 10, 0.5), (2.0, 20, 0.6)])
    record.append((3.0, 30, 0.7))
    record.append((4.0, 40, 0.8))
    assert list(record) == [(2.0, 20, 0.6), (3.0, 30, 0.7), (4.0, 40, 0.8)]
    assert record[-1] == (4.0, 40, 0.8) and record[:1] == [(2.0, 20, 0.6)]
    with pytest.raises(OverflowError):
        record.append((5.0, 2**63, 0.9))  # a step the column cannot hold adds nothing
    assert len(record) == 3 and record[-1] == (4.0, 40, 0.8)
    record.clear()
    assert not record
