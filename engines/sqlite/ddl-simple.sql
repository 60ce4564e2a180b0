-- Simple EAV schema (reference doc, experiment 6): one block column, no temporal range, 6 indexes.
CREATE TABLE string_attributes (
    entity_key BLOB NOT NULL,
    block INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (entity_key, key)
);
CREATE INDEX string_attributes_kv_index ON string_attributes (key, value);

CREATE TABLE numeric_attributes (
    entity_key BLOB NOT NULL,
    block INTEGER NOT NULL,
    key TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (entity_key, key)
);
CREATE INDEX numeric_attributes_kv_index ON numeric_attributes (key, value);

CREATE TABLE payloads (
    entity_key BLOB NOT NULL PRIMARY KEY,
    block INTEGER NOT NULL,
    payload BLOB NOT NULL,
    content_type TEXT NOT NULL DEFAULT '',
    string_attributes TEXT NOT NULL DEFAULT '{}',
    numeric_attributes TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX payloads_block_index ON payloads (block);
