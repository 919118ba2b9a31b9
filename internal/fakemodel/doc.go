// Package fakemodel holds the stand-in models that answer the protocol's
// questions without a real vision-language model: the baseline policies
// (random, first, oracle; spec protocol.md §11) with their in-process
// client (NewClient), the simulated model of demos and tests (Simulated:
// the ground truth at set stage accuracies), and the baseline server that
// serves either over the OpenAI-compatible wire (NewServer,
// serve-baseline).
//
// It sits below the runner (eval) and beside the model clients: it speaks
// provider's conversation model and imports nothing above it.
package fakemodel
