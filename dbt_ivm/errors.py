"""Typed errors. Every message says what is wrong and what to do instead."""

from __future__ import annotations


class IvmError(Exception):
    """Base class of every error the engine raises on purpose."""


class UnsupportedView(IvmError):
    """The model cannot be maintained incrementally; raised before any SQL runs."""

    def __init__(self, construct: str, hint: str = "", position: str | None = None):
        self.construct = construct
        self.hint = hint or "use materialized='table' for this model"
        self.position = position
        where = f" at {position}" if position else ""
        super().__init__(f"fast_mv cannot maintain this model: {construct}{where}; {self.hint}")


class SourceError(IvmError):
    """A source is not usable: not Delta, no change data feed, a view, missing."""


class StateError(IvmError):
    """The view's stored state or the sources' history does not allow a refresh."""


class LostHistory(StateError):
    """A source's change feed cannot be read for the versions a refresh needs (vacuumed, or change
    data feed off for part of them): only a rebuild can bring the view up to date."""

    def __init__(self, message: str, reason: str):
        self.reason = reason  # what cannot be read, without the advice
        super().__init__(message)


class ConfigError(IvmError):
    """A model config the engine cannot use (e.g. a unique_key that is not a column of the model)."""
