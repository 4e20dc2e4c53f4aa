-- Kiln cache schema, migration 13: claims, so that the processes of one
-- machine (or of one shared file system) compile each job once.
--
-- A process claims each job it is about to compile (storage/single_flight.h):
-- one row per claimed key, owned by one holder. The holder stores the job,
-- then deletes its row. Others asking for the key wait for the job instead
-- of compiling it. A holder proves it is alive by bumping `beat` (every
-- quarter of its lease term); a waiter that sees the same beat for a whole
-- term, measured on its own clock (no two clocks are compared), or that sees
-- on its own machine that the holder's process is gone, takes the claim
-- over by a compare-and-set on (holder, beat). No foreign key: a claim names
-- a job nobody has stored yet.
CREATE TABLE claims (
  claim_key  BLOB PRIMARY KEY,   -- the job's key (16 bytes)
  holder     TEXT NOT NULL,      -- one process's run (32 hex, random)
  host       TEXT NOT NULL,      -- boot id and pid namespace: "same machine"
  host_name  TEXT NOT NULL,      -- for messages only
  pid        INTEGER NOT NULL,
  pid_start  INTEGER NOT NULL,   -- the process's start time, in clock ticks after boot
  beat       INTEGER NOT NULL,   -- bumped by each renewal
  claimed_at INTEGER NOT NULL    -- milliseconds since the epoch, for messages only
) WITHOUT ROWID;
CREATE INDEX claims_by_holder ON claims(holder);
