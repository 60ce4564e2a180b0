"""Starting states: the database a cell starts from, built once per build inputs at each engine's bulk
speed (rows.py generates them, build.py writes them), kept in a cache (store.py) with the compact model
of what it holds, and cloned cold into every cell (clone.py)."""
