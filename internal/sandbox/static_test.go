package sandbox

import (
	"context"
	"strings"
	"testing"
)

func TestStaticCheck(t *testing.T) {
	p := newTestPool(t, isoUnderTest(), nil)
	ctx := context.Background()
	cases := []struct {
		name, code, setting, want string
	}{
		{"ok", counterEnv, "games", ""},
		{"re.compile is fine", "import re\nP = re.compile(\"a+\")\n" + counterEnv, "games", ""},
		{"os.system via attribute", counterEnv + "\nimport math\nmath.system\n", "games", "attribute 'system'"},
		{"syntax", "class A(:\n", "games", "syntax error"},
		{"no class", "x = 1\n", "games", "exactly one class"},
		{"two classes", counterEnv + "\nclass B:\n    def reset(self, s): return ''\n    def step(self, a): return '',0,True,{}\n", "games", "exactly one class"},
		{"tools missing", counterEnv, "tools", "no tools() method"},
		{"import os", "import os\n" + counterEnv, "games", "import of 'os'"},
		{"from subprocess", "from subprocess import run\n" + counterEnv, "games", "import from 'subprocess'"},
		{"eval", counterEnv + "\nx = eval('1')\n", "games", "'eval'"},
		{"open", counterEnv + "\nx = open('/etc/passwd')\n", "games", "'open'"},
		{"dunder import", counterEnv + "\nx = __import__('os')\n", "games", "'__import__'"},
		{"subclasses", counterEnv + "\nx = ().__class__.__base__.__subclasses__()\n", "games", "'__base__'"},
		{"getattr computed", counterEnv + "\nimport math\nx = getattr(math, 'sq' + 'rt')\n", "games", "getattr()"},
		{"dunder string", counterEnv + "\nx = '__globals__'\n", "games", "dunder string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems, err := p.StaticCheck(ctx, c.code, c.setting)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(problems, "; ")
			if c.want == "" && len(problems) > 0 {
				t.Fatalf("want pass, got %s", joined)
			}
			if c.want != "" && !strings.Contains(joined, c.want) {
				t.Fatalf("want a problem containing %q, got %q", c.want, joined)
			}
		})
	}
}
