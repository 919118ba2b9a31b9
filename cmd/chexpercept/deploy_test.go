package main

// The Dockerfile and deploy/kubernetes/*.yaml cannot be run here: no
// Docker engine, no cluster; deploy/slurm/eval-array.sh runs on a real
// one-node Slurm only in scripts/slurm-e2e.sh (CI), which needs root and
// apt. This test checks what can drift silently instead: their
// chexpercept command lines against the real cobra tree and model
// registry, the shard arithmetic against results.ParseShard, the merge input
// against the run directory eval would write, the wiring between the
// vLLM Service and the eval Job, the claim every pod mounts, and that a run
// whose records end in error still finishes (--retry-errors, bounded
// backoff limits, a Slurm merge after any outcome). Nothing is executed.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

const repoRoot = "../.."

// ---- the command tree ------------------------------------------------

// invocation is a parsed chexpercept command line.
type invocation struct {
	name  string              // subcommand
	pos   []string            // positional arguments
	flags map[string][]string // every flag's value(s) after parsing, defaults included
}

// get returns the last value of a flag ("" if none).
func (v invocation) get(name string) string {
	vs := v.flags[name]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// parseInvocation checks args (without the program name) against a new
// command tree, as main builds it: subcommand lookup, flag parsing,
// positional-argument rules and required flags.
func parseInvocation(args []string) (invocation, error) {
	if len(args) == 0 {
		return invocation{}, errors.New("no arguments")
	}
	root := newRootCmd(job.Options{})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return invocation{}, err
	}
	if cmd == root {
		return invocation{}, fmt.Errorf("%q is not a chexpercept subcommand", args[0])
	}
	fs := cmd.Flags()
	if err := cmd.ParseFlags(rest); err != nil {
		return invocation{}, fmt.Errorf("%s: %v", cmd.Name(), err)
	}
	inv := invocation{name: cmd.Name(), pos: fs.Args(), flags: map[string][]string{}}
	if err := cmd.ValidateArgs(inv.pos); err != nil {
		return invocation{}, fmt.Errorf("%s: %v", cmd.Name(), err)
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return invocation{}, fmt.Errorf("%s: %v", cmd.Name(), err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return invocation{}, fmt.Errorf("%s: %v", cmd.Name(), err)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			inv.flags[f.Name] = sv.GetSlice()
		} else {
			inv.flags[f.Name] = []string{f.Value.String()}
		}
	})
	return inv, nil
}

// ---- what eval would do with a command line ---------------------------

// evalRun is what an eval invocation resolves to.
type evalRun struct {
	inv    invocation
	entry  registry.Entry
	runDir string // the unsharded run directory, which merge takes
}

// checkEval resolves an eval invocation the way eval.go does (registry,
// run name, run directory) and checks that --shard auto/N, evaluated in
// each task's environment, gives every shard 1..N exactly once.
func checkEval(inv invocation, taskEnvs []map[string]string) (evalRun, []string) {
	var probs []string
	run := evalRun{inv: inv}
	reg, err := registry.Default()
	if err != nil {
		return run, []string{err.Error()}
	}
	prov, model := inv.get("provider"), inv.get("model")
	if e, ok := reg.Lookup(model); !ok || e.Provider != prov {
		probs = append(probs, fmt.Sprintf("--model %q is not a registry alias of provider %q (a raw id would run without the entry's quirks)", model, prov))
	}
	noThinking, _ := strconv.ParseBool(inv.get("no-thinking"))
	m, _, err := eval.ResolveModel(reg, nil, prov, model, noThinking)
	if err != nil {
		return run, append(probs, err.Error())
	}
	run.entry, _ = reg.Lookup(model)
	oracle, err := protocol.ParseOracleMode(inv.get("oracle"))
	if err != nil {
		probs = append(probs, "--oracle: "+err.Error())
	}
	mode, err := parse.ParseMode(inv.get("parse-mode"))
	if err != nil {
		probs = append(probs, "--parse-mode: "+err.Error())
	}
	// Same functions eval.Run uses to name its directory.
	run.runDir = rundir.Path(inv.get("out"), results.RunName(m.Provider, m.Label, noThinking, mode == parse.ModeStrict), string(oracle), nil)

	shard := inv.get("shard")
	n, err := strconv.Atoi(strings.TrimPrefix(shard, "auto/"))
	if !strings.HasPrefix(shard, "auto/") || err != nil {
		return run, append(probs, fmt.Sprintf("--shard %q: want auto/N so that each task picks its own shard", shard))
	}
	if len(taskEnvs) != n {
		probs = append(probs, fmt.Sprintf("%d tasks but --shard auto/%d: shards would be missing or duplicated", len(taskEnvs), n))
	}
	seen := map[int]bool{}
	for _, env := range taskEnvs {
		s, err := results.ParseShard(shard, func(k string) string { return env[k] })
		if err != nil {
			probs = append(probs, fmt.Sprintf("task with %v: %v", env, err))
			continue
		}
		if seen[s.I] {
			probs = append(probs, fmt.Sprintf("task with %v: shard %d/%d is run twice", env, s.I, s.N))
		}
		seen[s.I] = true
	}
	return run, probs
}

// checkMerge checks a merge invocation against the eval run it merges.
func checkMerge(inv invocation, run evalRun) []string {
	var probs []string
	if len(inv.pos) != 1 || filepath.Clean(inv.pos[0]) != run.runDir {
		probs = append(probs, fmt.Sprintf("merge reads %q but eval writes the run directory %q", inv.pos, run.runDir))
	}
	if inv.get("benchmark") != run.inv.get("benchmark") {
		probs = append(probs, fmt.Sprintf("merge --benchmark %q differs from eval --benchmark %q", inv.get("benchmark"), run.inv.get("benchmark")))
	}
	return probs
}

