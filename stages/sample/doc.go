// Package sample is the `sample` stage: at each pool refresh it fixes the skill of every slot and draws
// a fresh corpus document for it (SPADE §2.4, §3.1: six skills, three active per window, rotating; one new
// pretraining document per environment so the Designer does not loop on its own patterns).
//
// Reads: run.json (seed, setting, sample.*, ablation.no_corpus), the imported corpus
// (sample.corpus), and every earlier `samples` partition of the run (documents already used).
// Writes: `samples` at the refresh step.
//
// Everything is a function of the run seed and the step, so a re-run writes the same rows.
package sample
