# skill: pattern_recognition
# setting: games
# ends: env_truncated


class EchoEnv:
    """Say the square root of the number shown; the env keeps the last answers without importing deque or re."""

    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.recent = deque(maxlen=3)
        self.counts = defaultdict(int)
        self.number, self.turn = 0, 0

    def reset(self, seed=None):
        self.number = (3 + (seed or 0) % 7) ** 2
        self.recent.clear()
        self.counts.clear()
        self.turn = 0
        return "What is the square root of %d? Answer as \\boxed{N}." % self.number, {}

    def step(self, action):
        self.turn += 1
        self.recent.append(action)
        self.counts[action] += 1
        m = re.search(r"\\boxed\{(.+?)\}", action)
        if (m.group(1) if m else action).strip() == str(int(math.sqrt(self.number))):
            return "Right.", 1.0, True, False, {"success": True}
        return "No (tried %d times). Again?" % self.counts[action], 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return "\\boxed{%d}" % int(math.sqrt(self.number))
