// Package gate is the `gate` stage: it decides which Designer candidates become the step's
// environment pool (SPADE §2.3: environments must execute, be well defined, deterministic,
// non-trivial, and hints must not leak the answer; §3.3 for the tool-use checks).
//
// Reads: run.json (setting, sandbox.*, gate.*), `candidates` at the pool step.
// Writes: `gate_results` (one row per check per candidate attempt, in the order of the setting's
// check table in checks.go, which CheckNamesFor returns and docs/sandbox.md's gate tables list; after the
// first failure the rest are recorded as skipped) and `envs` (the accepted candidate of each slot).
//
// Every check runs generated code only through internal/sandbox. A slot whose candidates all
// fail goes back to the Designer with the last error through a Regenerator, up to
// gate.max_attempts attempts; with no Regenerator the gate judges the candidates in the lake.
// Slots are sharded by slot number (--shard i --shards n).
package gate
