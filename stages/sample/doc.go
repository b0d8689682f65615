// Package sample is the `sample` stage: at each pool refresh it fixes the skill of every slot and draws
// a fresh corpus document for it (SPADE §2.4, §3.1: six skills, three active per window, rotating; one new
// pretraining document per environment so the Designer does not loop on its own patterns).
//
// Settings: sample.skills (the allowlist, in rotation order), sample.skill_order (round_robin: the
// authors' rotation through that list; seeded: a seeded shuffle of it), sample.doc_draw (uniform among
// unused documents, the authors'; matched: suited to the skill's domain), sample.excerpt_words and
// sample.excerpt_chars (both cuts apply). Drawer.Attempt gives a regeneration attempt its own fresh
// document, as the authors draw one per attempt.
//
// Reads: run.json (seed, setting, sample.*, ablation.no_corpus), the imported corpus
// (sample.corpus), and every earlier `samples` partition of the run (documents already used).
// Writes: `samples` at the refresh step.
//
// Everything is a function of the run seed and the step, so a re-run writes the same rows.
package sample
