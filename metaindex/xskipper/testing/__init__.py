"""Test helpers with xskipper's names (``xskipper.testing``)."""
