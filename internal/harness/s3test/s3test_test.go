package s3test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestServer drives the harness as the store's tests will: objects put and
// listed, an open multipart upload seen, an outage, and the same data and
// port after Restart.
func TestServer(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if !strings.HasPrefix(s.URL("/p/q/"), "s3://ontoflow-test/p/q?endpoint=http://127.0.0.1:") ||
		!strings.HasSuffix(s.URL("p/q"), "&region=us-east-1&path_style=true") {
		t.Errorf("URL = %s", s.URL("p/q"))
	}
	if !slices.Contains(s.Env(), "AWS_ACCESS_KEY_ID="+s.AccessKey) {
		t.Errorf("Env lacks the access key: %v", s.Env())
	}

	for _, k := range []string{"a/one", "a/two with space", "b/three"} {
		if err := s.Put(ctx, k, []byte("body of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.Keys(ctx, "a/")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/one", "a/two with space"}; !slices.Equal(keys, want) {
		t.Errorf("Keys(a/) = %q, want %q", keys, want)
	}
	r, err := s.Do(ctx, http.MethodPost, "c/big", map[string]string{"uploads": ""}, nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("create multipart upload: %v %d %s", err, r.Status, r.Body)
	}
	ups, err := s.Uploads(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ups, []string{"c/big"}) {
		t.Errorf("Uploads = %q, want [c/big]", ups)
	}

	endpoint := s.Endpoint
	s.Stop()
	if _, err := s.Get(ctx, "a/one"); err == nil {
		t.Fatal("GET answered while the server was stopped")
	}
	s.Restart()
	if s.Endpoint != endpoint {
		t.Errorf("endpoint moved on restart: %s -> %s", endpoint, s.Endpoint)
	}
	r, err = s.Get(ctx, "a/two with space")
	if err != nil || r.Status != http.StatusOK || string(r.Body) != "body of a/two with space" {
		t.Fatalf("GET after restart: %v %d %q", err, r.Status, r.Body)
	}
	if r, _ := s.Get(ctx, "a/none"); r.Status != http.StatusNotFound {
		t.Errorf("GET of a missing key: status %d, want 404", r.Status)
	}
}
