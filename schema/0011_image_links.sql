-- Kiln cache schema, migration 11: an image's arch and linker stored once.
--
-- Every image row spelled its arch and linker ("x86_64-linux", "lld 22.1.8")
-- in the row and again in its primary key's index: 22 of a host image
-- row's bytes, twice, where its packed image is about a hundred. They are
-- now a row of image_links, which an image names by id; an image is still
-- one per (closure, arch, linker). Every benchmark workload in one cache:
-- images and their index 257 kB -> 201 kB (the file 815 -> 755 kB).
--
-- image_links has a few rows (one per arch and linker), as targets has: no
-- index, and gc keeps them.

CREATE TABLE image_links (id INTEGER PRIMARY KEY, arch TEXT NOT NULL, linker TEXT NOT NULL);
INSERT INTO image_links(arch, linker) SELECT DISTINCT arch, linker FROM images ORDER BY arch, linker;

CREATE TABLE images11 (closure_key BLOB NOT NULL REFERENCES closures(key) ON DELETE CASCADE,
  link INTEGER NOT NULL REFERENCES image_links(id), format TEXT NOT NULL,
  raw_size INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB NOT NULL,
  created_at INTEGER NOT NULL, dict_id INTEGER REFERENCES dictionaries(id),
  PRIMARY KEY (closure_key, link));
INSERT INTO images11(rowid, closure_key, link, format, raw_size, checksum, data, created_at, dict_id)
  SELECT i.rowid, i.closure_key, l.id, i.format, i.raw_size, i.checksum, i.data, i.created_at,
         i.dict_id FROM images i JOIN image_links l ON l.arch = i.arch AND l.linker = i.linker
  ORDER BY i.rowid;
DROP TABLE images;
ALTER TABLE images11 RENAME TO images;
CREATE INDEX images_plain ON images(format) WHERE dict_id IS NULL;
