package pool

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/spadekit/spade/internal/inputfile"
	"github.com/spadekit/spade/schemas"
)

// RLVEOfficial16 are the RLVE environments of the authors' RLVE_ENV_SET official16
// (cmd/games/train_fixed_rlve_*.sh), the default of an rlve import.
var RLVEOfficial16 = []string{
	"Division", "EuclidGame", "GCDOne_Counting", "HamiltonianPath", "LampChanging", "LargestConvexPolygon",
	"Multiplication", "PCPPermutation", "Path_NoGoingBack_Counting", "SAT", "ShortestPath", "Sorting",
	"SpiralMatrix", "SubsequenceReversalLNDS", "UndamagedSubmatrixCounting", "WYRLevelingGround",
}

//go:embed rlve_wrapper.py.tmpl
var rlveWrapperText string

var rlveWrapper = template.Must(template.New("rlve").Parse(rlveWrapperText))

// The lines of a wrapper program that the pool stage sets per step (RLVEProgram).
const (
	rlveLevelLine = "\nRLVE_LEVEL = 0\n"
	rlveSeedLine  = "\nRLVE_PROBLEM_SEED = None\n"
)

var (
	// registryImport is a line of RLVE's environments/__init__.py or parameter_controllers/__init__.py:
	// `from Gym.environments.sorting import Sorting_Environment`.
	registryImport = regexp.MustCompile(`(?m)^from\s+Gym\.(environments|parameter_controllers)\.(\w+)\s+import\s+(\w+)\s*$`)
	// registryEntry is an entry of identifier2environment or identifier2controller: `"Sorting" : Sorting_Environment,`.
	registryEntry = regexp.MustCompile(`(?m)^\s*"([^"]+)"\s*:\s*(\w+)\s*,?\s*$`)
	// relativeImport is a module __init__.py's `from .environment import Sorting_Environment`.
	relativeImport = regexp.MustCompile(`(?m)^from\s+\.(\w+)\s+import\s+(\w+)\s*$`)
	// gymImport is the start of an import of RLVE's own package.
	gymImport = regexp.MustCompile(`^(from\s+(Gym(\.\w+)*|\.+\w*)\s+import\b|import\s+Gym\b)`)
	// identifierChars are the characters a wrapper class name keeps of an RLVE identifier.
	identifierChars = regexp.MustCompile(`[^A-Za-z0-9_]`)
)

// rlveModule is one module of RLVE's registry: its class and the file that defines it.
type rlveModule struct {
	class, file string
}

// readRLVE builds one wrapper program per RLVE environment of root (a checkout of RLVE's Gym package, or
// a directory holding Gym/) that envs selects (official16, "" too; all; or a comma list of RLVE
// identifiers) and that has a parameter controller, as the authors' adapter keeps only those. An
// environment whose module imports other RLVE modules than the two base classes is returned Unusable.
func readRLVE(root, envs string) ([]Program, error) {
	gym, err := gymDir(root)
	if err != nil {
		return nil, err
	}
	environments, err := rlveRegistry(gym, "environments", "environment.py")
	if err != nil {
		return nil, err
	}
	controllers, err := rlveRegistry(gym, "parameter_controllers", "parameter_controller.py")
	if err != nil {
		return nil, err
	}
	var names []string
	switch strings.TrimSpace(envs) {
	case "", "official16":
		names = RLVEOfficial16
	case "all", "*":
		for name := range environments {
			if _, ok := controllers[name]; ok {
				names = append(names, name)
			}
		}
		slices.Sort(names)
	default:
		for _, n := range strings.Split(envs, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	var out []Program
	for _, name := range names {
		env, ok := environments[name]
		if !ok {
			return nil, &InputError{File: "--rlve-envs", Problem: fmt.Sprintf("%s has no environment %q in %s", gym, name, filepath.Join(gym, "environments", "__init__.py"))}
		}
		ctrl, ok := controllers[name]
		if !ok {
			return nil, &InputError{File: "--rlve-envs", Problem: fmt.Sprintf("environment %q has no parameter controller in %s", name, filepath.Join(gym, "parameter_controllers", "__init__.py"))}
		}
		p, err := rlveProgram(gym, name, env, ctrl)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, &InputError{File: "--rlve-envs", Problem: "selects no environment"}
	}
	return out, nil
}

// gymDir returns root when it is RLVE's Gym package (environment.py and environments/ in it), or
// root/Gym when that is.
func gymDir(root string) (string, error) {
	if _, err := inputfile.Stat(root); err != nil {
		return "", err
	}
	for _, dir := range []string{root, filepath.Join(root, "Gym")} {
		if st, err := os.Stat(filepath.Join(dir, "environments")); err == nil && st.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, "environment.py")); err == nil {
				return dir, nil
			}
		}
	}
	return "", &InputError{File: root, Problem: "not a checkout of RLVE's Gym package (want environment.py, environments/ and parameter_controllers/, here or under Gym/)"}
}

