# skill: tool_use
# setting: tools
import json
import random

PRODUCTS = ["apples", "bolts", "candles", "dice", "erasers", "flour", "glue", "hinges"]


class Inventory:
    """A warehouse backend: read and change stock levels to carry out four user instructions."""

    def tools(self):
        return [
            {"type": "function", "function": {
                "name": "list_items", "description": "List every product with its stock level.",
                "parameters": {"type": "object", "properties": {}, "required": []}}},
            {"type": "function", "function": {
                "name": "get_stock", "description": "Return the stock level of one product.",
                "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}},
            {"type": "function", "function": {
                "name": "set_stock", "description": "Set the stock level of one product.",
                "parameters": {"type": "object", "properties": {"item": {"type": "string"}, "quantity": {"type": "integer"}},
                               "required": ["item", "quantity"]}}},
        ]

    def reset(self, seed):
        rng = random.Random(seed)
        names = rng.sample(PRODUCTS, 5)
        self.stock = {name: rng.randint(0, 40) for name in names}
        self.initial = dict(self.stock)
        self.first, self.second, self.third = names[0], names[1], names[2]
        self.target = rng.randint(45, 90)
        self.instructions = [
            "Set the stock of %s to %d." % (self.first, self.target),
            "Move all units of %s into %s (so %s ends at zero)." % (self.second, self.third, self.second),
            "Every product below ten units must be restocked to exactly ten.",
            "Finally make sure the total stock is at least %d by adding to %s only." % (self.target + 100, self.first),
        ]
        self.stage = 0
        self.turns = 0
        return "Instruction 1: " + self.instructions[0]

    def success_conditions(self):
        moved = self.initial[self.second] + self.initial[self.third]
        return [
            self.stock[self.first] >= self.target,
            self.stock[self.second] == 0 and self.stock[self.third] >= moved,
            all(q >= 10 or name == self.second for name, q in self.stock.items()),
            sum(self.stock.values()) >= self.target + 100,
        ]

    def call(self, name, args):
        if name == "list_items":
            return json.dumps(self.stock, sort_keys=True)
        item = args.get("item")
        if item not in self.stock:
            return "error: unknown item %r" % (item,)
        if name == "get_stock":
            return "%s: %d" % (item, self.stock[item])
        if name == "set_stock":
            quantity = args.get("quantity")
            if not isinstance(quantity, int) or quantity < 0:
                return "error: quantity must be a non-negative integer"
            self.stock[item] = quantity
            return "%s set to %d" % (item, quantity)
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
            reward += 0.1
        if self.stage == len(self.instructions):
            return result + "\nAll instructions are done.", 1.0, True, {"success": True}
        done = self.turns >= 25
        text = result
        if reward > 0:
            text += "\nInstruction %d: %s" % (self.stage + 1, self.instructions[self.stage])
        return text, reward, done, ({"success": False} if done else {})
