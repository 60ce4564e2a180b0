-- arkiv bi-temporal schema in DuckDB types: 3 tables, 13 indexes (ART) like the SQLite DDL.
CREATE TABLE string_attributes (
    entity_key BLOB NOT NULL,
    from_block BIGINT NOT NULL,
    to_block BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    PRIMARY KEY (entity_key, key, from_block)
);
CREATE INDEX string_attributes_entity_key_value_index ON string_attributes (from_block, to_block, key, value);
CREATE INDEX string_attributes_kv_temporal_idx ON string_attributes (key, value, from_block DESC, to_block DESC);
CREATE INDEX string_attributes_entity_key_index ON string_attributes (from_block, to_block, key);
CREATE INDEX string_attributes_delete_index ON string_attributes (to_block);
CREATE INDEX string_attributes_entity_kv_idx ON string_attributes (entity_key, key, from_block DESC);

CREATE TABLE numeric_attributes (
    entity_key BLOB NOT NULL,
    from_block BIGINT NOT NULL,
    to_block BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    value BIGINT NOT NULL,
    PRIMARY KEY (entity_key, key, from_block)
);
CREATE INDEX numeric_attributes_entity_key_value_index ON numeric_attributes (from_block, to_block, key, value);
CREATE INDEX numeric_attributes_kv_temporal_idx ON numeric_attributes (key, value, from_block DESC, to_block DESC);
CREATE INDEX numeric_attributes_entity_key_index ON numeric_attributes (from_block, to_block, key);
CREATE INDEX numeric_attributes_delete_index ON numeric_attributes (to_block);

CREATE TABLE payloads (
    entity_key BLOB NOT NULL,
    from_block BIGINT NOT NULL,
    to_block BIGINT NOT NULL,
    payload BLOB NOT NULL,
    content_type VARCHAR NOT NULL DEFAULT '',
    string_attributes VARCHAR NOT NULL DEFAULT '{}',
    numeric_attributes VARCHAR NOT NULL DEFAULT '{}',
    PRIMARY KEY (entity_key, from_block)
);
CREATE INDEX payloads_delete_index ON payloads (to_block);
