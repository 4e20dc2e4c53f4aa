-- Kiln cache schema, migration 4: gc that spares running precompiles, and
-- where each name came from.

-- A running precompile leases every job key it plans before it looks in the
-- cache: gc evicts no leased job (stored or not yet) and no closure rooted at
-- one, so what a process just stored or found cached outlives the gap before
-- its closures are recorded and named. The precompile releases its leases when its closures are
-- recorded; a crashed one's lapse at expires_at. No foreign key: a lease may
-- name a job nobody has stored yet.
CREATE TABLE job_leases (
  job_key    TEXT NOT NULL,
  holder     TEXT NOT NULL,      -- one precompile run (32 hex, random)
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (job_key, holder)
);
CREATE INDEX job_leases_by_holder ON job_leases(holder);

-- The unit (its input file names) whose precompile last pointed the name;
-- empty for names recorded before this migration or imported.
ALTER TABLE names ADD COLUMN unit TEXT NOT NULL DEFAULT '';
