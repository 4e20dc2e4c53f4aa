-- Kiln cache schema, migration 12: a memo's rows name it by a small id; a
-- job's compile time in whole microseconds.
--
-- Each memo_roots and memo_deps row began with its memo's 16-byte key: a
-- memo of a 1,000-root unit spelled its key a thousand times. A memo's key
-- is now stored once, in memos, beside a small id that its rows name. Its
-- roots and its dependencies are one table, memo_rows, told apart by kind:
-- a root (kind 0) is a name, its target and the closure it resolved to; a
-- dependency (kind 1) is a file's path and its stamp, with no closure. One
-- table, not two, keeps an empty cache at 32 pages of 1 KiB. Every
-- benchmark workload in one cache: memo rows 61 kB -> about 45 kB.
--
-- A job's compile time was a REAL of milliseconds, 8 bytes in every row. It
-- is now the whole number of microseconds, in the same REAL column renamed:
-- SQLite writes a REAL with no fraction as an integer of as few bytes as
-- its value needs (2 or 3 for a host job), and reads it back as a REAL.
--
-- Memo ids are handed out as one more than the largest, under the write
-- lock; a memo recorded again keeps its id.

CREATE TABLE memos (key BLOB PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO memos(key, id)
  SELECT memo_key, row_number() OVER (ORDER BY memo_key)
  FROM (SELECT memo_key FROM memo_roots UNION SELECT memo_key FROM memo_deps);

CREATE TABLE memo_rows (memo INTEGER NOT NULL, kind INTEGER NOT NULL, position INTEGER NOT NULL,
  name TEXT NOT NULL, value TEXT NOT NULL, closure_key BLOB,
  PRIMARY KEY (memo, kind, position)) WITHOUT ROWID;
INSERT INTO memo_rows(memo, kind, position, name, value, closure_key)
  SELECT m.id, 0, r.position, r.name, r.target, r.closure_key
  FROM memo_roots r JOIN memos m ON m.key = r.memo_key;
INSERT INTO memo_rows(memo, kind, position, name, value, closure_key)
  SELECT m.id, 1, d.position, d.path, d.stamp, NULL
  FROM memo_deps d JOIN memos m ON m.key = d.memo_key;
DROP TABLE memo_roots;
DROP TABLE memo_deps;

ALTER TABLE jobs RENAME COLUMN compile_ms TO compile_us;
UPDATE jobs SET compile_us = round(compile_us * 1000);
