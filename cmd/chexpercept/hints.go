package main

import (
	"errors"
	"fmt"

	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/respcache"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runs"
	"github.com/chexpercept/chexpercept/internal/validate"
)

// Packages under internal/ describe a missing or wrong setting by what it
// is; the command layer adds the flag that supplies it.

// flagHint pairs an error of an internal package with the text a command
// appends to it.
type flagHint struct {
	target error
	text   string
}

// withHints appends the text of the first hint whose target err matches.
func withHints(err error, hints ...flagHint) error {
	for _, h := range hints {
		if err != nil && errors.Is(err, h.target) {
			return fmt.Errorf("%w%s", err, h.text)
		}
	}
	return err
}

// evalHints are the flag hints of eval.
var evalHints = []flagHint{
	{validate.ErrInvalid, " (run `chexpercept validate` for all; --allow-invalid evaluates it anyway)"},
	{provider.ErrNoCredentials, "; or pass --api-key-file FILE"},
	{results.ErrUnknownLesion, "; check --lesions"},
	{provider.ErrNoEndpoint, "; pass --endpoint URL"},
	{provider.ErrNoModelsEndpoint, " (check that --endpoint ends in /v1; for a server without a models endpoint pass --no-preflight)"},
	{provider.ErrModelNotServed, " (check --model; if the server knows it under another name, e.g. an Azure deployment named unlike its model, pass --no-preflight)"},
	{eval.ErrOtherServer, " (--endpoint, --out)"},
	{respcache.ErrLinkedDefault, " (--cache-dir)"},
}

// forceHint is the hint of the commands that write a run directory.
var forceHint = flagHint{runs.ErrRunExists, "; pass --force to replace it"}
