"""The walks: what runs many cells and decides from them. sweep.py runs cells (resumable) and is the floor every
other walk stands on; knee.py and bracket.py search an axis for where a criterion stops holding; verdict/ walks the
decision tree; matrix.py, matrices.py and experiments.py measure options against a baseline; ceiling.py finds the
read rate beside the writes; v1.py the write × read frontier. Each is a `make` target (harness/cli/walks.py)."""
