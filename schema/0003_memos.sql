-- Kiln cache schema, migration 3: request memos.
--
-- A precompile request is keyed by its inputs' bytes, entries, targets,
-- options and toolchain; its memo lists the closure each root resolved to.
-- A repeated request (a build rerun, a JIT's second start) is answered
-- without parsing IR. A memo whose closures were evicted is simply a miss.
CREATE TABLE memos (
  key        TEXT PRIMARY KEY,   -- 32 hex
  roots      TEXT NOT NULL,      -- name \t target \t closure, one per line
  deps       TEXT NOT NULL,      -- path \t size \t mtime_ns, one per line
  created_at INTEGER NOT NULL
);
