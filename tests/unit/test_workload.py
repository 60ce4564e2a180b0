"""The generator is deterministic, covers every arkiv operation, and its model digest tracks rows."""
from collections import Counter

from harness.workload.block import MAX_BLOCK
from harness.workload.digest import StateDigest, row_hash_nbytes
from harness.workload.generator import BlockGenerator
from tests.conftest import mixed_spec


def fingerprint(gen: BlockGenerator, n: int) -> list:
    out = []
    for _ in range(n):
        b = gen.next_block()
        out.append((b.number, b.kind, b.rows_written, tuple(sorted(b.ops.items())), tuple(b.terminate_keys),
                    tuple((t, tuple(rows)) for t, rows in sorted(b.inserts.items())),
                    tuple((t, tuple(pks)) for t, pks in sorted(b.deletes.items()))))
    return out


def loaded(spec, entities=60):
    g = BlockGenerator(spec)
    for _ in g.load_blocks(entities, 500, 20):
        pass
    return g


def test_same_seed_same_stream():
    a, b = loaded(mixed_spec(seed=5)), loaded(mixed_spec(seed=5))
    assert fingerprint(a, 40) == fingerprint(b, 40)
    assert a.model.digest.as_dict() == b.model.digest.as_dict()


def test_other_seed_other_stream():
    assert fingerprint(loaded(mixed_spec(seed=5)), 5) != fingerprint(loaded(mixed_spec(seed=6)), 5)


def test_every_operation_occurs():
    g = loaded(mixed_spec())
    ops = Counter()
    for _ in range(60):
        ops.update(g.next_block().ops)
    assert set(ops) >= {"create", "update", "delete", "expire", "extend", "change_owner", "reorg"}, ops


def test_blocks_meet_row_budget_and_touch_an_entity_once():
    g = loaded(mixed_spec(reorg=0.0))
    for _ in range(30):
        b = g.next_block()
        assert b.rows_written >= 400
        created = {r[0] for r in b.inserts.get("payloads", [])}
        assert len(b.inserts.get("payloads", [])) == len(created), "one version per entity per block"
        assert len(set(b.terminate_keys)) == len(b.terminate_keys)


def test_reorg_reinserts_the_same_primary_keys():
    g = loaded(mixed_spec(reorg=1.0))
    b = g.next_block()
    assert b.kind == "reorg" and b.ops["reorg"] > 0
    deleted = {pk for pk in b.deletes["string_attributes"]}
    reinserted = {(r[0], r[3], r[1]) for r in b.inserts["string_attributes"]}
    assert deleted == reinserted
    assert all(r[2] == MAX_BLOCK for r in b.inserts["string_attributes"])


def test_model_digest_equals_replayed_rows():
    """Replaying the blocks' row changes by hand gives the model's digest (bitemporal semantics)."""
    spec = mixed_spec(reorg=0.3)
    g = BlockGenerator(spec)
    rows: dict[str, dict[tuple, tuple]] = {"string_attributes": {}, "numeric_attributes": {}, "payloads": {}}
    pk = {"string_attributes": lambda r: (r[0], r[3], r[1]), "numeric_attributes": lambda r: (r[0], r[3], r[1]),
          "payloads": lambda r: (r[0], r[1])}
    blocks = list(g.load_blocks(40, 500, 10)) + [g.next_block() for _ in range(40)]
    for b in blocks:
        for t, pks in b.deletes.items():
            for k in pks:
                del rows[t][k]
        for t in rows:
            for k, r in list(rows[t].items()):
                if r[0] in b.terminate_keys and r[1] <= b.number < r[2]:
                    rows[t][k] = r[:2] + (b.number,) + r[3:]
        for t, new in b.inserts.items():
            for r in new:
                assert pk[t](r) not in rows[t], "an insert never collides with a stored primary key"
                rows[t][pk[t](r)] = r
    replay = StateDigest()
    for t, by_pk in rows.items():
        for r in by_pk.values():
            replay.table(t).add(r)
    assert replay.as_dict() == g.model.digest.as_dict()


def test_digest_is_order_independent():
    a, b = StateDigest(), StateDigest()
    rows = [(b"k", 1, 2, "x", "y"), (b"k", 2, 3, "x", "z"), (b"j", 1, MAX_BLOCK, "a", "b")]
    for r in rows:
        a.table("t").add(r)
    for r in reversed(rows):
        b.table("t").add(r)
    assert a.as_dict() == b.as_dict()
    assert row_hash_nbytes((b"k", 1))[0] != row_hash_nbytes(("k", 1))[0], "bytes and str hash apart"


def test_a_row_hash_is_as_strict_as_its_values_and_blind_to_how_a_driver_holds_them():
    import sys
    from harness.workload.digest import row_hash
    assert row_hash((-1,)) != row_hash((-2,)), "Python's hash() maps both to -2"
    assert row_hash((1,)) != row_hash((1.0,)) != row_hash((True,)), "an int read back as a float is a change"
    assert row_hash((None, 1)) != row_hash((0, 1))
    assert row_hash((memoryview(b"ab"), 1)) == row_hash((bytearray(b"ab"), 1)) == row_hash((b"ab", 1))
    word = "".join(["cre", "ator"])          # built at run time: not the interned literal
    assert row_hash((sys.intern("creator"),)) == row_hash((word,)), "interning must not change the bytes"

    class DriverInt(int):
        pass
    assert row_hash((DriverInt(7),)) == row_hash((7,))


def test_the_digest_sees_every_column_of_every_table():
    """A row hash that ignored any one column would let a corrupted value pass integrity."""
    from harness.workload.digest import digest_rows
    gen = BlockGenerator(mixed_spec(reorg=0.0))
    block = next(gen.load_blocks(5, 400, 10))
    for table, rows in block.inserts.items():
        base = digest_rows({table: rows})
        for col in range(len(rows[0])):
            v = rows[0][col]
            changed = v + 1 if isinstance(v, int) else v + (b"x" if isinstance(v, bytes) else "x")
            mutated = [rows[0][:col] + (changed,) + rows[0][col + 1:]] + rows[1:]
            assert digest_rows({table: mutated}) != base, (table, col)
        assert digest_rows({table: rows + rows[:1]}) != base, "a duplicated row"
        assert digest_rows({table: rows[1:]}) != base, "a dropped row"
