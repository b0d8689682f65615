# skill: causal_inference
# setting: games
import random


def _move(action):
    """The command inside a \\boxed{...} answer, or the answer itself."""
    text = str(action).strip()
    if text.startswith("\\boxed{") and text.endswith("}"):
        return text[len("\\boxed{"):-1].strip()
    return text



class SwitchboardEnv:
    """Three switches drive three lamps through hidden wiring; experiment, then state the wiring."""

    def reset(self, seed=None):
        return self._start(seed), {}

    def _start(self, seed):
        rng = random.Random(seed)
        self.wiring = list(range(3))
        while self.wiring == [0, 1, 2]:
            rng.shuffle(self.wiring)
        self.switches = [False, False, False]
        self.turns = 0
        self.credited = set()
        return ("Switches 0-2 each light one lamp among A, B, C. Commands: 'toggle N' flips switch N; "
                "'wiring XYZ' states the lamp of switches 0, 1, 2 (e.g. wiring BCA). " + self.lamps())

    def lamps(self):
        lit = [False, False, False]
        for s, on in enumerate(self.switches):
            if on:
                lit[self.wiring[s]] = True
        return "Lamps: " + ", ".join("%s %s" % ("ABC"[i], "on" if lit[i] else "off") for i in range(3)) + "."

    def step(self, action):
        observation, reward, done, info = self._play(_move(action))
        return observation, reward, done, False, info

    def _play(self, action):
        self.turns += 1
        done = self.turns >= 12
        words = str(action).strip().lower().split()
        if len(words) == 2 and words[0] == "toggle" and words[1] in ("0", "1", "2"):
            s = int(words[1])
            self.switches[s] = not self.switches[s]
            return "Switch %d is now %s. %s" % (s, "on" if self.switches[s] else "off", self.lamps()), 0.0, done, ({"success": False} if done else {})
        if len(words) == 2 and words[0] == "wiring" and sorted(words[1].upper()) == ["A", "B", "C"]:
            claim = ["ABC".index(ch) for ch in words[1].upper()]
            right = [claim[s] == self.wiring[s] for s in range(3)]
            if all(right):
                return "That is the wiring.", 1.0, True, {"success": True}
            reward = 0.0
            for s in range(3):
                if right[s] and s not in self.credited:
                    self.credited.add(s)
                    reward += 0.1
            return "%d of 3 switches are right." % sum(right), reward, done, ({"success": False} if done else {})
        return "Commands: 'toggle N' or 'wiring XYZ'.", 0.0, done, ({"success": False} if done else {})
