"""`python -m harness.registry_cli names|debian-packages|images|side-requirements`: what the Makefile and
docker/images.sh read of the discovered engines (harness/registry.py), one plain line each."""
from __future__ import annotations

import sys

from harness.errors import ConfigError
from harness.registry import image_builds, manifest, manifests, names, side_path


def main(argv: list[str]) -> int:
    """names | debian-packages | images ENGINE... (engine image-name role dockerfile target, one a line)
    | side-requirements (engine name requirement target-dir, one a line)"""
    cmd, args = (argv[0] if argv else ""), argv[1:]
    try:
        if cmd == "names":
            print(" ".join(names()))
        elif cmd == "debian-packages":
            print(" ".join(sorted({p for m in manifests().values() for p in m.debian_packages})))
        elif cmd == "side-requirements":
            for m in manifests().values():
                for name, req in m.side_requirements.items():
                    print(m.name, name, req, side_path(m.name, name))
        elif cmd == "images" and len(args) >= 1:
            for n in args:
                for name, role, dockerfile, target in image_builds(manifest(n)):
                    print(n, name, role, dockerfile, target or "-")
        else:
            print(f"usage: python -m harness.registry_cli {main.__doc__}", file=sys.stderr)
            return 2
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