// ---- Kubernetes -----------------------------------------------------------

type k8sContainer struct {
	Name    string
	Image   string
	Command []string
	Args    []string
	Env     []struct {
		Name  string
		Value string
	}
	Ports []struct {
		ContainerPort int `yaml:"containerPort"`
	}
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sPodSpec struct {
	RestartPolicy string `yaml:"restartPolicy"`
	Containers    []k8sContainer
	Volumes       []struct {
		Name                  string
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
}

type k8sObject struct {
	file     string
	Kind     string
	Metadata struct {
		Name string
	}
	Spec struct {
		Pod                  k8sPodSpec `yaml:",inline"` // a Pod's own spec
		CompletionMode       string     `yaml:"completionMode"`
		Completions          *int
		Parallelism          *int
		BackoffLimit         *int      `yaml:"backoffLimit"`
		BackoffLimitPerIndex *int      `yaml:"backoffLimitPerIndex"`
		Selector             yaml.Node // Deployment: {matchLabels: …}; Service: labels
		Ports                []struct {
			Port       int
			TargetPort int `yaml:"targetPort"`
		}
		AccessModes []string `yaml:"accessModes"` // PersistentVolumeClaim
		Resources   struct {
			Requests map[string]string
		}
		Template struct {
			Metadata struct {
				Labels map[string]string
			}
			Spec k8sPodSpec
		}
	}
}

// pod is the object's pod spec: its own for a Pod, its template's otherwise.
func (o *k8sObject) pod() *k8sPodSpec {
	if o.Kind == "Pod" {
		return &o.Spec.Pod
	}
	return &o.Spec.Template.Spec
}

func loadK8s(file string) ([]*k8sObject, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var objs []*k8sObject
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for i := 1; ; i++ {
		o := &k8sObject{file: filepath.Base(file)}
		if err := dec.Decode(o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", file, i, err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
}

// chexperceptContainer returns the pod's container running our image.
func (o *k8sObject) chexperceptContainer() *k8sContainer {
	for i, c := range o.pod().Containers {
		if strings.Contains(c.Image, "chexpercept") {
			return &o.pod().Containers[i]
		}
	}
	return nil
}

var k8sVarRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// cliArgs is the container's chexpercept command line (without the
// program), with $(VAR) expanded as the kubelet does. A reference to a
// variable the container does not define would reach chexpercept
// literally, so it is an error.
func (c *k8sContainer) cliArgs() ([]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.Value == "" {
			env[e.Name] = "{" + e.Name + "}" // from valueFrom: unknown here
		}
	}
	var args []string
	if len(c.Command) > 0 {
		if path.Base(c.Command[0]) != "chexpercept" {
			return nil, fmt.Errorf("container %s: command %q does not run chexpercept", c.Name, c.Command)
		}
		args = append(args, c.Command[1:]...)
	}
	args = append(args, c.Args...)
	var bad error
	for i, a := range args {
		args[i] = k8sVarRef.ReplaceAllStringFunc(a, func(ref string) string {
			if ref == "$$" {
				return "$"
			}
			name := ref[2 : len(ref)-1]
			v, ok := env[name]
			if !ok && bad == nil {
				bad = fmt.Errorf("container %s: %q references $(%s), which the container's env does not define", c.Name, a, name)
			}
			return v
		})
	}
	return args, bad
}

// claimOf returns the claim mounted at the longest mount path holding p.
func (o *k8sObject) claimOf(c *k8sContainer, p string) (string, error) {
	best, vol := "", ""
	for _, m := range c.VolumeMounts {
		mp := strings.TrimRight(m.MountPath, "/")
		if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) > len(best) {
			best, vol = mp, m.Name
		}
	}
	for _, v := range o.pod().Volumes {
		if v.Name == vol && vol != "" && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName, nil
		}
	}
	return "", fmt.Errorf("%s: %s is not on a mounted PersistentVolumeClaim (it would be lost with the pod)", o.file, p)
}

// vllmFlags reads an argparse-style vLLM command line: --k=v, --k v, bare
// --k, and positionals.
func vllmFlags(args []string) (map[string]string, []string) {
	flags, pos := map[string]string{}, []string(nil)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			pos = append(pos, a)
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			v, i = args[i+1], i+1
		}
		flags[k] = v
	}
	return flags, pos
}

// k8sSet is the Kubernetes deploy files, parsed.
type k8sSet struct {
	vllm         []*k8sObject // vllm.yaml
	eval, merge  *k8sObject
	pvc, loader  *k8sObject        // data-pvc.yaml, data-loader.yaml
	fileComments map[string]string // file → its text, for the image comment
}

// k8sSingles are the files holding exactly one object, and its kind.
var k8sSingles = map[string]string{
	"eval-job.yaml": "Job", "merge-job.yaml": "Job",
	"data-pvc.yaml": "PersistentVolumeClaim", "data-loader.yaml": "Pod",
}

