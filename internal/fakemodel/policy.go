package fakemodel

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// maxMultiSelectOthers bounds m for the 2^m draw; real questions have 2–4.
const maxMultiSelectOthers = 62

// RandomLabel is the rng label of the random policy's draw (spec §11.1):
//
//	"chexpercept/random/" + <seed in decimal> + "/" + framed texts
//	  [+ "|image:" + <lowercase hex SHA-256 of the first image's base64 text>]
//
// where every message text, in order, is framed as <byte length in
// decimal> ":" <text>. The length prefix makes the framing injective, so
// two conversations whose texts concatenate to the same string but split
// differently never share a draw. Roles are left out.
//
// Deviation from the letter of §11.1 (ours): the spec keys the draw on the
// texts alone, but every record of one lesion and path asks exactly the
// same texts, so a text-only draw gives all of them the same answer and the
// baseline's accuracy is 0 or 1 per lesion instead of sitting at chance.
// The first image of the conversation (the radiograph, resent on every
// call) tells records apart, so its base64 text enters the label. The
// HTTP server sees the same base64 text, so the server and the in-process
// policy still agree, and the answer is still a pure function of the
// request content, whatever the concurrency. firstImage is "" when the
// request has no image.
func RandomLabel(seed int64, texts []string, firstImage string) string {
	var b strings.Builder
	b.WriteString("chexpercept/random/")
	b.WriteString(strconv.FormatInt(seed, 10))
	b.WriteByte('/')
	for _, t := range texts {
		b.WriteString(strconv.Itoa(len(t)))
		b.WriteByte(':')
		b.WriteString(t)
	}
	if firstImage != "" {
		b.WriteString("|image:")
		b.WriteString(firstImage)
	}
	return b.String()
}

// ParseOptions reads the last "Options:" block of a question text (format
// §3.6): the consecutive "(k) text" lines after it, k = 1, 2, …. It returns
// the number of options and whether the question is multi-select, i.e.
// its last option is "None" or starts with "None of the above".
func ParseOptions(question string) (n int, multi bool, err error) {
	lines := strings.Split(question, "\n")
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "Options:" {
			start = i
			break
		}
	}
	if start < 0 {
		return 0, false, fmt.Errorf("no \"Options:\" line in the last user message")
	}
	last := ""
	for _, ln := range lines[start+1:] {
		ln = strings.TrimRight(ln, "\r")
		want := "(" + strconv.Itoa(n+1) + ")"
		if !strings.HasPrefix(ln, want) {
			break
		}
		n++
		last = strings.TrimSpace(ln[len(want):])
	}
	if n == 0 {
		return 0, false, fmt.Errorf("the last \"Options:\" block has no \"(1) …\" line")
	}
	multi = n >= 2 && (last == "None" || strings.HasPrefix(last, "None of the above"))
	return n, multi, nil
}

// RandomAnswer is the random policy (spec §11.1) as a pure function of
// the seed and the message texts (all roles, in order). Single choice is
// uniform over the n options; multi-select is uniform over the 2^m valid
// answers: None alone, or any non-empty subset of the m = n−1 others. The
// reply is "Answer: " and the chosen numbers, ascending, comma-joined.
func RandomAnswer(seed int64, texts []string, firstImage string) (string, error) {
	lastUser := ""
	if len(texts) > 0 {
		lastUser = texts[len(texts)-1]
	}
	n, multi, err := ParseOptions(lastUser)
	if err != nil {
		return "", err
	}
	r := rng.New(RandomLabel(seed, texts, firstImage))
	if !multi {
		return parse.FormatAnswer([]int{1 + r.IntN(n)}), nil
	}
	m := n - 1
	if m > maxMultiSelectOthers {
		return "", fmt.Errorf("multi-select question with %d options is too large", n)
	}
	u := r.UintN(uint64(1) << uint(m))
	if u == 0 {
		return parse.FormatAnswer([]int{n}), nil
	}
	var pick []int
	for i := 0; i < m; i++ {
		if u&(1<<uint(i)) != 0 {
			pick = append(pick, i+1)
		}
	}
	return parse.FormatAnswer(pick), nil
}

// FirstAnswer is the first policy: always option 1.
func FirstAnswer() string { return "Answer: 1" }

