-- Kiln cache schema, migration 8: keys as bytes, lists as rows.
--
-- Every key (jobs, modules, closures, member sets, memos) is its 16 bytes
-- (a BLOB, the big-endian bytes of its 32 hex digits, so that byte order is
-- hex order), where it was 32 characters of hex text: a key is stored in
-- its row and again in each index and each row that refers to it, and the
-- rows and indexes around the blobs were most of a cache of small host jobs.
-- kiln_unhex (registered by Database::migrate) gives NULL for anything that
-- is not 32 hex digits; such a row could never be read, and is not carried
-- over. Rows are copied with INSERT OR IGNORE: two rows whose keys differ
-- only in the case of their hex digits (never written by Kiln; planted) are
-- one key now, and the first is kept rather than the migration refused.
--
-- A job's toolchain text is stored once, with its target description: the
-- targets row a job refers to is now the pair. So is the unit (input file
-- names) a root name came from: one units row for every name of a unit,
-- NULL where it is unknown.
--
-- Names lose their index by closure, and with it the foreign key that needed
-- it: gc, the one reader by closure, drops the names of the closures it
-- evicted in one pass, and a load of a name whose closure is gone finds no
-- closure (verify reports such a row).
--
-- Settings become meta rows ("setting <name>"), a memo is its rows (no head
-- row), and leases lose their index by holder (a few rows, those of the
-- precompiles running): an empty cache stays within 32 pages.
--
-- A closure whose only member is its root job under the job's own symbol
-- (every closure without deferred references) names no member set: its
-- member_set is NULL, and the closure_members view gives its one member
-- from the jobs table. Its key is the one core::closure_key gives for that
-- member (kiln_lone_key), so gc can find it from the job alone; a closure
-- whose key is otherwise keeps its set.
--
-- A row that refers to a row not carried over (a job, a closure) is not
-- carried over either. Sets, and the index from job to set, hold only the
-- closures that reach other jobs.
--
-- Lists become rows: a library's root names (library_roots) and a memo's
-- roots and toolchain dependencies (memo_roots, memo_deps), in order. Memos
-- are a cache of what a plan found: old ones are dropped, as in migration 6.
--
-- Comments stay outside the CREATE statements (see migration 5).

CREATE TABLE targets8 (id INTEGER PRIMARY KEY, spec TEXT NOT NULL, triple TEXT NOT NULL,
  cpu TEXT NOT NULL, features TEXT NOT NULL, toolchain TEXT NOT NULL);
INSERT INTO targets8(spec, triple, cpu, features, toolchain)
  SELECT DISTINCT t.spec, t.triple, t.cpu, t.features, j.toolchain
  FROM jobs j JOIN targets t ON t.id = j.target_id
  ORDER BY t.spec, t.triple, t.cpu, t.features, j.toolchain;