func loadK8sSet() (*k8sSet, error) {
	dir := filepath.Join(repoRoot, "deploy", "kubernetes")
	s := &k8sSet{fileComments: map[string]string{}}
	for _, f := range []string{"vllm.yaml", "eval-job.yaml", "merge-job.yaml", "data-pvc.yaml", "data-loader.yaml"} {
		objs, err := loadK8s(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		b, _ := os.ReadFile(filepath.Join(dir, f))
		s.fileComments[f] = string(b)
		if f == "vllm.yaml" {
			s.vllm = objs
			continue
		}
		if kind := k8sSingles[f]; len(objs) != 1 || objs[0].Kind != kind {
			return nil, fmt.Errorf("%s: want exactly one %s", f, kind)
		}
		switch f {
		case "eval-job.yaml":
			s.eval = objs[0]
		case "merge-job.yaml":
			s.merge = objs[0]
		case "data-pvc.yaml":
			s.pvc = objs[0]
		case "data-loader.yaml":
			s.loader = objs[0]
		}
	}
	return s, nil
}

func (s *k8sSet) check() []string {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }

	// Every container of our image, in any file, must hold a valid
	// command line; the eval and merge Jobs' first one is checked further.
	for _, o := range []*k8sObject{s.eval, s.merge} {
		if o.chexperceptContainer() == nil {
			add("%s: no container runs the chexpercept image", o.file)
			return probs
		}
	}
	invs := map[*k8sObject]invocation{}
	for _, o := range append([]*k8sObject{s.eval, s.merge}, s.vllm...) {
		for i := range o.pod().Containers {
			c := &o.pod().Containers[i]
			if !strings.Contains(c.Image, "chexpercept") {
				continue
			}
			if !strings.Contains(s.fileComments[o.file], "Dockerfile") {
				add("%s: no comment says the image %s is built from the Dockerfile", o.file, c.Image)
			}
			args, err := c.cliArgs()
			if err != nil {
				add("%s: %v", o.file, err)
				continue
			}
			inv, err := parseInvocation(args)
			if err != nil {
				add("%s: container %s: %v", o.file, c.Name, err)
				continue
			}
			if _, ok := invs[o]; !ok {
				invs[o] = inv
			}
		}
	}
	ev, ok1 := invs[s.eval]
	mg, ok2 := invs[s.merge]
	if !ok1 || !ok2 {
		return probs
	}
	if ev.name != "eval" || mg.name != "merge" {
		add("eval-job.yaml runs %q and merge-job.yaml runs %q", ev.name, mg.name)
		return probs
	}

	// The Indexed Job: one pod per shard, replaced pods resume.
	spec := &s.eval.Spec
	if spec.CompletionMode != "Indexed" {
		add("eval-job.yaml: completionMode %q, want Indexed (JOB_COMPLETION_INDEX picks the shard)", spec.CompletionMode)
	}
	completions := 0
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	if spec.Parallelism != nil && *spec.Parallelism > completions {
		add("eval-job.yaml: parallelism %d exceeds completions %d", *spec.Parallelism, completions)
	}
	probs = append(probs, checkEvalJobFailures(spec.Template.Spec.RestartPolicy, spec.BackoffLimit, spec.BackoffLimitPerIndex, completions)...)
	if ev.get("retry-errors") != "true" {
		add("eval-job.yaml: eval lacks --retry-errors: a replaced pod would not re-ask the records that ended in error, exit 1 again and never converge")
	}
	if mg.get("force") != "true" {
		add("merge-job.yaml: merge lacks --force: applying it again after a rerun of the eval Job would be refused")
	}
	var envs []map[string]string
	for i := range completions {
		envs = append(envs, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)})
	}
	run, p := checkEval(ev, envs)
	for _, x := range p {
		add("eval-job.yaml: %s (completions %d)", x, completions)
	}
	for _, x := range checkMerge(mg, run) {
		add("merge-job.yaml: %s", x)
	}

	// Both Jobs must see the same files.
	claims := map[string][]string{}
	for _, x := range []struct {
		o     *k8sObject
		paths []string
	}{
		{s.eval, []string{ev.get("benchmark"), ev.get("out"), ev.get("cache-dir")}},
		{s.merge, append([]string{mg.get("out"), mg.get("benchmark")}, mg.pos...)},
	} {
		for _, p := range x.paths {
			if p == "" {
				continue
			}
			cl, err := x.o.claimOf(x.o.chexperceptContainer(), p)
			if err != nil {
				add("%v", err)
				continue
			}
			claims[cl] = append(claims[cl], x.o.file+":"+p)
		}
	}
	if len(claims) > 1 {
		add("eval and merge Jobs use different claims %v; merge must read what eval wrote", claims)
	}
	probs = append(probs, s.checkStorage(ev)...)

	// --endpoint reaches a Service in front of vLLM serving the model id
	// the registry sends (provider request body "model": entry.ModelID).
	for _, ep := range ev.flags["endpoint"] {
		probs = append(probs, s.checkEndpoint(ep, run.entry)...)
	}
	if len(ev.flags["endpoint"]) == 0 {
		add("eval-job.yaml: no --endpoint")
	}
	return probs
}

// checkEvalJobFailures checks that the eval Job ends in bounded time when a
// shard keeps failing, without cutting healthy shards short.
func checkEvalJobFailures(restartPolicy string, backoffLimit, perIndex *int, completions int) []string {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, "eval-job.yaml: "+fmt.Sprintf(format, a...)) }
	if perIndex == nil {
		add("no backoffLimitPerIndex: a shard whose records keep failing would use up backoffLimit, which counts all shards together")
	} else if *perIndex < 1 || *perIndex > 3 {
		add("backoffLimitPerIndex %d, want 1..3: enough for a transient failure to heal with --retry-errors, few enough to end a persistent one soon", *perIndex)
	}
	// The API accepts backoffLimitPerIndex only with restartPolicy Never.
	if restartPolicy != "Never" {
		add("restartPolicy %q, want Never (backoffLimitPerIndex requires it; the replacement pod resumes the shard)", restartPolicy)
	}
	if perIndex != nil {
		// The Job fails once failed pods exceed backoffLimit; every index
		// failing its full budget makes completions × (perIndex+1).
		need := completions * (*perIndex + 1)
		if backoffLimit == nil {
			add("no backoffLimit: on clusters without backoffLimitPerIndex the default (6) would stop all shards early; set %d", need)
		} else if *backoffLimit < need {
			add("backoffLimit %d < completions × (backoffLimitPerIndex+1) = %d: failing shards could end the Job before healthy ones finish", *backoffLimit, need)
		}
	}
	return probs
}