// PolicyAnswer answers texts with a text-only policy (random or first),
// the function shared by the in-process baseline and serve-baseline.
func PolicyAnswer(policy string, seed int64, texts []string, firstImage string) (string, error) {
	switch policy {
	case runmodel.PolicyRandom:
		return RandomAnswer(seed, texts, firstImage)
	case runmodel.PolicyFirst:
		return FirstAnswer(), nil
	}
	return "", fmt.Errorf("policy %q cannot answer from text alone (want random or first)", policy)
}

// Per-image and per-text token estimates for the baselines' usage
// figures: roughly 4 bytes per text token and a fixed cost per image,
// enough to exercise token-rate limits and cost arithmetic realistically.
const (
	estBytesPerToken  = 4
	EstTokensPerImage = 256
)

// EstimateUsage estimates the usage of a call with the given message
// texts, image count and reply, as the baselines report it.
func EstimateUsage(texts []string, images int, reply string) *runmodel.Usage {
	in := int64(0)
	for _, t := range texts {
		in += int64((len(t) + estBytesPerToken - 1) / estBytesPerToken)
	}
	in += int64(images) * EstTokensPerImage
	out := int64((len(reply) + estBytesPerToken - 1) / estBytesPerToken)
	return &runmodel.Usage{Input: in, Output: out, Total: in + out}
}

// AnswerKeyed is a client that is handed the asked question's ground
// truth beside the request: the in-process baseline, whose oracle policy
// answers it. The runner gives the answer to such a client only, and a
// provider.Request has no field that could carry it, so no network
// client can receive it.
type AnswerKeyed interface {
	provider.Client
	// CompleteWithAnswer is Complete for a question whose ground truth
	// is gt (1-based option numbers).
	CompleteWithAnswer(ctx context.Context, req *provider.Request, gt []int) (*provider.Response, error)
}

// baselineClient runs a policy in process, without network.
type baselineClient struct {
	policy string
	seed   int64
}

// NewClient returns the in-process client for a baseline policy; it is
// AnswerKeyed, and its oracle policy answers only through
// CompleteWithAnswer.
func NewClient(policy string, seed int64) (AnswerKeyed, error) {
	if !slices.Contains(runmodel.Policies, policy) {
		return nil, fmt.Errorf("unknown baseline policy %q (want random, first or oracle)", policy)
	}
	return &baselineClient{policy: policy, seed: seed}, nil
}

// Complete answers with the random or first policy; the oracle needs the
// answer, which only CompleteWithAnswer is given.
func (c *baselineClient) Complete(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	return c.CompleteWithAnswer(ctx, req, nil)
}

// CompleteWithAnswer answers the request; the oracle policy answers gt.
func (c *baselineClient) CompleteWithAnswer(ctx context.Context, req *provider.Request, gt []int) (*provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, provider.ContextError(ctx, err)
	}
	texts := make([]string, len(req.Messages))
	images := 0
	firstImage := ""
	for i, m := range req.Messages {
		texts[i] = m.Text
		if firstImage == "" && len(m.Images) > 0 {
			firstImage = m.Images[0].PayloadKey()
		}
		images += len(m.Images)
	}
	var reply string
	switch c.policy {
	case runmodel.PolicyOracle:
		if len(gt) == 0 {
			return nil, &provider.CallError{Kind: provider.KindClient, Msg: "oracle policy needs the question's ground truth, handed to it beside the request (CompleteWithAnswer), which is missing"}
		}
		reply = parse.FormatAnswer(gt)
	default:
		var err error
		if reply, err = PolicyAnswer(c.policy, c.seed, texts, firstImage); err != nil {
			return nil, &provider.CallError{Kind: provider.KindClient, Msg: c.policy + " policy: " + err.Error()}
		}
	}
	return &provider.Response{Text: reply, FinishReason: provider.FinishStop, Usage: EstimateUsage(texts, images, reply)}, nil
}

// Identify implements runmodel.Identifier: the in-process baseline is its policy
// and seed.
func (c *baselineClient) Identify(context.Context, string) (runmodel.Identity, error) {
	owner, policy, seed := provider.BaselineOwner, c.policy, c.seed
	return runmodel.Identity{Verified: true, Source: runmodel.IdentityInProcess, OwnedBy: &owner, Policy: &policy, PolicySeed: &seed}.Seal(), nil
}
