class EchoWordEnv:
    """Repeat the word shown, in capitals."""

    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.word = ["apple", "river", "stone", "cloud"][(seed or 0) % 4]
        self.turn = 0
        return "Write the word %s in capital letters." % self.word

    def step(self, action):
        self.turn += 1
        if action.strip() == self.word.upper():
            return "Exactly.", 1.0, True, False, {"success": True}
        return "Not quite.", 0.0, self.turn >= self.max_turns, False, {}
