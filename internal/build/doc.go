// Package build is the orchestrator of `chexpercept build` and
// `chexpercept inspect` (spec build.md §2.4, §3, §4, §11–§14).
//
// The model:
//
//   - A candidate is processed on its own (processCase): the per-case
//     pipeline of source → frame → anatomy → deform (+ qagen inside the
//     sequential retries) → anatomy attributes → qagen record, under one
//     case RNG and a recover boundary. Its outcome — success with the
//     record, the masks and the deformation JSON, or a failure with a §14
//     reason — is stored in work/<key_id>/ with a fingerprint of everything
//     that can change it, so a rerun reuses it.
//   - The scheduler walks each lesion's negative and positive candidate
//     lists with a bounded speculative window over N workers (used only
//     when no list has work within its target) and stops a list once its
//     first lf (or rf+rr) successes in candidate order are known. Which candidates count is decided afterwards from candidate
//     order alone (the 1-worker walk), so outputs never depend on N or on
//     interruptions.
//   - Assembly reads only the 1-worker walk's entries of work/, renders the
//     bundle in parallel through staging folders, copies the masks, writes
//     the side files and reports, then chexpercept.json, then SHA256SUMS.
package build
