"""Which table or index owns each page of a SQLite file, through the dbstat virtual table, run as
`python -m engines.sqlite.pagemap DB OUT`: a process of its own, so that closing its descriptor on the
file cannot drop the runner's POSIX locks (SQLite's own), and with the stdlib's sqlite3, whose build has
dbstat (APSW's wheel does not). It reads every page once: the runner calls it after the clock."""
from __future__ import annotations

import pickle
import sqlite3
import sys
from array import array


def page_owners(db: str) -> tuple[int, dict[str, array]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        page_bytes = conn.execute("PRAGMA page_size").fetchone()[0]
        pages: dict[str, array] = {}
        for name, pageno in conn.execute("SELECT name, pageno FROM dbstat"):
            pages.setdefault(name, array("I")).append(pageno)
        return page_bytes, pages
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    with open(argv[2], "wb") as f:
        pickle.dump(page_owners(argv[1]), f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
