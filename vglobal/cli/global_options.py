"""Global options anywhere on the command line: ``vglobal agent --hub H ...`` works as
``vglobal --hub H agent ...`` does. The root group moves its own options found after the
subcommand to the front before click parses; an option name some subcommand also defines stays
where it is (it is that subcommand's)."""

from __future__ import annotations

from collections.abc import Iterator

import click


def _commands(group: click.Group) -> Iterator[click.Command]:
    for cmd in group.commands.values():
        yield cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd)


def _names(params: list[click.Parameter]) -> dict[str, click.Option]:
    out: dict[str, click.Option] = {}
    for p in params:
        if isinstance(p, click.Option):
            for name in (*p.opts, *p.secondary_opts):
                out[name] = p
    return out


def hoist(group: click.Group, args: list[str]) -> list[str]:
    """``args`` with the group's own options (and their values) moved before the subcommand."""
    own = {n: o for n, o in _names(group.params).items() if n not in ("-h", "--help")}
    taken = {n for cmd in _commands(group) for n in _names(cmd.params)}
    hoistable = {n: o for n, o in own.items() if n not in taken}
    front: list[str] = []
    rest: list[str] = []
    i = 0
    seen_command = False
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if seen_command and name in hoistable:
            opt = hoistable[name]
            takes_value = not (opt.is_flag or opt.count) and "=" not in arg
            front.append(arg)
            if takes_value and i + 1 < len(args):
                front.append(args[i + 1])
                i += 1
        else:
            if not arg.startswith("-") and not seen_command and _is_value_of(own, args, i):
                pass
            elif not arg.startswith("-"):
                seen_command = True
            rest.append(arg)
        i += 1
    return front + rest


def _is_value_of(own: dict[str, click.Option], args: list[str], i: int) -> bool:
    """Is ``args[i]`` the value of a group option just before it (``--hub H agent``)?"""
    if i == 0:
        return False
    prev = args[i - 1]
    opt = own.get(prev)
    return opt is not None and not (opt.is_flag or opt.count)


class GlobalOptionsGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist(self, args))
