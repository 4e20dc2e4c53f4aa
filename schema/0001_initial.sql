-- Kiln cache schema, migration 1. Keys are 32 lowercase hex digits (XXH3-128).
-- Content-addressed rows (jobs, artifacts, closures, images) never change once
-- written; `names` is the only mutable mapping.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One compilation job: an entry function of a unit for one target and options.
CREATE TABLE jobs (
  key         TEXT PRIMARY KEY,
  entry       TEXT NOT NULL,      -- the entry's original name
  symbol      TEXT NOT NULL,      -- deferred symbol the job's code defines for its entry
  target      TEXT NOT NULL,      -- canonical target spec ("host", "sm_90", ...)
  triple      TEXT NOT NULL,
  cpu         TEXT NOT NULL,
  features    TEXT NOT NULL,
  options     TEXT NOT NULL,      -- canonical options ("-O2", "-O0 -g")
  module_hash TEXT NOT NULL,
  toolchain   TEXT NOT NULL,
  compile_ms  REAL NOT NULL,
  created_at  INTEGER NOT NULL
);
CREATE INDEX jobs_by_symbol ON jobs(symbol);

-- Code produced for a job, zstd-compressed; checksum is XXH3-64 of the raw bytes.
CREATE TABLE artifacts (
  job_key     TEXT NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  format      TEXT NOT NULL,      -- "obj" (host ELF relocatable), later "ptx", "cubin", "bc"
  raw_size    INTEGER NOT NULL,
  checksum    INTEGER NOT NULL,
  data        BLOB NOT NULL,
  PRIMARY KEY (job_key, format)
);

-- The deferred symbols a job's code leaves open, and the entry each names.
CREATE TABLE job_refs (
  job_key     TEXT NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
  symbol      TEXT NOT NULL,
  entry       TEXT NOT NULL,
  PRIMARY KEY (job_key, symbol)
);

-- A root job plus everything reachable through deferred references,
-- each deferred symbol resolved to one job.
CREATE TABLE closures (
  key         TEXT PRIMARY KEY,
  root_job    TEXT NOT NULL REFERENCES jobs(key),
  target      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  last_used   INTEGER NOT NULL
);
CREATE TABLE closure_members (
  closure_key TEXT NOT NULL REFERENCES closures(key) ON DELETE CASCADE,
  symbol      TEXT NOT NULL,
  job_key     TEXT NOT NULL REFERENCES jobs(key),
  PRIMARY KEY (closure_key, symbol)
);
CREATE INDEX closure_members_by_job ON closure_members(job_key);

-- A closure linked into one loadable binary for one device architecture.
CREATE TABLE images (
  closure_key TEXT NOT NULL REFERENCES closures(key) ON DELETE CASCADE,
  arch        TEXT NOT NULL,      -- "x86_64-linux" for host, "sm_90", "gfx942"
  linker      TEXT NOT NULL,      -- linker fingerprint
  format      TEXT NOT NULL,      -- "so", "cubin", "hsaco"
  raw_size    INTEGER NOT NULL,
  checksum    INTEGER NOT NULL,
  data        BLOB NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (closure_key, arch, linker)
);

-- A root's entry name and target → the closure of its latest precompile.
CREATE TABLE names (
  name        TEXT NOT NULL,
  target      TEXT NOT NULL,
  closure_key TEXT NOT NULL REFERENCES closures(key),
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (name, target)
);
