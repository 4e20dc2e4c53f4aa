-- Kiln cache schema, migration 5: a smaller file.
--
-- A job's target description (spec, triple, CPU, features) is stored once
-- and referenced: a host CPU's feature string is about a kilobyte, the same
-- in every job built for it. Artifacts and images may be compressed with a
-- zstd dictionary trained on the cache's own blobs of their kind; a blob
-- names the dictionary it needs, and a dictionary never changes. Tables
-- keyed by short text become WITHOUT ROWID (one b-tree instead of a table
-- and its key index), and jobs lose an index no query used.
--
-- Database::migrate runs this with foreign keys off, so that dropping a
-- rebuilt table cascades to nothing. Comments stay outside the CREATE
-- statements: SQLite keeps a statement's text in every cache file.

-- Distinct target descriptions of jobs.
CREATE TABLE targets (id INTEGER PRIMARY KEY, spec TEXT NOT NULL, triple TEXT NOT NULL,
  cpu TEXT NOT NULL, features TEXT NOT NULL);
INSERT INTO targets(spec, triple, cpu, features)
  SELECT DISTINCT target, triple, cpu, features FROM jobs ORDER BY target, triple, cpu, features;

-- zstd dictionaries. kind: the blobs it compresses ("artifact obj", "image
-- cubin"); samples: how many blobs it was trained on; checksum: XXH3-64 of
-- data. Written once, never changed or deleted.
CREATE TABLE dictionaries (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,
  samples INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB NOT NULL,
  created_at INTEGER NOT NULL);

CREATE TABLE jobs5 (key TEXT PRIMARY KEY, entry TEXT NOT NULL, symbol TEXT NOT NULL,
  target_id INTEGER NOT NULL REFERENCES targets(id), options TEXT NOT NULL,
  module_hash TEXT NOT NULL, toolchain TEXT NOT NULL, compile_ms REAL NOT NULL,
  created_at INTEGER NOT NULL);
INSERT INTO jobs5(key, entry, symbol, target_id, options, module_hash, toolchain, compile_ms,
                  created_at)
  SELECT j.key, j.entry, j.symbol, t.id, j.options, j.module_hash, j.toolchain, j.compile_ms,
         j.created_at
  FROM jobs j JOIN targets t ON t.spec = j.target AND t.triple = j.triple AND t.cpu = j.cpu
                              AND t.features = j.features;
DROP TABLE jobs;
ALTER TABLE jobs5 RENAME TO jobs;

-- A blob compressed with a dictionary names it; NULL: plain zstd.
ALTER TABLE artifacts ADD COLUMN dict_id INTEGER REFERENCES dictionaries(id);
ALTER TABLE images ADD COLUMN dict_id INTEGER REFERENCES dictionaries(id);
-- The plain blobs of each format, for training and recompression.
CREATE INDEX artifacts_plain ON artifacts(format) WHERE dict_id IS NULL;
CREATE INDEX images_plain ON images(format) WHERE dict_id IS NULL;

CREATE TABLE job_refs5 (job_key TEXT NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  symbol TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (job_key, symbol)) WITHOUT ROWID;
INSERT INTO job_refs5(job_key, symbol, entry) SELECT job_key, symbol, entry FROM job_refs;
DROP TABLE job_refs;
ALTER TABLE job_refs5 RENAME TO job_refs;

CREATE TABLE closures5 (key TEXT PRIMARY KEY, root_job TEXT NOT NULL REFERENCES jobs(key),
  target TEXT NOT NULL, created_at INTEGER NOT NULL, last_used INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO closures5(key, root_job, target, created_at, last_used)
  SELECT key, root_job, target, created_at, last_used FROM closures;
DROP TABLE closures;
ALTER TABLE closures5 RENAME TO closures;
CREATE INDEX closures_by_last_used ON closures(last_used);

CREATE TABLE closure_members5 (
  closure_key TEXT NOT NULL REFERENCES closures(key) ON DELETE CASCADE, symbol TEXT NOT NULL,
  job_key TEXT NOT NULL REFERENCES jobs(key), PRIMARY KEY (closure_key, symbol)) WITHOUT ROWID;
INSERT INTO closure_members5(closure_key, symbol, job_key)
  SELECT closure_key, symbol, job_key FROM closure_members;
DROP TABLE closure_members;
ALTER TABLE closure_members5 RENAME TO closure_members;
CREATE INDEX closure_members_by_job ON closure_members(job_key);

CREATE TABLE names5 (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key TEXT NOT NULL REFERENCES closures(key), updated_at INTEGER NOT NULL,
  unit TEXT NOT NULL DEFAULT '', PRIMARY KEY (name, target)) WITHOUT ROWID;
INSERT INTO names5(name, target, closure_key, updated_at, unit)
  SELECT name, target, closure_key, updated_at, unit FROM names;
DROP TABLE names;
ALTER TABLE names5 RENAME TO names;
CREATE INDEX names_by_closure ON names(closure_key);

CREATE TABLE job_leases5 (job_key TEXT NOT NULL, holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL, PRIMARY KEY (job_key, holder)) WITHOUT ROWID;
INSERT INTO job_leases5(job_key, holder, expires_at)
  SELECT job_key, holder, expires_at FROM job_leases;
DROP TABLE job_leases;
ALTER TABLE job_leases5 RENAME TO job_leases;
CREATE INDEX job_leases_by_holder ON job_leases(holder);

CREATE TABLE meta5 (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta5(key, value) SELECT key, value FROM meta;
DROP TABLE meta;
ALTER TABLE meta5 RENAME TO meta;

CREATE TABLE counters5 (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO counters5(name, value) SELECT name, value FROM counters;
DROP TABLE counters;
ALTER TABLE counters5 RENAME TO counters;

CREATE TABLE settings5 (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO settings5(name, value) SELECT name, value FROM settings;
DROP TABLE settings;
ALTER TABLE settings5 RENAME TO settings;

-- Rebuilt only to drop the comments its CREATE statement carried.
CREATE TABLE memos5 (key TEXT PRIMARY KEY, roots TEXT NOT NULL, deps TEXT NOT NULL,
  created_at INTEGER NOT NULL);
INSERT INTO memos5(key, roots, deps, created_at) SELECT key, roots, deps, created_at FROM memos;
DROP TABLE memos;
ALTER TABLE memos5 RENAME TO memos;
