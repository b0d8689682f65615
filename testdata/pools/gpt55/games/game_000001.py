class CounterEnv:
    """Count up: the answer at each turn is the turn number; three right answers win."""

    def __init__(self, max_turns=5):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.turn = 0
        self.right = 0
        return "Say 1, then 2, then 3, one number per turn.", {"goal": 3}

    def step(self, action):
        self.turn += 1
        if action.strip() == str(self.right + 1):
            self.right += 1
        if self.right == 3:
            return "Done.", 1.0, True, False, {"success": True}
        return "Next number?", 0.0, False, self.turn >= self.max_turns, {}
