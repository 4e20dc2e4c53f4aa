-- Kiln cache schema 13: the baseline, every table of a new cache.
--
-- Versions 1 to 12 were the schemas of Kiln before its first release. They
-- are not migrated: a cache of one of them is refused with a message that
-- says to remove it (a cache holds only what can be compiled again). From
-- the first release on, a change to this schema is a numbered migration
-- after this one, and caches are migrated in place.
--
-- Keys are their 16 bytes (XXH3-128, big-endian, so byte order is hex
-- order). Content-addressed rows (jobs, artifacts, closures, member sets,
-- images) never change once written; names, libraries and memos are the
-- mutable mappings. Tables keyed by short values are WITHOUT ROWID: one
-- b-tree instead of a table and its key index, so that an empty cache stays
-- within 32 pages of 1 KiB. Comments stay outside the CREATE statements:
-- SQLite keeps each statement's text in every cache file.
--
-- zstd dictionaries, trained on the cache's own blobs of one kind ("artifact
-- obj", "image cubin"). samples: the blobs it was trained on; checksum:
-- XXH3-64 of data. Written once, never changed or deleted.
CREATE TABLE dictionaries (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,
  samples INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB NOT NULL,
  created_at INTEGER NOT NULL);

-- The file's format, where its published images live, and settings
-- ("setting <name>").
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

-- Counts kept across processes (job_misses, ...).
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;

-- A target description and toolchain, stored once: a host CPU's feature
-- string is about a kilobyte, the same in every job built for it.
CREATE TABLE targets (id INTEGER PRIMARY KEY, spec TEXT NOT NULL, triple TEXT NOT NULL,
  cpu TEXT NOT NULL, features TEXT NOT NULL, toolchain TEXT NOT NULL);

-- One compilation job: an entry of a unit for one target and options.
-- symbol: the deferred symbol its code defines for the entry (a deferred
-- symbol as the 16 bytes its digits spell, core::pack_deferred_symbol; any
-- other as text). compile_us: whole microseconds in a REAL, which SQLite
-- stores in as few bytes as the value needs.
CREATE TABLE jobs (key BLOB PRIMARY KEY, entry TEXT NOT NULL, symbol TEXT NOT NULL,
  target_id INTEGER NOT NULL REFERENCES targets(id), options TEXT NOT NULL,
  module_hash BLOB NOT NULL, compile_us REAL NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;

-- A job's code, zstd-compressed, with the dictionary it needs (NULL: plain
-- zstd); checksum: XXH3-64 of the raw bytes.
CREATE TABLE artifacts (job_key BLOB NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  format TEXT NOT NULL, raw_size INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB NOT NULL,
  dict_id INTEGER REFERENCES dictionaries(id), PRIMARY KEY (job_key, format));

-- The deferred symbols a job's code leaves open, and the entry each names.
CREATE TABLE job_refs (job_key BLOB NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  symbol TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (job_key, symbol)) WITHOUT ROWID;

-- A root job plus everything it reaches through deferred references. A
-- closure names a member set, keyed by its members and shared by every
-- closure with the same members (the N roots of one deferred cycle share
-- one set of N rows); a closure whose only member is its root job under
-- the job's own symbol names none (member_set NULL).
CREATE TABLE closures (key BLOB PRIMARY KEY, root_job BLOB NOT NULL REFERENCES jobs(key),
  target TEXT NOT NULL, member_set BLOB, created_at INTEGER NOT NULL,
  last_used INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE member_sets (set_key BLOB NOT NULL, symbol TEXT NOT NULL,
  job_key BLOB NOT NULL REFERENCES jobs(key), PRIMARY KEY (set_key, symbol)) WITHOUT ROWID;

-- The input files a root name came from.
CREATE TABLE units (id INTEGER PRIMARY KEY, path TEXT NOT NULL);

-- A root's name and target -> the closure of its latest precompile. gc
-- drops the names of the closures it evicts; a name whose closure is gone
-- loads nothing (verify reports it).
CREATE TABLE names (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key BLOB NOT NULL, updated_at INTEGER NOT NULL,
  unit_id INTEGER REFERENCES units(id), PRIMARY KEY (name, target)) WITHOUT ROWID;

-- Kernel libraries: a name and target -> the closure of all its roots, and
-- the roots in order.
CREATE TABLE libraries (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key BLOB NOT NULL REFERENCES closures(key), updated_at INTEGER NOT NULL,
  PRIMARY KEY (name, target)) WITHOUT ROWID;
CREATE TABLE library_roots (name TEXT NOT NULL, target TEXT NOT NULL, position INTEGER NOT NULL,
  root TEXT NOT NULL, PRIMARY KEY (name, target, position),
  FOREIGN KEY (name, target) REFERENCES libraries(name, target) ON DELETE CASCADE) WITHOUT ROWID;

-- Jobs a running precompile has written and not yet named: gc leaves them.
CREATE TABLE job_leases (job_key BLOB NOT NULL, holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL, PRIMARY KEY (job_key, holder)) WITHOUT ROWID;

-- A closure linked into one loadable binary for one device architecture
-- and linker (image_links holds each pair once).
CREATE TABLE image_links (id INTEGER PRIMARY KEY, arch TEXT NOT NULL, linker TEXT NOT NULL);
CREATE TABLE images (closure_key BLOB NOT NULL REFERENCES closures(key) ON DELETE CASCADE,
  link INTEGER NOT NULL REFERENCES image_links(id), format TEXT NOT NULL,
  raw_size INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB NOT NULL,
  created_at INTEGER NOT NULL, dict_id INTEGER REFERENCES dictionaries(id),
  PRIMARY KEY (closure_key, link));

-- Memos: what a request's plan found, so that the same request is answered
-- without planning. A memo's key is stored once, beside a small id its rows
-- name; a row is a root (kind 0: name, target, closure) or a dependency
-- (kind 1: a file's path and stamp, no closure). Ids are one more than the
-- largest, handed out under the write lock.
CREATE TABLE memos (key BLOB PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE memo_rows (memo INTEGER NOT NULL, kind INTEGER NOT NULL, position INTEGER NOT NULL,
  name TEXT NOT NULL, value TEXT NOT NULL, closure_key BLOB,
  PRIMARY KEY (memo, kind, position)) WITHOUT ROWID;

-- The plain (dictionary-less) blobs of each format, for training and
-- recompression.
CREATE INDEX artifacts_plain ON artifacts(format) WHERE dict_id IS NULL;
CREATE INDEX closures_by_member_set ON closures(member_set) WHERE member_set IS NOT NULL;
CREATE INDEX member_sets_by_job ON member_sets(job_key);
CREATE INDEX images_plain ON images(format) WHERE dict_id IS NULL;

-- Every closure's members: its set's rows, or for a lone root its job.
CREATE VIEW closure_members(closure_key, symbol, job_key) AS
  SELECT c.key, m.symbol, m.job_key FROM closures c JOIN member_sets m ON m.set_key = c.member_set
  UNION ALL
  SELECT c.key, j.symbol, j.key FROM closures c JOIN jobs j ON j.key = c.root_job
  WHERE c.member_set IS NULL;

-- A cache may have `<cache>-images` beside it: each host root's closure,
-- CPU and image, which a process that only loads host code reads instead of
-- this file (src/storage/published/published.h).
INSERT INTO meta(key, value) VALUES ('published images', '<cache>-images');