// gibOf reads a Kubernetes storage quantity (binary or decimal suffix, or
// bytes) in GiB.
func gibOf(q string) (float64, error) {
	mult := map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
		"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "": 1}
	num := strings.TrimRight(q, "kKMGTi")
	m, ok := mult[q[len(num):]]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("storage %q is not a quantity such as 20Gi", q)
	}
	return v * m / (1 << 30), nil
}

// benchmarkGiB is the size of a full 2,100-case benchmark (du -sh of a
// built phantom benchmark), which the claim must hold besides the results.
const benchmarkGiB = 5.7

// checkStorage checks data-pvc.yaml and data-loader.yaml against the Jobs:
// one claim, shared across nodes, large enough, and the loader writes the
// benchmark where eval reads it.
func (s *k8sSet) checkStorage(ev invocation) []string {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	name := s.pvc.Metadata.Name
	if !slices.Contains(s.pvc.Spec.AccessModes, "ReadWriteMany") {
		add("data-pvc.yaml: accessModes %v lack ReadWriteMany; the eval pods run on several nodes and merge reads what they wrote", s.pvc.Spec.AccessModes)
	}
	if g, err := gibOf(s.pvc.Spec.Resources.Requests["storage"]); err != nil {
		add("data-pvc.yaml: %v", err)
	} else if g <= benchmarkGiB {
		add("data-pvc.yaml: storage %s is below the %.1f GiB of a full benchmark, before any results", s.pvc.Spec.Resources.Requests["storage"], benchmarkGiB)
	}
	for _, o := range []*k8sObject{s.eval, s.merge, s.loader} {
		n := 0
		for _, v := range o.pod().Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			n++
			if v.PersistentVolumeClaim.ClaimName != name {
				add("%s mounts claim %q, but data-pvc.yaml creates %q", o.file, v.PersistentVolumeClaim.ClaimName, name)
			}
		}
		if n == 0 {
			add("%s mounts no claim", o.file)
		}
	}
	if len(s.loader.pod().Containers) != 1 {
		add("data-loader.yaml: want one container")
		return probs
	}
	// The copy command in the loader's comment must put the benchmark on
	// the claim, at the path eval reads.
	bench := ev.get("benchmark")
	if cl, err := s.loader.claimOf(&s.loader.pod().Containers[0], bench); err != nil {
		add("%v (eval's --benchmark)", err)
	} else if cl != name {
		add("data-loader.yaml: eval's --benchmark %s is on claim %q, not %q", bench, cl, name)
	}
	if !strings.Contains(s.fileComments["data-loader.yaml"], "tar xf - -C "+bench+"\n") {
		add("data-loader.yaml: the copy command does not extract into eval's --benchmark %s", bench)
	}
	return probs
}

func (s *k8sSet) checkEndpoint(ep string, e registry.Entry) []string {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return []string{fmt.Sprintf("eval-job.yaml: --endpoint %q is not an http(s) URL", ep)}
	}
	if u.Path != "/v1" && u.Path != "/v1/" {
		add("eval-job.yaml: --endpoint %q: vLLM serves the OpenAI API under /v1", ep)
	}
	host := strings.SplitN(u.Hostname(), ".", 2)[0] // name or name.namespace.svc…
	port := 80
	if u.Port() != "" {
		port, _ = strconv.Atoi(u.Port())
	}
	var svc *k8sObject
	for _, o := range s.vllm {
		if o.Kind == "Service" && o.Metadata.Name == host {
			svc = o
		}
	}
	if svc == nil {
		add("eval-job.yaml: --endpoint host %q is no Service in vllm.yaml", host)
		return probs
	}
	var sel map[string]string
	if err := svc.Spec.Selector.Decode(&sel); err != nil {
		add("vllm.yaml: Service %s: selector: %v", svc.Metadata.Name, err)
	}
	target := 0
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			target = p.TargetPort
			if target == 0 {
				target = p.Port
			}
		}
	}
	if target == 0 {
		add("eval-job.yaml: --endpoint port %d is not a port of Service %s", port, svc.Metadata.Name)
		return probs
	}
	var dep *k8sObject
	for _, o := range s.vllm {
		if o.Kind == "Deployment" && len(sel) > 0 && labelsMatch(sel, o.Spec.Template.Metadata.Labels) {
			dep = o
		}
	}
	if dep == nil {
		add("vllm.yaml: Service %s selects no Deployment's pods (selector %v)", svc.Metadata.Name, sel)
		return probs
	}
	var vc *k8sContainer
	for i, c := range dep.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.ContainerPort == target {
				vc = &dep.Spec.Template.Spec.Containers[i]
			}
		}
	}
	if vc == nil {
		add("vllm.yaml: Service %s targets port %d, which no container of Deployment %s exposes", svc.Metadata.Name, target, dep.Metadata.Name)
		return probs
	}
	f, pos := vllmFlags(vc.Args)
	served := f["served-model-name"]
	if served == "" {
		served = f["model"]
		if len(pos) > 0 {
			served = pos[0]
		}
	}
	if served != e.ModelID {
		add("vllm.yaml: vLLM serves %q but alias %s sends model %q (registry model_id)", served, e.Alias, e.ModelID)
	}
	if _, ok := f["reasoning-parser"]; ok {
		add("vllm.yaml: --reasoning-parser set; the raw text must stay in the content (spec protocol.md §11)")
	}
	if e.TrustRemoteCode {
		if _, ok := f["trust-remote-code"]; !ok {
			add("vllm.yaml: alias %s needs --trust-remote-code", e.Alias)
		}
	}
	if e.MaxModelLen != nil {
		if n, err := strconv.Atoi(f["max-model-len"]); err != nil || n < *e.MaxModelLen {
			add("vllm.yaml: --max-model-len %q is below the registry's %d for %s", f["max-model-len"], *e.MaxModelLen, e.Alias)
		}
	}
	if e.ImageLimit != nil {
		var lim map[string]int
		if err := json.Unmarshal([]byte(f["limit-mm-per-prompt"]), &lim); err != nil || lim["image"] < *e.ImageLimit {
			add("vllm.yaml: --limit-mm-per-prompt %q must allow %d images (JSON, e.g. {\"image\": %d})", f["limit-mm-per-prompt"], *e.ImageLimit, *e.ImageLimit)
		}
	}
	return probs
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ---- Slurm ------------------------------------------------------------

