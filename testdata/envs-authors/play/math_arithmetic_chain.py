# skill: math_reasoning
# setting: games
import random


def _move(action):
    """The command inside a \\boxed{...} answer, or the answer itself."""
    text = str(action).strip()
    if text.startswith("\\boxed{") and text.endswith("}"):
        return text[len("\\boxed{"):-1].strip()
    return text



class ArithmeticChainEnv:
    """Three chained arithmetic questions; each answer feeds the next question."""

    def reset(self, seed=None):
        return self._start(seed), {}

    def _start(self, seed):
        rng = random.Random(seed)
        self.a = rng.randint(12, 60)
        self.b = rng.randint(3, 9)
        self.c = rng.randint(5, 40)
        self.d = rng.randint(2, 6)
        self.answers = [self.a * self.b, self.a * self.b - self.c]
        self.answers.append(self.answers[1] // self.d)
        self.stage = 0
        self.turns = 0
        return self.question()

    def question(self):
        if self.stage == 0:
            return "Question 1 of 3: what is %d times %d? Answer with an integer." % (self.a, self.b)
        if self.stage == 1:
            return "Question 2 of 3: subtract %d from your previous answer." % self.c
        return "Question 3 of 3: integer-divide your previous answer by %d (round down)." % self.d

    def step(self, action):
        observation, reward, done, info = self._play(_move(action))
        return observation, reward, done, False, info

    def _play(self, action):
        self.turns += 1
        try:
            value = int(str(action).strip())
        except ValueError:
            return "Please answer with an integer. " + self.question(), 0.0, self.turns >= 10, {}
        if value == self.answers[self.stage]:
            self.stage += 1
            if self.stage == 3:
                return "All three answers are correct.", 1.0, True, {"success": True}
            return "Correct. " + self.question(), 0.25, False, {}
        done = self.turns >= 10
        info = {"success": False} if done else {}
        return "Not correct. " + self.question(), 0.0, done, info
