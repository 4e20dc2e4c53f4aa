-- Kiln cache schema, migration 11: images stored by their key.
--
-- The images table was a rowid table with its primary key (closure, arch,
-- linker) in an index of its own beside it: each image's key stored twice,
-- and a lookup through both b-trees. It is now a WITHOUT ROWID table, its
-- rows in key order: every benchmark workload in one cache lost the
-- 57 kB of that index, and a cache of 1,000 GPU kernels 135 kB (an arch
-- and a linker version are long keys). Nothing referred to an image's
-- rowid outside Kiln's own statements.
--
-- Comments stay outside the CREATE statements (see migration 5).

CREATE TABLE images11 (closure_key BLOB NOT NULL REFERENCES closures(key) ON DELETE CASCADE,
  arch TEXT NOT NULL, linker TEXT NOT NULL, format TEXT NOT NULL, raw_size INTEGER NOT NULL,
  checksum INTEGER NOT NULL, data BLOB NOT NULL, created_at INTEGER NOT NULL,
  dict_id INTEGER REFERENCES dictionaries(id), PRIMARY KEY (closure_key, arch, linker))
  WITHOUT ROWID;
INSERT OR IGNORE INTO images11(closure_key, arch, linker, format, raw_size, checksum, data,
                               created_at, dict_id)
  SELECT closure_key, arch, linker, format, raw_size, checksum, data, created_at, dict_id
  FROM images;
DROP TABLE images;
ALTER TABLE images11 RENAME TO images;
CREATE INDEX images_plain ON images(format) WHERE dict_id IS NULL;
