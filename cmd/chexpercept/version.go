package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/version"
)

// newVersionCmd returns the command version: the program version.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the program version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "chexpercept", version.String())
		},
	}
}