// shellWords splits a shell command line into words: single and double
// quotes, backslash escapes and $NAME / ${NAME} expansion from vars.
// Anything fancier (command substitution, ${NAME:-…}) is refused rather
// than guessed.
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\\' && i+1 < len(s):
			i++
			if quote == '"' && !strings.ContainsRune("$`\"\\", rune(s[i])) {
				cur.WriteByte('\\')
			}
			cur.WriteByte(s[i])
			inWord = true
		case c == '"':
			if quote == '"' {
				quote = 0
			} else {
				quote = '"'
			}
			inWord = true
		case c == '\'' && quote == 0:
			quote, inWord = '\'', true
		case c == '$':
			rest := s[i+1:]
			var name string
			if strings.HasPrefix(rest, "{") {
				end := strings.IndexByte(rest, '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated ${ in %q", s)
				}
				name, i = rest[1:end], i+1+end
			} else {
				n := len(rest) - len(strings.TrimLeft(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"))
				name, i = rest[:n], i+n
			}
			if !shNameRe.MatchString(name) {
				return nil, fmt.Errorf("unsupported expansion after $ in %q", s)
			}
			v, ok := vars[name]
			if !ok {
				return nil, fmt.Errorf("uses $%s, which the script does not set (set -u would stop it)", name)
			}
			cur.WriteString(v)
			inWord = true
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// joinContinued returns line i joined with its backslash-continued lines;
// strip removes a prefix (the comment marker) from every line.
func joinContinued(lines []string, i int, strip string) string {
	var b strings.Builder
	for ; i < len(lines); i++ {
		l := strings.TrimRight(strings.TrimPrefix(strings.TrimSpace(lines[i]), strip), " \t")
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			b.WriteString(cont + " ")
			continue
		}
		b.WriteString(l)
		break
	}
	return b.String()
}

var (
	shNameRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	shParamRe  = regexp.MustCompile(`^:\s*"\$\{([A-Za-z_][A-Za-z0-9_]*):([?=])([^}]*)\}"$`)
	shArithRe  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=\$\(\((.*)\)\)$`)
	sbatchOpt  = regexp.MustCompile(`^#SBATCH\s+--array[= ](\S+)`)
	arrayRange = regexp.MustCompile(`^(\d+)-(\d+)(%\d+)?$`)
)

// arith evaluates a + / - expression of integers and variables.
func arith(expr string, vars map[string]string) (int, error) {
	toks := strings.Fields(strings.NewReplacer("+", " + ", "-", " - ").Replace(expr))
	sum, sign := 0, 1
	for i, t := range toks {
		if i%2 == 1 {
			switch t {
			case "+":
				sign = 1
			case "-":
				sign = -1
			default:
				return 0, fmt.Errorf("$(( %s )): only + and - are understood", expr)
			}
			continue
		}
		v, err := strconv.Atoi(t)
		if err != nil {
			s, ok := vars[strings.TrimPrefix(t, "$")]
			if v, err = strconv.Atoi(s); !ok || err != nil {
				return 0, fmt.Errorf("$(( %s )): %s is not a known integer", expr, t)
			}
		}
		sum += sign * v
	}
	return sum, nil
}

// checkSlurm checks the array script's eval line, its shard arithmetic and
// the merge command in its header.
func checkSlurm(script string) []string {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, "eval-array.sh: "+fmt.Sprintf(format, a...)) }
	lines := strings.Split(script, "\n")

	lo, hi := -1, -1
	for _, l := range lines {
		if m := sbatchOpt.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			r := arrayRange.FindStringSubmatch(m[1])
			if r == nil {
				add("#SBATCH --array=%s: want a contiguous range A-B[%%K]; auto/N numbers tasks by SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1", m[1])
				return probs
			}
			lo, _ = strconv.Atoi(r[1])
			hi, _ = strconv.Atoi(r[2])
		}
	}
	if lo < 0 || hi < lo {
		add("no valid #SBATCH --array range")
		return probs
	}
	// Slurm sets these for every task of the array.
	vars := map[string]string{"SLURM_ARRAY_TASK_MIN": strconv.Itoa(lo), "SLURM_ARRAY_TASK_MAX": strconv.Itoa(hi),
		"SLURM_ARRAY_TASK_ID": "{SLURM_ARRAY_TASK_ID}", "HOME": "/placeholder/HOME"}
	evalLine, mergeLine := "", ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if m := shParamRe.FindStringSubmatch(t); m != nil {
			vars[m[1]] = "/placeholder/" + m[1] // required: the user's value
			if m[2] == "=" {
				def, err := shellWords(m[3], vars) // the default, expanded
				if err != nil || len(def) != 1 {
					add("default of %s: %q is not one word (%v)", m[1], m[3], err)
					return probs
				}
				vars[m[1]] = def[0]
			}
		} else if m := shArithRe.FindStringSubmatch(t); m != nil {
			v, err := arith(m[2], vars)
			if err != nil {
				add("%v", err)
				return probs
			}
			vars[m[1]] = strconv.Itoa(v)
		} else if strings.HasPrefix(t, "exec chexpercept ") {
			evalLine = joinContinued(lines, i, "")
		} else if strings.HasPrefix(t, "#") && strings.Contains(t, "--wrap") && mergeLine == "" {
			mergeLine = joinContinued(lines, i, "#")
		}
	}
	words, err := shellWords(evalLine, vars)
	if err != nil || len(words) < 2 {
		add("exec chexpercept line: %v", err)
		return probs
	}
	inv, err := parseInvocation(words[2:])
	if err != nil {
		add("%v", err)
		return probs
	}
	if inv.name != "eval" {
		add("runs %q, want eval", inv.name)
		return probs
	}
	var envs []map[string]string
	for id := lo; id <= hi; id++ {
		envs = append(envs, map[string]string{"SLURM_ARRAY_TASK_ID": strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN": strconv.Itoa(lo)})
	}
	run, p := checkEval(inv, envs)
	for _, x := range p {
		add("%s (--array=%d-%d)", x, lo, hi)
	}
	if inv.get("retry-errors") != "true" {
		add("exec line lacks --retry-errors: a requeued or resubmitted task would not re-ask the records that ended in error")
	}

	// The header's `sbatch … --wrap "chexpercept merge …"`, as the
	// submitting shell (with BENCH, RESULTS and jobid set) would run it.
	hdrVars := map[string]string{"jobid": "12345"}
	for k, v := range vars {
		hdrVars[k] = v
	}
	sb, err := shellWords(mergeLine, hdrVars)
	if err != nil {
		add("header merge command: %v", err)
		return probs
	}
	k := slices.Index(sb, "--wrap")
	if k < 0 || k+1 >= len(sb) {
		add("header has no sbatch --wrap \"chexpercept merge …\"")
		return probs
	}
	// afterok would never start the merge: a task whose shard has records
	// in error exits 1.
	dep := ""
	for j, w := range sb[:k] {
		if v, ok := strings.CutPrefix(w, "--dependency="); ok {
			dep = v
		} else if (w == "--dependency" || w == "-d") && j+1 < k {
			dep = sb[j+1]
		}
	}
	if dep != "afterany:"+hdrVars["jobid"] {
		add("header: sbatch --dependency %q, want afterany:$jobid (a task with records in error exits 1, so afterok would never start the merge)", dep)
	}
	mw, err := shellWords(sb[k+1], nil)
	if err != nil || len(mw) < 2 || mw[0] != "chexpercept" {
		add("header --wrap %q does not run chexpercept (%v)", sb[k+1], err)
		return probs
	}
	mi, err := parseInvocation(mw[1:])
	if err != nil {
		add("header merge command: %v", err)
		return probs
	}
	for _, x := range checkMerge(mi, run) {
		add("header: %s", x)
	}
	if mi.get("force") != "true" {
		add("header: merge lacks --force: merging again after a resubmission would be refused")
	}
	return probs
}

// ---- Dockerfile -----------------------------------------------------------

func checkDockerfile(dockerfile, gomod string) []string {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, "Dockerfile: "+fmt.Sprintf(format, a...)) }
	goVer := ""
	sc := bufio.NewScanner(strings.NewReader(gomod))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "go "); ok {
			p := strings.Split(v, ".")
			if len(p) >= 2 {
				goVer = p[0] + "." + p[1]
			}
		}
	}
	built, copied, entry := false, "", ""
	for _, l := range strings.Split(dockerfile, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			if img, ok := strings.CutPrefix(f[1], "golang:"); ok && !strings.HasPrefix(img, goVer) {
				add("builds with golang:%s but go.mod says go %s", img, goVer)
			}
		case "RUN":
			if strings.Contains(l, "go build") {
				built = strings.Contains(l, "CGO_ENABLED=0") && strings.Contains(l, "./cmd/chexpercept")
			}
		case "COPY":
			if len(f) == 4 && strings.HasPrefix(f[1], "--from=") {
				copied = f[3]
			}
		case "ENTRYPOINT":
			var ep []string
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), f[0]))), &ep); err != nil || len(ep) == 0 {
				add("ENTRYPOINT %q is not an exec-form JSON list", l)
			} else {
				entry = ep[0]
			}
		}
	}
	if goVer == "" {
		add("go.mod has no go directive")
	}
	if !built {
		add("no RUN builds ./cmd/chexpercept with CGO_ENABLED=0 (the final image has no libc)")
	}
	if entry == "" || entry != copied {
		add("ENTRYPOINT %q is not the binary copied from the build stage (%q)", entry, copied)
	}
	return probs
}

