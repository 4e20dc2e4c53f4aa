-- Kiln cache schema, migration 7: closures share their member sets.
--
-- A closure was its root plus a row per member. The roots of one deferred
-- cycle (every function a root, as higher-order AD makes them) each reach
-- the whole cycle, so N roots recorded N^2 rows: a 1,000-function cycle
-- stored 1M rows, 292 MB of a 294 MB cache. Now a closure names a member set,
-- keyed by its members (XXH3-128 over the sorted symbol and job pairs,
-- src/storage/local/store.cpp), and closures with the same members share
-- one set: the cycle is 1,000 closures over one set of 1,000 rows.
--
-- closure_members stays, as a view, for everything that reads a closure's
-- members. A set is its rows (member_sets, one per member); rows of a set
-- no closure names are removed by gc.
--
-- closures_by_last_used goes: gc, its one reader, reads every closure
-- anyway, and each load's usage write no longer updates it. Without it an
-- empty cache stays within 32 pages, as before.
--
-- Existing closures keep their rows: each becomes a set of its own, keyed
-- by the closure's key (a set key is only a name; new sets are keyed by
-- their members and shared from then on).
--
-- Comments stay outside the CREATE statements (see migration 5).

CREATE TABLE member_sets (set_key TEXT NOT NULL, symbol TEXT NOT NULL,
  job_key TEXT NOT NULL REFERENCES jobs(key), PRIMARY KEY (set_key, symbol)) WITHOUT ROWID;
CREATE INDEX member_sets_by_job ON member_sets(job_key);
INSERT INTO member_sets(set_key, symbol, job_key)
  SELECT closure_key, symbol, job_key FROM closure_members;

CREATE TABLE closures7 (key TEXT PRIMARY KEY, root_job TEXT NOT NULL REFERENCES jobs(key),
  target TEXT NOT NULL, member_set TEXT NOT NULL, created_at INTEGER NOT NULL,
  last_used INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO closures7(key, root_job, target, member_set, created_at, last_used)
  SELECT key, root_job, target, key, created_at, last_used FROM closures;
DROP TABLE closure_members;
DROP TABLE closures;
ALTER TABLE closures7 RENAME TO closures;
CREATE INDEX closures_by_member_set ON closures(member_set);

CREATE VIEW closure_members(closure_key, symbol, job_key) AS
  SELECT c.key, m.symbol, m.job_key FROM closures c JOIN member_sets m ON m.set_key = c.member_set;
