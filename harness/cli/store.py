"""The copy-on-write store's sub-commands: `store` (make store, make store-clean) and `store-bias` (what the store
does to a cell's figures against the disk's own filesystem)."""
from __future__ import annotations

from harness.cli.args import make_command, overrides
from harness.walks.sweep import CellOptions, add_cell_args


def add_store(sub) -> None:
    so = sub.add_parser("store", help="a copy-on-write store (XFS, reflink) for states and data, on a loop device")
    so.add_argument("--size", default="75g", help="its image's size (sparse; the disk beneath must hold it)")
    so.add_argument("--remove", action="store_true", help="unmount it and delete its image, states and all")
    so.set_defaults(func=_cmd_store)
    b = sub.add_parser("store-bias", help="one cell alternately on the disk and on the store, compared; resumable")
    b.add_argument("--engine", required=True)
    b.add_argument("--scenario", default="p99_5x")
    b.add_argument("--mem", help="memory limit of every cell")
    b.add_argument("--scale", type=float, help="fraction of 1x (default: the profile's)")
    add_cell_args(b)
    overrides(b)
    b.set_defaults(func=_cmd_store_bias, repeats=2)


def _cmd_store(args) -> int:
    from harness.state import cow_store
    from harness.units import parse_size_bytes
    if args.remove:
        for line in cow_store.remove() or ["no store here"]:
            print(line)
        return 0
    print(cow_store.make(parse_size_bytes(args.size)).says())
    return 0


def _cmd_store_bias(args) -> int:
    from harness.walks.store_bias import store_bias
    command = make_command("store-bias", args) + (f" REPEATS={args.repeats}" if args.repeats != 2 else "")
    return store_bias(args.scenario, args.engine, args.mem, args.scale, args.repeats, CellOptions.from_args(args),
                      args.results, command=command)
