-- Kiln cache schema, migration 10: deferred symbols stored as their bytes.
--
-- A deferred job's symbol is "__kiln_deferred_" and 32 lowercase hex digits
-- of a hash (core::deferred_symbol): in jobs, member_sets and job_refs it
-- is now stored as the 16 bytes the digits spell (a BLOB), as keys are
-- since migration 8; any other symbol (a GPU kernel's own name, one in
-- another case) stays text. A symbol is always stored the same way, so
-- the columns still compare with one another; Kiln turns the bytes back
-- into the text it reads (core::unpack_deferred_symbol). Every benchmark
-- workload in one cache: 47 of a job row's bytes were its symbol.
--
-- kiln_pack_symbol(text) is the bytes, or the text itself for any other.

UPDATE jobs SET symbol = kiln_pack_symbol(symbol) WHERE symbol GLOB '__kiln_deferred_*';
UPDATE member_sets SET symbol = kiln_pack_symbol(symbol) WHERE symbol GLOB '__kiln_deferred_*';
UPDATE job_refs SET symbol = kiln_pack_symbol(symbol) WHERE symbol GLOB '__kiln_deferred_*';
