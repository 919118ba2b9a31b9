package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// The usual mistakes with a path flag are caught before a command reads
// the path, with the fix in the message: the benchmark's chexpercept.json
// given instead of its folder, a folder that holds the benchmark one level
// down (the demo's OUT/benchmark), a benchmark folder that does not exist
// or holds no benchmark, a folder given for a database file. Anything else
// is left to the command, whose own error names the path.

// maxHintEntries bounds the entries of a folder looked at for a hint.
const maxHintEntries = 4096

// checkPathFlags checks the path flags cmd has and was given.
func checkPathFlags(cmd *cobra.Command) error {
	f := cmd.Flags()
	if fl := f.Lookup("benchmark"); fl != nil && fl.Changed {
		if err := checkBenchmarkDir("--benchmark", fl.Value.String(), cmd.Name() == "inspect"); err != nil {
			return err
		}
	}
	for _, name := range []string{"db", "review-db"} {
		if fl := f.Lookup(name); fl != nil && fl.Changed {
			if err := checkDBFile("--"+name, fl.Value.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBenchmarkDir refuses, with the fix, a benchmark path that does not
// exist, that is a file (chexpercept.json itself, most often), or a folder
// without chexpercept.json: one that holds a benchmark folder one level
// down is named; another is not a benchmark, unless it is a build's folder
// (build: the command reads a build's folder, which inspect does).
func checkBenchmarkDir(flag, dir string, build bool) error {
	what, use := dir, flag+" "+dir // "--benchmark DIR"; "DIR" for a positional argument
	if flag == "" {
		use = dir
	} else {
		what = use
	}
	if dir == "" {
		return nil // the command says it is required
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: no such folder", what)
	}
	if err != nil {
		return nil // the command says what is wrong with it
	}
	if !fi.IsDir() {
		if filepath.Base(dir) == benchmark.JSONName {
			return fmt.Errorf("%s is the benchmark's file; pass the folder that holds it: %s", what, strings.TrimSuffix(use, dir)+filepath.Dir(dir))
		}
		return fmt.Errorf("%s is a file; pass the benchmark folder (the one that holds %s)", what, benchmark.JSONName)
	}
	if _, err := os.Lstat(filepath.Join(dir, benchmark.JSONName)); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var found []string
	for _, n := range entries(dir) {
		if fi, err := os.Stat(filepath.Join(dir, n, benchmark.JSONName)); err == nil && fi.Mode().IsRegular() {
			found = append(found, filepath.Join(dir, n))
		}
	}
	switch len(found) {
	case 0:
		if build || isBuildDir(dir) {
			return nil // a build's folder (inspect's), which may not hold chexpercept.json yet
		}
		return fmt.Errorf("%s holds no %s: it is not a benchmark folder", what, benchmark.JSONName)
	case 1:
		return fmt.Errorf("%s holds no %s; the benchmark is in %s: pass %s", what, benchmark.JSONName, found[0], strings.TrimSuffix(use, dir)+found[0])
	}
	return fmt.Errorf("%s holds no %s; benchmarks are in %s: pass one of them", what, benchmark.JSONName, strings.Join(found, ", "))
}

// isBuildDir reports whether dir is a build's folder (its work state or
// its build_info.json), which may not hold chexpercept.json yet.
func isBuildDir(dir string) bool {
	for _, n := range []string{filepath.Join("work", ".chexpercept-build"), "build_info.json"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// checkDBFile refuses a folder given where a database file is meant,
// naming the SQLite files inside it.
func checkDBFile(flag, name string) error {
	fi, err := os.Stat(name)
	if err != nil || !fi.IsDir() {
		return nil
	}
	var dbs []string
	for _, n := range entries(name) {
		if strings.HasSuffix(n, ".sqlite") || strings.HasSuffix(n, ".db") {
			dbs = append(dbs, filepath.Join(name, n))
		}
	}
	if len(dbs) > 0 {
		return fmt.Errorf("%s %s is a folder; pass the database file: %s", flag, name, strings.Join(dbs, " or "))
	}
	return fmt.Errorf("%s %s is a folder; pass the database file (e.g. %s)", flag, name, filepath.Join(name, "study.sqlite"))
}

// entries lists at most maxHintEntries names of dir, sorted.
func entries(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // read-only
	names, err := f.Readdirnames(maxHintEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	slices.Sort(names)
	return names
}
