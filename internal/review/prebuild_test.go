package review

import (
	"context"
	"net/http/httptest"
	"testing"
)

// TestPrebuild: Prebuild builds every image of every assigned case (the
// radiograph, and the mask and contour of a positive) into the cache,
// so that the reviewers' first requests are served without a build, and
// the images served equal the ones built on request.
func TestPrebuild(t *testing.T) {
	t.Parallel()
	a := newAppSized(t, 3, 2, 3, 2)
	c := a.signIn("r1")
	srv, err := NewServer(a.store)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := a.store.casesInQueueOrder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	seen := map[int64]bool{}
	for _, cs := range cases {
		if seen[cs.ID] {
			t.Errorf("case %s listed twice", cs.KeyID)
		}
		seen[cs.ID] = true
		want++
		if cs.Positive() {
			want += 2
		}
	}
	if len(cases) != len(a.fx.Cases) {
		t.Fatalf("%d cases in queue order, want %d", len(cases), len(a.fx.Cases))
	}
	if err := srv.Prebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, n, _, builds := srv.images.Stats(); n != want || builds != int64(want) {
		t.Fatalf("after Prebuild: %d images held, %d builds; want %d and %d", n, builds, want, want)
	}
	h := srv.Handler()
	cookies := c.http.Jar.Cookies(mustURL(t, a.srv.URL))
	for _, key := range a.queueOf("r1") {
		for _, kind := range []string{"cxr.png", "mask.png", "contour.png"} {
			ref := c.get("/image/" + key + "/" + kind) // built on request by the other server
			req := httptest.NewRequest("GET", "/image/"+key+"/"+kind, nil)
			for _, ck := range cookies {
				req.AddCookie(ck)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != ref.code || (ref.code == 200 && rec.Body.String() != ref.body) {
				t.Errorf("%s %s: prebuilt %d (%d bytes), built on request %d (%d bytes)", key, kind, rec.Code, rec.Body.Len(), ref.code, len(ref.body))
			}
		}
	}
	if _, _, _, builds := srv.images.Stats(); builds != int64(want) {
		t.Errorf("serving the prebuilt images built %d more", builds-int64(want))
	}
	// Ended before it starts: nothing built, no error beyond the context's.
	srv2, err := NewServer(a.store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = srv2.Prebuild(ctx)
	if _, n, _, _ := srv2.images.Stats(); n != 0 {
		t.Errorf("a cancelled Prebuild built %d images", n)
	}
}
