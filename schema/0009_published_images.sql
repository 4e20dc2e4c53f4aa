-- Kiln cache schema, migration 9: published host images.
--
-- No table changes. A cache may now have `<cache>-images` beside it: each
-- host root's closure, CPU and image, which a process that only loads host
-- code reads instead of this file (src/storage/published.h). It is only
-- right while every writer removes it before each commit, as Kiln does from
-- this version on; a Kiln of an earlier version would not, and refuses a
-- cache of a newer schema, which this version number makes this one.
--
-- What else writes this file (the sqlite3 shell, a script, a copy over
-- it) is seen too: `<cache>-images` carries the sizes and times of this
-- file and its WAL it was published for, and a load does not believe it
-- once either has changed (its format 4).

INSERT OR REPLACE INTO meta(key, value) VALUES ('published images', '<cache>-images');
