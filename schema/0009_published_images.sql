-- Kiln cache schema, migration 9: published host images.
--
-- No table changes. A cache may now have `<cache>-images` beside it: each
-- host root's closure, CPU and image, which a process that only loads host
-- code reads instead of this file (src/storage/published.h). It is only
-- right while every writer removes it before each commit, as Kiln does from
-- this version on; a Kiln of an earlier version would not, and refuses a
-- cache of a newer schema, which this version number makes this one.
--
-- Whatever else writes this file (the sqlite3 shell, a script) must remove
-- `<cache>-images` too, or loads keep reading the host images it held.

INSERT OR REPLACE INTO meta(key, value) VALUES ('published images', '<cache>-images');
