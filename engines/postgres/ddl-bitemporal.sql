-- arkiv bi-temporal schema in PostgreSQL types: 3 tables, 13 indexes (6 + 5 + 2, PKs included).
CREATE TABLE string_attributes (
    entity_key bytea NOT NULL,
    from_block bigint NOT NULL,
    to_block bigint NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (entity_key, key, from_block)
);
CREATE INDEX string_attributes_entity_key_value_index ON string_attributes (from_block, to_block, key, value);
CREATE INDEX string_attributes_kv_temporal_idx ON string_attributes (key, value, from_block DESC, to_block DESC);
CREATE INDEX string_attributes_entity_key_index ON string_attributes (from_block, to_block, key);
CREATE INDEX string_attributes_delete_index ON string_attributes (to_block);
CREATE INDEX string_attributes_entity_kv_idx ON string_attributes (entity_key, key, from_block DESC);

CREATE TABLE numeric_attributes (
    entity_key bytea NOT NULL,
    from_block bigint NOT NULL,
    to_block bigint NOT NULL,
    key text NOT NULL,
    value bigint NOT NULL,
    PRIMARY KEY (entity_key, key, from_block)
);
CREATE INDEX numeric_attributes_entity_key_value_index ON numeric_attributes (from_block, to_block, key, value);
CREATE INDEX numeric_attributes_kv_temporal_idx ON numeric_attributes (key, value, from_block DESC, to_block DESC);
CREATE INDEX numeric_attributes_entity_key_index ON numeric_attributes (from_block, to_block, key);
CREATE INDEX numeric_attributes_delete_index ON numeric_attributes (to_block);

CREATE TABLE payloads (
    entity_key bytea NOT NULL,
    from_block bigint NOT NULL,
    to_block bigint NOT NULL,
    payload bytea NOT NULL,
    content_type text NOT NULL DEFAULT '',
    string_attributes text NOT NULL DEFAULT '{}',
    numeric_attributes text NOT NULL DEFAULT '{}',
    PRIMARY KEY (entity_key, from_block)
);
CREATE INDEX payloads_delete_index ON payloads (to_block);
