package config

// Ablation holds the paper's ablation switches: each takes one part of the method out of a run.
// Every preset leaves them off.
type Ablation struct {
	// NoCorpus gives the Designer no corpus document: the slots draw none and the prompts show none.
	NoCorpus bool `json:"no_corpus"`
	// NoMemory gives the Designer no environment memory: the prompts show no seeds or negatives.
	NoMemory bool `json:"no_memory"`
	// FrozenDesigner pins the Designer to llm.designer.model while the Agent trains. It keeps calling the
	// base weights (with the portable OpenAI fields only), and none of its samples is trained on.
	FrozenDesigner bool `json:"frozen_designer"`
	// NoDesignerGrad drops the Designer's samples from training. The shared weights keep moving with the
	// Agent's updates (the authors' "no Designer training"; frozen_designer pins the Designer's model).
	NoDesignerGrad bool `json:"no_designer_grad"`
}

// validate has no rule: any combination of switches runs.
func (Ablation) validate(*Config) error { return nil }

// presetAblation is every switch off: the full method.
func presetAblation(presetSpec) Ablation { return Ablation{} }