CREATE TABLE jobs8 (key BLOB PRIMARY KEY, entry TEXT NOT NULL, symbol TEXT NOT NULL,
  target_id INTEGER NOT NULL REFERENCES targets(id), options TEXT NOT NULL,
  module_hash BLOB NOT NULL, compile_ms REAL NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO jobs8(key, entry, symbol, target_id, options, module_hash, compile_ms,
                            created_at)
  SELECT kiln_unhex(j.key), j.entry, j.symbol, n.id, j.options, kiln_unhex(j.module_hash),
         j.compile_ms, j.created_at
  FROM jobs j JOIN targets t ON t.id = j.target_id
  JOIN targets8 n ON n.spec = t.spec AND n.triple = t.triple AND n.cpu = t.cpu
                 AND n.features = t.features AND n.toolchain = j.toolchain
  WHERE kiln_unhex(j.key) IS NOT NULL AND kiln_unhex(j.module_hash) IS NOT NULL;
DROP TABLE jobs;
ALTER TABLE jobs8 RENAME TO jobs;
DROP TABLE targets;
ALTER TABLE targets8 RENAME TO targets;

CREATE TABLE artifacts8 (job_key BLOB NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  format TEXT NOT NULL, raw_size INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB NOT NULL,
  dict_id INTEGER REFERENCES dictionaries(id), PRIMARY KEY (job_key, format));
INSERT OR IGNORE INTO artifacts8(rowid, job_key, format, raw_size, checksum, data, dict_id)
  SELECT rowid, kiln_unhex(job_key), format, raw_size, checksum, data, dict_id FROM artifacts
  WHERE kiln_unhex(job_key) IN (SELECT key FROM jobs);
DROP TABLE artifacts;
ALTER TABLE artifacts8 RENAME TO artifacts;
CREATE INDEX artifacts_plain ON artifacts(format) WHERE dict_id IS NULL;

CREATE TABLE job_refs8 (job_key BLOB NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  symbol TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (job_key, symbol)) WITHOUT ROWID;
INSERT OR IGNORE INTO job_refs8(job_key, symbol, entry)
  SELECT kiln_unhex(job_key), symbol, entry FROM job_refs
  WHERE kiln_unhex(job_key) IN (SELECT key FROM jobs);
DROP TABLE job_refs;
ALTER TABLE job_refs8 RENAME TO job_refs;

DROP VIEW closure_members;

CREATE TABLE closures8 (key BLOB PRIMARY KEY, root_job BLOB NOT NULL REFERENCES jobs(key),
  target TEXT NOT NULL, member_set BLOB, created_at INTEGER NOT NULL,
  last_used INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO closures8(key, root_job, target, member_set, created_at, last_used)
  SELECT kiln_unhex(c.key), kiln_unhex(c.root_job), c.target,
         CASE WHEN (SELECT count(*) FROM member_sets m WHERE m.set_key = c.member_set) = 1
                   AND EXISTS (SELECT 1 FROM member_sets m JOIN jobs j
                                 ON j.key = kiln_unhex(m.job_key) AND j.symbol = m.symbol
                               WHERE m.set_key = c.member_set AND m.job_key = c.root_job
                                 AND kiln_unhex(c.key) = kiln_lone_key(j.key, j.symbol))
              THEN NULL ELSE kiln_unhex(c.member_set) END,
         c.created_at, c.last_used
  FROM closures c
  WHERE kiln_unhex(c.key) IS NOT NULL AND kiln_unhex(c.member_set) IS NOT NULL
    AND kiln_unhex(c.root_job) IN (SELECT key FROM jobs);
DROP TABLE closures;
ALTER TABLE closures8 RENAME TO closures;
CREATE INDEX closures_by_member_set ON closures(member_set) WHERE member_set IS NOT NULL;

CREATE TABLE member_sets8 (set_key BLOB NOT NULL, symbol TEXT NOT NULL,
  job_key BLOB NOT NULL REFERENCES jobs(key), PRIMARY KEY (set_key, symbol)) WITHOUT ROWID;
INSERT OR IGNORE INTO member_sets8(set_key, symbol, job_key)
  SELECT kiln_unhex(set_key), symbol, kiln_unhex(job_key) FROM member_sets m
  WHERE kiln_unhex(set_key) IS NOT NULL AND kiln_unhex(job_key) IN (SELECT key FROM jobs)
    AND EXISTS (SELECT 1 FROM closures c WHERE c.member_set = kiln_unhex(m.set_key));
DROP TABLE member_sets;
ALTER TABLE member_sets8 RENAME TO member_sets;
CREATE INDEX member_sets_by_job ON member_sets(job_key);

CREATE VIEW closure_members(closure_key, symbol, job_key) AS
  SELECT c.key, m.symbol, m.job_key FROM closures c JOIN member_sets m ON m.set_key = c.member_set
  UNION ALL
  SELECT c.key, j.symbol, j.key FROM closures c JOIN jobs j ON j.key = c.root_job
  WHERE c.member_set IS NULL;

CREATE TABLE images8 (closure_key BLOB NOT NULL REFERENCES closures(key) ON DELETE CASCADE,
  arch TEXT NOT NULL, linker TEXT NOT NULL, format TEXT NOT NULL, raw_size INTEGER NOT NULL,
  checksum INTEGER NOT NULL, data BLOB NOT NULL, created_at INTEGER NOT NULL,
  dict_id INTEGER REFERENCES dictionaries(id), PRIMARY KEY (closure_key, arch, linker));
INSERT OR IGNORE INTO images8(rowid, closure_key, arch, linker, format, raw_size, checksum, data,
                    created_at, dict_id)
  SELECT rowid, kiln_unhex(closure_key), arch, linker, format, raw_size, checksum, data,
         created_at, dict_id FROM images
  WHERE kiln_unhex(closure_key) IN (SELECT key FROM closures);
DROP TABLE images;
ALTER TABLE images8 RENAME TO images;
CREATE INDEX images_plain ON images(format) WHERE dict_id IS NULL;

CREATE TABLE units (id INTEGER PRIMARY KEY, path TEXT NOT NULL);
INSERT INTO units(path) SELECT DISTINCT unit FROM names WHERE unit != '' ORDER BY unit;
CREATE TABLE names8 (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key BLOB NOT NULL, updated_at INTEGER NOT NULL,
  unit_id INTEGER REFERENCES units(id), PRIMARY KEY (name, target)) WITHOUT ROWID;
INSERT OR IGNORE INTO names8(name, target, closure_key, updated_at, unit_id)
  SELECT n.name, n.target, kiln_unhex(n.closure_key), n.updated_at, u.id
  FROM names n LEFT JOIN units u ON u.path = n.unit
  WHERE kiln_unhex(n.closure_key) IN (SELECT key FROM closures);
DROP TABLE names;
ALTER TABLE names8 RENAME TO names;

CREATE TABLE libraries8 (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key BLOB NOT NULL REFERENCES closures(key), updated_at INTEGER NOT NULL,
  PRIMARY KEY (name, target)) WITHOUT ROWID;
INSERT OR IGNORE INTO libraries8(name, target, closure_key, updated_at)
  SELECT name, target, kiln_unhex(closure_key), updated_at FROM libraries
  WHERE kiln_unhex(closure_key) IN (SELECT key FROM closures);

-- A library's root names in order, from the netstrings of migration 6
-- ("<byte length>:<bytes>," each), read byte by byte as BLOBs; a damaged
-- list keeps the roots before the damage.
CREATE TABLE library_roots (name TEXT NOT NULL, target TEXT NOT NULL, position INTEGER NOT NULL,
  root TEXT NOT NULL, PRIMARY KEY (name, target, position),
  FOREIGN KEY (name, target) REFERENCES libraries(name, target) ON DELETE CASCADE) WITHOUT ROWID;
INSERT OR IGNORE INTO library_roots(name, target, position, root)
  WITH RECURSIVE split(name, target, position, rest, root) AS (
    SELECT name, target, -1, CAST(roots AS BLOB), NULL FROM libraries
    UNION ALL
    SELECT name, target, position + 1,
           substr(rest, instr(rest, x'3A') + CAST(substr(rest, 1, instr(rest, x'3A') - 1)
                                                  AS INTEGER) + 2),
           CAST(substr(rest, instr(rest, x'3A') + 1,
                       CAST(substr(rest, 1, instr(rest, x'3A') - 1) AS INTEGER)) AS TEXT)
      FROM split
      WHERE length(rest) > 0 AND instr(rest, x'3A') > 1 AND position < 1000000
        AND substr(rest, instr(rest, x'3A') + CAST(substr(rest, 1, instr(rest, x'3A') - 1)
                                                   AS INTEGER) + 1, 1) = x'2C')
  SELECT s.name, s.target, s.position, s.root FROM split s
  WHERE s.root IS NOT NULL
    AND EXISTS (SELECT 1 FROM libraries8 l WHERE l.name = s.name AND l.target = s.target);
DROP TABLE libraries;
ALTER TABLE libraries8 RENAME TO libraries;

DROP TABLE memos;
CREATE TABLE memo_roots (memo_key BLOB NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL,
  target TEXT NOT NULL, closure_key BLOB NOT NULL, PRIMARY KEY (memo_key, position)) WITHOUT ROWID;
CREATE TABLE memo_deps (memo_key BLOB NOT NULL, position INTEGER NOT NULL, path TEXT NOT NULL,
  stamp TEXT NOT NULL, PRIMARY KEY (memo_key, position)) WITHOUT ROWID;

CREATE TABLE job_leases8 (job_key BLOB NOT NULL, holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL, PRIMARY KEY (job_key, holder)) WITHOUT ROWID;
INSERT OR IGNORE INTO job_leases8(job_key, holder, expires_at)
  SELECT kiln_unhex(job_key), holder, expires_at FROM job_leases
  WHERE kiln_unhex(job_key) IS NOT NULL;
DROP TABLE job_leases;
ALTER TABLE job_leases8 RENAME TO job_leases;

INSERT OR REPLACE INTO meta(key, value) SELECT 'setting ' || name, value FROM settings;
DROP TABLE settings;
