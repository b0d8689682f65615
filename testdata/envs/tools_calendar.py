# skill: tool_use
# setting: tools
import json
import random

DAYS = ["mon", "tue", "wed", "thu", "fri"]
TITLES = ["standup", "review", "lunch", "planning", "retro", "demo", "interview", "sync"]


class Calendar:
    """A calendar backend with events by day; three scheduling instructions arrive in turn."""

    def tools(self):
        return [
            {"type": "function", "function": {
                "name": "list_events", "description": "List the events of one day (mon..fri).",
                "parameters": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}},
            {"type": "function", "function": {
                "name": "add_event", "description": "Add an event with a title on a day; returns its id.",
                "parameters": {"type": "object", "properties": {"day": {"type": "string"}, "title": {"type": "string"}},
                               "required": ["day", "title"]}}},
            {"type": "function", "function": {
                "name": "delete_event", "description": "Delete an event by id.",
                "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}},
        ]

    def reset(self, seed):
        rng = random.Random(seed)
        self.events = {}
        self.next_id = 1
        for day in DAYS:
            for title in rng.sample(TITLES, rng.randint(1, 3)):
                self.events[self.next_id] = (day, title)
                self.next_id += 1
        self.busy_day = rng.choice(DAYS)
        self.new_day = rng.choice([d for d in DAYS if d != self.busy_day])
        self.instructions = [
            "Clear %s: delete every event on that day." % self.busy_day,
            "Add an event titled 'offsite' on %s." % self.new_day,
            "Make sure no day has more than two events, deleting the extras.",
        ]
        self.stage = 0
        self.turns = 0
        return "Instruction 1: " + self.instructions[0]

    def count(self, day):
        return sum(1 for d, _ in self.events.values() if d == day)

    def success_conditions(self):
        return [
            self.count(self.busy_day) == 0,
            any(d == self.new_day and t == "offsite" for d, t in self.events.values()),
            all(self.count(day) <= 2 for day in DAYS),
        ]

    def call(self, name, args):
        if name == "list_events":
            day = args.get("day")
            if day not in DAYS:
                return "error: day must be one of mon..fri"
            return json.dumps([{"id": i, "title": t} for i, (d, t) in sorted(self.events.items()) if d == day])
        if name == "add_event":
            day, title = args.get("day"), args.get("title")
            if day not in DAYS or not isinstance(title, str) or not title:
                return "error: need a day (mon..fri) and a title"
            self.events[self.next_id] = (day, title)
            self.next_id += 1
            return "added event %d" % (self.next_id - 1)
        if name == "delete_event":
            ident = args.get("id")
            if ident not in self.events:
                return "error: no event %r" % (ident,)
            del self.events[ident]
            return "deleted event %d" % ident
        return "error: unknown tool %r" % (name,)

    def step(self, action):
        self.turns += 1
        try:
            call = json.loads(action)
            name = call["name"]
            args = call.get("arguments", {})
            if isinstance(args, str):
                args = json.loads(args)
            if not isinstance(args, dict):
                raise ValueError("arguments must be an object")
        except (ValueError, KeyError, TypeError) as e:
            done = self.turns >= 25
            return "error: action must be a tool call as JSON (%s)" % e, 0.0, done, ({"success": False} if done else {})
        result = self.call(name, args)
        reward = 0.0
        conditions = self.success_conditions()
        while self.stage < len(self.instructions) and conditions[self.stage]:
            self.stage += 1
            reward += 0.15
        if self.stage == len(self.instructions):
            return result + "\nAll instructions are done.", 1.0, True, {"success": True}
        done = self.turns >= 25
        text = result
        if reward > 0:
            text += "\nInstruction %d: %s" % (self.stage + 1, self.instructions[self.stage])
        return text, reward, done, ({"success": False} if done else {})