// ---- the tests ------------------------------------------------------------

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDeployFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		check func(t *testing.T) []string
	}{
		{"kubernetes", func(t *testing.T) []string {
			s, err := loadK8sSet()
			if err != nil {
				t.Fatal(err)
			}
			return s.check()
		}},
		{"slurm", func(t *testing.T) []string { return checkSlurm(readRepoFile(t, "deploy/slurm/eval-array.sh")) }},
		{"dockerfile", func(t *testing.T) []string {
			return checkDockerfile(readRepoFile(t, "Dockerfile"), readRepoFile(t, "go.mod"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.check(t) {
				t.Error(p)
			}
		})
	}
	t.Run("slurm bash -n", func(t *testing.T) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("bash not installed")
		}
		if out, err := exec.Command(bash, "-n", filepath.Join(repoRoot, "deploy/slurm/eval-array.sh")).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v: %s", err, out)
		}
	})
}

// TestDeployChecksCatchDrift mutates copies of the deploy files and wants
// each mutation reported, so the checks above cannot pass vacuously.
func TestDeployChecksCatchDrift(t *testing.T) {
	t.Parallel()
	setArg := func(c *k8sContainer, prefix, repl string) {
		for i, a := range c.Args {
			if strings.HasPrefix(a, prefix) {
				c.Args[i] = repl
				return
			}
		}
		t.Fatalf("no argument %s… to mutate", prefix)
	}
	k8s := []struct {
		name   string
		mutate func(s *k8sSet)
		want   string
	}{
		{"unknown flag", func(s *k8sSet) { setArg(s.eval.chexperceptContainer(), "--concurrency", "--concurrence=32") }, "unknown flag: --concurrence"},
		{"wrong completions", func(s *k8sSet) { n := 7; s.eval.Spec.Completions = &n }, "7 tasks but --shard auto/8"},
		{"parallelism above completions", func(s *k8sSet) { n := 9; s.eval.Spec.Parallelism = &n }, "parallelism 9 exceeds"},
		{"not indexed", func(s *k8sSet) { s.eval.Spec.CompletionMode = "NonIndexed" }, "completionMode"},
		{"restart on failure", func(s *k8sSet) { s.eval.Spec.Template.Spec.RestartPolicy = "OnFailure" }, "restartPolicy"},
		{"no retry-errors", func(s *k8sSet) {
			c := s.eval.chexperceptContainer()
			c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--retry-errors") })
		}, "lacks --retry-errors"},
		{"retry-errors false", func(s *k8sSet) { setArg(s.eval.chexperceptContainer(), "--retry-errors", "--retry-errors=false") }, "lacks --retry-errors"},
		{"no per-index limit", func(s *k8sSet) { s.eval.Spec.BackoffLimitPerIndex = nil }, "no backoffLimitPerIndex"},
		{"large per-index limit", func(s *k8sSet) { n := 16; s.eval.Spec.BackoffLimitPerIndex = &n }, "backoffLimitPerIndex 16"},
		{"backoffLimit cuts shards", func(s *k8sSet) { n := 16; s.eval.Spec.BackoffLimit = &n }, "backoffLimit 16 <"},
		{"no backoffLimit", func(s *k8sSet) { s.eval.Spec.BackoffLimit = nil }, "no backoffLimit:"},
		{"merge without force", func(s *k8sSet) {
			c := s.merge.chexperceptContainer()
			c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--force") })
		}, "lacks --force"},
		{"claim renamed", func(s *k8sSet) { s.pvc.Metadata.Name = "chexpercept-store" }, `data-pvc.yaml creates "chexpercept-store"`},
		{"claim not shared", func(s *k8sSet) { s.pvc.Spec.AccessModes = []string{"ReadWriteOnce"} }, "lack ReadWriteMany"},
		{"claim too small", func(s *k8sSet) { s.pvc.Spec.Resources.Requests["storage"] = "5Gi" }, "below the 5.7 GiB"},
		{"claim size unreadable", func(s *k8sSet) { s.pvc.Spec.Resources.Requests["storage"] = "20 gigs" }, "not a quantity"},
		{"loader claim", func(s *k8sSet) { s.loader.pod().Volumes[0].PersistentVolumeClaim.ClaimName = "scratch" }, `data-loader.yaml mounts claim "scratch"`},
		{"loader mount", func(s *k8sSet) { s.loader.pod().Containers[0].VolumeMounts[0].MountPath = "/mnt" }, "/data/benchmark is not on a mounted"},
		{"loader copy target", func(s *k8sSet) {
			s.fileComments["data-loader.yaml"] = strings.Replace(s.fileComments["data-loader.yaml"], "-C /data/benchmark\n", "-C /data/bench\n", 1)
		}, "does not extract into"},
		{"alias not in registry", func(s *k8sSet) { setArg(s.eval.chexperceptContainer(), "--model", "--model=qwen9-999b") }, "not a registry alias"},
		{"alias of another provider", func(s *k8sSet) { setArg(s.eval.chexperceptContainer(), "--provider", "--provider=openai") }, "not a registry alias"},
		{"fixed shard", func(s *k8sSet) { setArg(s.eval.chexperceptContainer(), "--shard", "--shard=1/8") }, "want auto/N"},
		{"missing required flag", func(s *k8sSet) { setArg(s.eval.chexperceptContainer(), "--out", "--oracle=none") }, `required flag(s) "out" not set`},
		{"endpoint host", func(s *k8sSet) {
			setArg(s.eval.chexperceptContainer(), "--endpoint", "--endpoint=http://vllm-llama:8000/v1")
		}, "no Service"},
		{"endpoint port", func(s *k8sSet) {
			setArg(s.eval.chexperceptContainer(), "--endpoint", "--endpoint=http://vllm-qwen:8080/v1")
		}, "port 8080"},
		{"served model name", func(s *k8sSet) {
			setArg(&s.vllm[0].Spec.Template.Spec.Containers[0], "--served-model-name", "--served-model-name=qwen")
		}, "registry model_id"},
		{"reasoning parser", func(s *k8sSet) {
			c := &s.vllm[0].Spec.Template.Spec.Containers[0]
			c.Args = append(c.Args, "--reasoning-parser=qwen3")
		}, "--reasoning-parser"},
		{"image limit", func(s *k8sSet) {
			setArg(&s.vllm[0].Spec.Template.Spec.Containers[0], "--limit-mm-per-prompt", `--limit-mm-per-prompt={"image": 4}`)
		}, "must allow 7 images"},
		{"merge dir", func(s *k8sSet) {
			c := s.merge.chexperceptContainer()
			c.Args[1] = strings.Replace(c.Args[1], "oracle_none", "oracle_implicit", 1)
		}, "eval writes the run directory"},
		{"merge after no-thinking", func(s *k8sSet) {
			c := s.eval.chexperceptContainer()
			c.Args = append(c.Args, "--no-thinking")
		}, "_no_thinking/oracle_none"},
		{"merge benchmark", func(s *k8sSet) { setArg(s.merge.chexperceptContainer(), "--benchmark", "--benchmark=/data/other") }, "merge --benchmark"},
		{"merge missing --out", func(s *k8sSet) {
			c := s.merge.chexperceptContainer()
			c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--out") })
		}, `required flag(s) "out" not set`},
		{"merge without dir", func(s *k8sSet) { c := s.merge.chexperceptContainer(); c.Args = c.Args[:1] }, "missing DIR"},
		{"different claims", func(s *k8sSet) { s.merge.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "other" }, "different claims"},
		{"undefined env reference", func(s *k8sSet) {
			setArg(s.eval.chexperceptContainer(), "--cache-dir", "--cache-dir=/data/cache/$(NOPE)")
		}, "$(NOPE)"},
		{"unknown subcommand", func(s *k8sSet) { s.merge.chexperceptContainer().Args[0] = "combine" }, "unknown command"},
	}
	for _, tc := range k8s {
		t.Run("kubernetes/"+tc.name, func(t *testing.T) {
			s, err := loadK8sSet()
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(s)
			assertReported(t, s.check(), tc.want)
		})
	}

	script := readRepoFile(t, "deploy/slurm/eval-array.sh")
	slurm := []struct{ name, old, new, want string }{
		{"unknown flag", "--oracle none", "--oracel none", "unknown flag: --oracel"},
		{"stepped array", "--array=0-7", "--array=0-14:2", "contiguous range"},
		{"shard count off by one", "SLURM_ARRAY_TASK_MIN + 1 ))", "SLURM_ARRAY_TASK_MIN ))", "8 tasks but --shard auto/7"},
		{"alias not in registry", "--model qwen3.6-27b", "--model qwen9-999b", "not a registry alias"},
		{"undefined variable", `--out "$RESULTS"`, `--out "$RESULT"`, "$RESULT, which the script does not set"},
		{"header merge dir", "qwen3.6-27b/oracle_none --out", "qwen3.6-27b/oracle_implicit --out", "eval writes the run directory"},
		{"header merge flag", "--out $RESULTS/merged", "--output $RESULTS/merged", "unknown flag: --output"},
		{"no retry-errors", `"auto/$SHARDS" --retry-errors`, `"auto/$SHARDS"`, "lacks --retry-errors"},
		{"merge after ok", "--dependency=afterany:$jobid", "--dependency=afterok:$jobid", "want afterany:$jobid"},
		{"merge without dependency", "--dependency=afterany:$jobid ", "", "want afterany:$jobid"},
		{"merge dependency as -d", "--dependency=afterany:$jobid", "-d afterany:$jobid", ""},
		{"header merge without force", ` --force"`, `"`, "merge lacks --force"},
	}
	for _, tc := range slurm {
		t.Run("slurm/"+tc.name, func(t *testing.T) {
			if !strings.Contains(script, tc.old) {
				t.Fatalf("eval-array.sh no longer contains %q; update the mutation", tc.old)
			}
			probs := checkSlurm(strings.Replace(script, tc.old, tc.new, 1))
			if tc.want == "" { // an equivalent spelling: nothing to report
				for _, p := range probs {
					t.Error(p)
				}
				return
			}
			assertReported(t, probs, tc.want)
		})
	}

	dockerfile, gomod := readRepoFile(t, "Dockerfile"), readRepoFile(t, "go.mod")
	docker := []struct{ name, old, new, want string }{
		{"go version", "golang:1.26", "golang:1.25", "go.mod says go 1.26"},
		{"cgo", "CGO_ENABLED=0 ", "", "CGO_ENABLED=0"},
		{"entrypoint", `ENTRYPOINT ["/chexpercept"]`, `ENTRYPOINT ["/bin/chexpercept"]`, "not the binary copied"},
	}
	for _, tc := range docker {
		t.Run("dockerfile/"+tc.name, func(t *testing.T) {
			if !strings.Contains(dockerfile, tc.old) {
				t.Fatalf("Dockerfile no longer contains %q; update the mutation", tc.old)
			}
			assertReported(t, checkDockerfile(strings.Replace(dockerfile, tc.old, tc.new, 1), gomod), tc.want)
		})
	}
}

