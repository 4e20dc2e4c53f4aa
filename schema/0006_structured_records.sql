-- Kiln cache schema, migration 6: lists as length-prefixed fields.
--
-- A column that holds a list (a library's root names; a memo's roots and
-- toolchain dependencies) is a BLOB of netstrings, "<byte length>:<bytes>,"
-- each (written by pack_fields, since gone with migration 8), where it was text
-- joined on tabs and newlines: a name with a tab or a newline, which LLVM
-- accepts, came back split, and a memo was never recorded for it.
--
-- Kernel libraries: the table is made here, in every cache, where the first
-- library recorded used to make it; the rows of such a cache are kept, their
-- newline-separated roots converted. The memos table, which gives way to it,
-- becomes WITHOUT ROWID (one b-tree, no index of its key), so that an empty
-- cache stays as small. Memos are a cache of what a plan found: old ones are
-- dropped, and the next run of each request plans once and records it anew.
--
-- Comments stay outside the CREATE statements (see migration 5).

-- The old table, where no library was ever recorded, so that one conversion
-- serves both kinds of cache.
CREATE TABLE IF NOT EXISTS libraries (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key TEXT NOT NULL, roots TEXT NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (name, target)) WITHOUT ROWID;

CREATE TABLE libraries6 (name TEXT NOT NULL, target TEXT NOT NULL,
  closure_key TEXT NOT NULL REFERENCES closures(key), roots BLOB NOT NULL,
  updated_at INTEGER NOT NULL, PRIMARY KEY (name, target)) WITHOUT ROWID;
-- Each row's roots, split at newlines byte by byte (as BLOBs: instr, substr
-- and length then count bytes), are packed one netstring after another.
INSERT INTO libraries6(name, target, closure_key, roots, updated_at)
  WITH RECURSIVE split(name, target, rest, packed) AS (
    SELECT name, target,
           CASE WHEN roots = '' THEN x'' ELSE CAST(CAST(roots AS BLOB) || x'0A' AS BLOB) END, ''
      FROM libraries
    UNION ALL
    SELECT name, target, substr(rest, instr(rest, x'0A') + 1),
           packed || (instr(rest, x'0A') - 1) || ':' || substr(rest, 1, instr(rest, x'0A') - 1)
             || ','
      FROM split WHERE length(rest) > 0)
  SELECT l.name, l.target, l.closure_key, CAST(s.packed AS BLOB), l.updated_at
    FROM libraries l JOIN split s
      ON s.name = l.name AND s.target = l.target AND length(s.rest) = 0;
DROP TABLE libraries;
ALTER TABLE libraries6 RENAME TO libraries;

DROP TABLE memos;
CREATE TABLE memos (key TEXT PRIMARY KEY, roots BLOB NOT NULL, deps BLOB NOT NULL,
  created_at INTEGER NOT NULL) WITHOUT ROWID;
