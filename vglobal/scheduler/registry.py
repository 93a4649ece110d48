"""Names of the actions and plugins the conf may use, and their builders.

Plugin modules register themselves on import (``register_plugin``); ``plugin_names`` imports the
plugin package first so the conf parser always sees every built-in plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vglobal.scheduler.conf import PluginOption
    from vglobal.scheduler.framework import Plugin
    from vglobal.scheduler.session import Session

ACTION_NAMES = frozenset({"enqueue", "allocate", "backfill", "preempt", "reclaim"})

PluginBuilder = Callable[["PluginOption"], "Plugin"]
ActionFn = Callable[["Session"], None]

_PLUGINS: dict[str, PluginBuilder] = {}
_ACTIONS: dict[str, ActionFn] = {}


def register_plugin(name: str, builder: PluginBuilder) -> None:
    if name in _PLUGINS:
        raise ValueError(f"plugin {name!r} registered twice")
    _PLUGINS[name] = builder


def register_action(name: str, fn: ActionFn) -> None:
    if name not in ACTION_NAMES:
        raise ValueError(f"unknown action {name!r}")
    _ACTIONS[name] = fn


def _load() -> None:
    import vglobal.scheduler.actions
    import vglobal.scheduler.plugins  # noqa: F401


def plugin_names() -> frozenset[str]:
    _load()
    return frozenset(_PLUGINS)


def build_plugin(option: PluginOption) -> Plugin:
    _load()
    return _PLUGINS[option.name](option)


def action(name: str) -> ActionFn:
    _load()
    return _ACTIONS[name]
