"""The ``flowledger`` command group that imports a subcommand's module only
when that subcommand runs (or the top-level help lists it): ``flowledger
worker`` does not pay for the API schemas the alert, job and recovery
commands format their output with (about 1.8 s of imports per process
otherwise, which every worker start and every CLI call paid).

A lazy subcommand is named by ``module:attribute``: a Typer app (a group such
as ``jobs``) or a function (a single command such as ``health``). A loader
function (``module:function`` with ``loader=True``) builds the Typer app
when several modules contribute commands to one group."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import typer
from typer._click import Command, Context  # Typer 0.29 types its groups with its vendored click
from typer.core import TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    target: str  # "package.module:attribute"
    loader: bool = False  # the attribute is a function returning the Typer app

    def load(self, name: str) -> Command:
        module_name, _, attribute = self.target.partition(":")
        value: Any = getattr(importlib.import_module(module_name), attribute)
        if self.loader:
            value = value()
        if isinstance(value, typer.Typer):
            command = typer.main.get_group(value)  # a group even with one command
            command.name = name
            return command
        single = typer.Typer()
        single.command(name)(value)
        return typer.main.get_command(single)


def lazy_group(commands: Mapping[str, LazyCommand]) -> type[TyperGroup]:
    """A Typer group class that offers ``commands`` beside the eagerly
    registered ones, each loaded once per group on first use."""

    class LazyGroup(TyperGroup):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._loaded: dict[str, Command] = {}

        def list_commands(self, ctx: Context) -> list[str]:
            eager = super().list_commands(ctx)
            return [*eager, *sorted(name for name in commands if name not in eager)]

        def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
            command = super().get_command(ctx, cmd_name)
            if command is not None or cmd_name not in commands:
                return command
            if cmd_name not in self._loaded:
                self._loaded[cmd_name] = commands[cmd_name].load(cmd_name)
            return self._loaded[cmd_name]

    return LazyGroup
