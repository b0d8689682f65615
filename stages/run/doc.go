// Package run is the step runner behind `spade run --steps A-B` (docs/architecture.md, "Stages"): for each
// step it runs the stages of Stages in order: at refresh steps (step mod sample.refresh_every = 0) sample,
// generate and gate, or pool in a run on an imported pool (sample.pool); then rollout, regret and grpo;
// and eval at the steps eval.every names.
//
// Resume: a stage is done at a step when its marker partition is committed (the partition it writes
// last), and the runner skips it without starting it, so after a crash, a Ctrl-C or a reboot the same
// command continues at the first stage whose output is missing. Every stage commits its partitions
// atomically, so a killed run leaves nothing partial for a reader, and an unfinished stage is redone with
// --force semantics, so a partition it committed before it was killed is replaced, not reused.
//
// Interrupt: when ctx is cancelled (SIGINT), the stage in progress stops its work, a lake write that has
// started completes, nothing partial is committed, and Run returns an error wrapping context.Canceled
// (the CLI exits 130). The per-stage time table is printed in every case.
//
// This package is the only one that imports the other stages; it hands them to each other as functions
// (the gate's regenerations and hint calls go to the Designer through generate's Generator).
package run
