-- Kiln cache schema, migration 2: the cache's life cycle.

-- Usage counters for `kiln-inspect stats`: precompile job hits and misses,
-- loads and whether they found a stored image. Reset by `stats --zero`.
CREATE TABLE counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);

-- Settings such as max_size (bytes), set with `kiln-inspect config`.
CREATE TABLE settings (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- Eviction walks closures from least to most recently used; names follow
-- their closures out.
CREATE INDEX closures_by_last_used ON closures(last_used);
CREATE INDEX names_by_closure ON names(closure_key);
