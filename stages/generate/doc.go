// Package generate is the `generate` stage: the Environment Designer writes one environment program and
// a privileged hint per slot of a pool refresh (SPADE §2.1, §2.4), and the gate's regeneration entry
// point (Generator.Regenerate) asks again for a slot that failed, with the error in the prompt.
//
// Reads: run.json, `samples` at the refresh step, the newest `memory` snapshot before it (an empty or
// missing memory is valid). Writes: `candidates` and `llm_calls` at the refresh step.
//
// Prompts are versioned text/template files embedded in the binary (prompts/designer_<setting>.v1.tmpl),
// overridable per run by llm.prompt_file. Ablations: ablation.no_corpus drops the document section,
// ablation.no_memory the memory section, ablation.frozen_designer serves the Designer from
// llm.designer.* instead of the trained weights.
package generate
