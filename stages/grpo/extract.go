package grpo

// ExtractTrainerSource writes the embedded spade_trainer package under dir (dir/spade_trainer/*.py),
// the same files the torch trainer runs, for a process that imports its model or checkpoint format
// (the lab's policy server serves the trainer's tiny decoder).
func ExtractTrainerSource(dir string) error { return extractTrainer(dir) }
