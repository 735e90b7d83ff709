"""The error hierarchy: every class pickles whole (process pools and Spark tasks send them back to
the driver) and is caught by the builtin a pyarrow user would catch."""

import pickle

import pytest

from metaindex import errors

CLASSES = [
    getattr(errors, name)
    for name in dir(errors)
    if isinstance(getattr(errors, name), type)
    and issubclass(getattr(errors, name), errors.MetaIndexError)
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_error_pickles_with_type_and_message(cls):
    err = cls("something went wrong")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert str(back) == str(err)


def test_decode_error_keeps_its_position_fields_through_pickle():
    err = errors.DecodeError("short page", offset=12, needed=8, remaining=3)
    back = pickle.loads(pickle.dumps(err))
    assert (back.offset, back.needed, back.remaining) == (12, 8, 3)
    assert str(back) == str(err)
    assert isinstance(back, OSError) and isinstance(back, ValueError)
