-- Simple EAV schema in DuckDB types: 6 indexes.
CREATE TABLE string_attributes (
    entity_key BLOB NOT NULL,
    block BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    PRIMARY KEY (entity_key, key)
);
CREATE INDEX string_attributes_kv_index ON string_attributes (key, value);

CREATE TABLE numeric_attributes (
    entity_key BLOB NOT NULL,
    block BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    value BIGINT NOT NULL,
    PRIMARY KEY (entity_key, key)
);
CREATE INDEX numeric_attributes_kv_index ON numeric_attributes (key, value);

CREATE TABLE payloads (
    entity_key BLOB NOT NULL PRIMARY KEY,
    block BIGINT NOT NULL,
    payload BLOB NOT NULL,
    content_type VARCHAR NOT NULL DEFAULT '',
    string_attributes VARCHAR NOT NULL DEFAULT '{}',
    numeric_attributes VARCHAR NOT NULL DEFAULT '{}'
);
CREATE INDEX payloads_block_index ON payloads (block);
