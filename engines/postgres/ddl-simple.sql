-- Simple EAV schema in PostgreSQL types: 6 indexes.
CREATE TABLE string_attributes (
    entity_key bytea NOT NULL,
    block bigint NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (entity_key, key)
);
CREATE INDEX string_attributes_kv_index ON string_attributes (key, value);

CREATE TABLE numeric_attributes (
    entity_key bytea NOT NULL,
    block bigint NOT NULL,
    key text NOT NULL,
    value bigint NOT NULL,
    PRIMARY KEY (entity_key, key)
);
CREATE INDEX numeric_attributes_kv_index ON numeric_attributes (key, value);

CREATE TABLE payloads (
    entity_key bytea NOT NULL PRIMARY KEY,
    block bigint NOT NULL,
    payload bytea NOT NULL,
    content_type text NOT NULL DEFAULT '',
    string_attributes text NOT NULL DEFAULT '{}',
    numeric_attributes text NOT NULL DEFAULT '{}'
);
CREATE INDEX payloads_block_index ON payloads (block);
