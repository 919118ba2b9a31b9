package fakemodel

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// BenchmarkRoundTrip: one call through the OpenAI-compatible client to
// the server, with small images (text-bound) and with 7 images of 1 MB
// (bytes-bound, as a revision-required record's late turns).
func BenchmarkRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name   string
		images int
		size   int
	}{{"small", 1, 100}, {"7x1MB", 7, 1 << 20}} {
		b.Run(tc.name, func(b *testing.B) {
			url, _, stop, err := StartServer(context.Background(), ServerConfig{Policy: runmodel.PolicyRandom})
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			c, _ := provider.New(provider.Config{Backend: runmodel.BackendVLLM, Endpoint: url, Getenv: func(string) string { return "" }})
			req := request(0)
			var imgs []*provider.Image
			for i := 0; i < tc.images; i++ {
				p := make([]byte, tc.size)
				rand.Read(p)
				imgs = append(imgs, provider.NewImage(p))
			}
			req.Messages[3].Images = imgs
			b.SetBytes(int64(tc.images * (tc.size * 4 / 3)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Complete(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
