package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// One name per concept: every command spells a concept
// the same way, and the older spellings keep working as hidden aliases so
// that no script breaks. The seeds, each named for what it seeds:
//
//	--build-seed    build           every case's draws (config key seed)
//	--sample-seed   sample, eval    the random sample the command draws: candidates (sample,
//	                                config key seed), records of --sample (eval)
//	--assign-seed   review init     assignment of cases to reviewers
//	--phantom-seed  phantom         the synthetic radiographs
//	--policy-seed   eval, serve-baseline  the random and simulated policies' answers
//	--gen-seed      eval            sent to the model as its sampling seed
//
// --seed, the older spelling of the first four, is a hidden alias.

// hiddenAlias makes old a hidden alias of the flag name: both set the
// same value, and only name is shown in the help.
func hiddenAlias(f *pflag.FlagSet, name, old string) {
	fl := f.Lookup(name)
	f.Var(fl.Value, old, fl.Usage)
	f.Lookup(old).NoOptDefVal = fl.NoOptDefVal
	_ = f.MarkHidden(old)
}

// changed reports whether the flag or any of its aliases was given.
func changed(f *pflag.FlagSet, names ...string) bool {
	for _, n := range names {
		if f.Changed(n) {
			return true
		}
	}
	return false
}

// namedSeedFlag defines the seed flag name on f, with --seed as its
// hidden alias.
func namedSeedFlag(f *pflag.FlagSet, p *uint64, name, usage string) {
	f.Var((*seedValue)(p), name, usage)
	hiddenAlias(f, name, "seed")
}

// benchmarkArgs lets a command take its benchmark as --benchmark DIR or,
// the older spelling, as a positional BENCH_DIR (at most one of them).
func benchmarkArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) > 1:
		return fmt.Errorf("unexpected argument %q (usage: %s)", args[1], cmd.UseLine())
	case len(args) == 1 && cmd.Flags().Changed("benchmark"):
		return errors.New("give the benchmark once: --benchmark BENCH_DIR (a positional BENCH_DIR is the older spelling)")
	case len(args) == 0 && !cmd.Flags().Changed("benchmark"):
		return fmt.Errorf("missing --benchmark BENCH_DIR (usage: %s)", cmd.UseLine())
	case len(args) == 1:
		return checkBenchmarkDir("", args[0], cmd.Name() == "inspect")
	}
	return nil
}

// benchmarkDir is the benchmark given to a command checked by
// benchmarkArgs.
func benchmarkDir(flag string, args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return flag
}
