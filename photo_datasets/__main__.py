"""`python -m photo_datasets COMMAND [ARGS...]`: the package's commands, one entry point.

Alone or with `--help` it lists them; `COMMAND --help` gives a command's own arguments.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Sequence

# Imported only once chosen: most import TensorFlow, which the list need not wait for.
COMMANDS = {
    "demo": "photo_datasets.commands.demo",
    "train": "photo_datasets.commands.train",
    "show": "photo_datasets.commands.show",
    "report": "photo_datasets.commands.report",
    "verify": "photo_datasets.commands.verify",
    "doctor": "photo_datasets.commands.doctor",
    "data_service": "photo_datasets.reading.data_service",
    "random_access": "photo_datasets.reading.random_access",
}


def _summary(module: str) -> str:
  """The first line of a module's docstring, read from its source without importing it."""
  spec = importlib.util.find_spec(module)
  assert spec is not None and spec.origin is not None
  with open(spec.origin, encoding="utf-8") as f:
    return (ast.get_docstring(ast.parse(f.read())) or "").partition("\n")[0]


def main(argv: Sequence[str] | None = None) -> None:
  args = list(sys.argv[1:] if argv is None else argv)
  if args and args[0] in COMMANDS:
    # A command's parser without `prog` names itself after sys.argv[0].
    sys.argv[0] = f"python -m photo_datasets {args[0]}"
    importlib.import_module(COMMANDS[args[0]]).main(args[1:])
    return
  width = max(map(len, COMMANDS))
  listing = "\n".join(["usage: python -m photo_datasets COMMAND [ARGS...]", "", "commands:",
                       *(f"  {name:<{width}}  {_summary(module)}"
                         for name, module in COMMANDS.items())])
  if args[:1] in (["-h"], ["--help"]):
    print(listing)
    return
  print(listing, file=sys.stderr)
  if args:
    print(f"\nerror: no command {args[0]!r}", file=sys.stderr)
  sys.exit(2)  # A missing or unknown command is a usage error, as argparse reports one.


if __name__ == "__main__":
  main()