// rlveRegistry reads GYM/sub/__init__.py: the identifier → class dict and the class → module imports,
// resolved to each class's file through the module's own __init__.py (file is the default file name).
func rlveRegistry(gym, sub, file string) (map[string]rlveModule, error) {
	initPath := filepath.Join(gym, sub, "__init__.py")
	body, err := os.ReadFile(initPath)
	if err != nil {
		return nil, &InputError{File: initPath, Problem: "cannot read: " + errorsCause(err).Error()}
	}
	moduleOf := map[string]string{}
	for _, m := range registryImport.FindAllStringSubmatch(string(body), -1) {
		if m[1] == sub {
			moduleOf[m[3]] = m[2]
		}
	}
	out := map[string]rlveModule{}
	for _, m := range registryEntry.FindAllStringSubmatch(string(body), -1) {
		mod, ok := moduleOf[m[2]]
		if !ok {
			continue
		}
		path := filepath.Join(gym, sub, mod, file)
		if init, err := os.ReadFile(filepath.Join(gym, sub, mod, "__init__.py")); err == nil {
			for _, r := range relativeImport.FindAllStringSubmatch(string(init), -1) {
				if r[2] == m[2] {
					path = filepath.Join(gym, sub, mod, r[1]+".py")
				}
			}
		}
		out[m[1]] = rlveModule{class: m[2], file: path}
	}
	if len(out) == 0 {
		return nil, &InputError{File: initPath, Problem: "no `\"Name\" : Class` entries with a `from Gym." + sub + ".MODULE import Class` line"}
	}
	return out, nil
}

// rlveProgram writes the wrapper program of one environment: the base-class stand-in, the environment's
// module and its controller's without their imports of RLVE's package, and the single-turn env.
func rlveProgram(gym, name string, env, ctrl rlveModule) (Program, error) {
	p := Program{ID: name, Name: name, Format: schemas.PoolRLVE, Source: env.file}
	envSource, envProblem, err := moduleSource(env.file)
	if err != nil {
		return Program{}, err
	}
	ctrlSource, ctrlProblem, err := moduleSource(ctrl.file)
	if err != nil {
		return Program{}, err
	}
	rel := func(path string) string {
		r, err := filepath.Rel(gym, path)
		if err != nil {
			return path
		}
		return filepath.ToSlash(r)
	}
	meta, _ := json.Marshal(map[string]string{"environment_file": rel(env.file), "environment_class": env.class,
		"controller_file": rel(ctrl.file), "controller_class": ctrl.class})
	p.Meta = string(meta)
	switch {
	case envProblem != "":
		p.Unusable = envProblem
	case ctrlProblem != "":
		p.Unusable = ctrlProblem
	}
	var buf bytes.Buffer
	err = rlveWrapper.Execute(&buf, map[string]string{
		"Name": name, "EnvClass": env.class, "ControllerClass": ctrl.class,
		"WrapperClass": "RLVE" + identifierChars.ReplaceAllString(name, "_") + "Env",
		"EnvFile":      rel(env.file), "EnvSource": envSource, "ControllerFile": rel(ctrl.file), "ControllerSource": ctrlSource,
	})
	if err != nil {
		return Program{}, fmt.Errorf("pool import: the RLVE wrapper of %s: %w", name, err)
	}
	p.Code = buf.String()
	if p.Unusable == "" {
		if err := checkProgram(env.file, "", p); err != nil {
			return Program{}, err
		}
	}
	return p, nil
}

// moduleSource reads one RLVE module and drops its top-level imports of RLVE's package: those of the two
// base classes, which the wrapper defines, go without a word; for any other (another RLVE module, a
// relative import), which a single program cannot carry, problem says which.
func moduleSource(path string) (source, problem string, err error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return "", "", &InputError{File: path, Problem: "cannot read: " + errorsCause(err).Error()}
	}
	if !utf8.Valid(body) {
		return "", "", &InputError{File: path, Problem: "not valid UTF-8"}
	}
	lines := strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !gymImport.MatchString(line) {
			kept = append(kept, line)
			continue
		}
		stmt := line
		for strings.Count(stmt, "(") > strings.Count(stmt, ")") && i+1 < len(lines) { // a parenthesised import
			i++
			stmt += " " + strings.TrimSpace(lines[i])
		}
		base := strings.HasPrefix(stmt, "from Gym.environment ") || strings.HasPrefix(stmt, "from Gym.parameter_controller ")
		if !base && problem == "" {
			problem = fmt.Sprintf("%s imports %q, another module of RLVE's package, which a wrapped environment cannot carry", filepath.Base(path), strings.TrimSpace(stmt))
		}
	}
	return strings.TrimRight(strings.Join(kept, "\n"), "\n"), problem, nil
}

// RLVEProgram returns an rlve pool program set to generate its problem at level with generator seed
// problemSeed, for every play of the step: the wrapper's RLVE_LEVEL and RLVE_PROBLEM_SEED lines replaced.
func RLVEProgram(code string, level int, problemSeed int64) (string, error) {
	if strings.Count(code, rlveLevelLine) != 1 || strings.Count(code, rlveSeedLine) != 1 {
		return "", fmt.Errorf("not a program of `spade pool import --format rlve` (no single %q and %q line)",
			strings.TrimSpace(rlveLevelLine), strings.TrimSpace(rlveSeedLine))
	}
	code = strings.Replace(code, rlveLevelLine, fmt.Sprintf("\nRLVE_LEVEL = %d\n", level), 1)
	return strings.Replace(code, rlveSeedLine, fmt.Sprintf("\nRLVE_PROBLEM_SEED = %d\n", problemSeed), 1), nil
}
