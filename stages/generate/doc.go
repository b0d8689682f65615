// Package generate is the `generate` stage: the Environment Designer writes one environment program (and,
// under generate.hint_mode = inline, a privileged hint) per slot of a pool refresh (SPADE §2.1, §2.4).
// It also serves the gate: Generator.Regenerate asks again for a slot that failed (generate.regen:
// repair with the error in the prompt, or resample with a fresh document), and Generator.Hint writes the
// hint of an accepted env under generate.hint_mode = separate (role hint, never trained).
//
// Reads: run.json, `samples` at the refresh step, the newest `memory` snapshot before it (an empty or
// missing memory is valid). Writes: the "generate" fragment of `llm_calls` and `candidates` at the
// refresh step (--shard i --shards n: the slots with slot mod n = i); each regeneration writes its call
// and its candidate, in the gate's transaction, as the fragment gate-slotNNNNNN-attemptN of both tables.
//
// The memory shown to a slot is ChooseMemory's: the label rule under memory.seed_pool = 0, or the
// authors' (seeds drawn at random, reproducibly per run seed, step and slot, from the top of the skill's
// in-band entries by regret; negatives by solve rate), with memory.code_chars, memory.show_hint and
// memory.negatives_code deciding how entries are shown.
//
// Prompts are versioned text/template files embedded in the binary
// (prompts/designer_<family>.<version>.tmpl, chosen by PromptSpec from the setting, generate.hint_mode
// and ablation.no_corpus; prompts/hint.<version>.tmpl), overridable per run by llm.prompt_file and
// generate.hint_prompt_file. Resampled attempts read the run's corpus (docdraw.go). Ablations:
// ablation.no_corpus drops the document section (separate mode: its own prompt),
// ablation.no_memory the memory section, ablation.frozen_designer serves the Designer from
// llm.designer.* instead of the trained weights.
package generate