func assertReported(t *testing.T, probs []string, want string) {
	t.Helper()
	for _, p := range probs {
		if strings.Contains(p, want) {
			return
		}
	}
	t.Errorf("mutation not reported: want a problem containing %q, got %q", want, probs)
}

func TestDeployGibOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"20Gi", 20, false},
		{"1Ti", 1024, false},
		{"512Mi", 0.5, false},
		{"10G", 1e10 / (1 << 30), false},
		{"1073741824", 1, false},
		{"", 0, true},
		{"20 gigs", 0, true},
		{"Gi", 0, true},
		{"-5Gi", 0, true},
		{"5Xi", 0, true},
	} {
		got, err := gibOf(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("gibOf(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestShellWords covers the small splitter the Slurm check relies on.
func TestShellWords(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"A": "x y", "B": "/b"}
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{`eval --benchmark "$B" --out ${B}/r`, []string{"eval", "--benchmark", "/b", "--out", "/b/r"}, ""},
		{`'single $A' "double $A" a\ b`, []string{"single $A", "double x y", "a b"}, ""},
		{`--shard "auto/$B"`, []string{"--shard", "auto//b"}, ""},
		{`"x\"y" ''`, []string{`x"y`, ""}, ""},
		{`$C`, nil, "$C, which the script does not set"},
		{`"open`, nil, "unterminated"},
		{`$(date)`, nil, "unsupported expansion"},
	} {
		got, err := shellWords(tc.in, vars)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("shellWords(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
