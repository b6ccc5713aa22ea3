package webdav

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// TestRespond pins the bytes of the one writer: clients and litmus read
// these bodies, so the move to (status, err) handlers must not change
// them.
func TestRespond(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		err         error
		wantStatus  int
		wantType    string
		wantBody    string
		wantLogged  bool
		preWritten  bool
		wantHeaders map[string]string
	}{
		{name: "success without body", status: http.StatusCreated, wantStatus: http.StatusCreated},
		{name: "handler wrote itself", status: 0, wantStatus: http.StatusOK},
		{name: "text refusal", err: refusal(http.StatusConflict, "parent collection does not exist"),
			wantStatus: http.StatusConflict, wantType: "text/plain; charset=utf-8", wantBody: "parent collection does not exist\n",
			wantHeaders: map[string]string{"X-Content-Type-Options": "nosniff"}},
		{name: "precondition with href", err: condError(http.StatusLocked, "lock-token-submitted", "/webdav/a%20b"),
			wantStatus: http.StatusLocked, wantType: `application/xml; charset="utf-8"`,
			wantBody: xmlHeader + `<D:error xmlns:D="DAV:"><D:lock-token-submitted><D:href>/webdav/a%20b</D:href></D:lock-token-submitted></D:error>`},
		{name: "precondition without href", err: condError(http.StatusConflict, "lock-token-matches-request-uri", ""),
			wantStatus: http.StatusConflict, wantType: `application/xml; charset="utf-8"`,
			wantBody: xmlHeader + `<D:error xmlns:D="DAV:"><D:lock-token-matches-request-uri/></D:error>`},
		{name: "wrapped refusal keeps its status", err: fmt.Errorf("upload: %w", refusal(http.StatusInsufficientStorage, "quota exceeded")),
			wantStatus: http.StatusInsufficientStorage, wantType: "text/plain; charset=utf-8", wantBody: "quota exceeded\n"},
		{name: "internal failure", status: 0, err: errors.New("disk on fire"),
			wantStatus: http.StatusInternalServerError, wantType: "text/plain; charset=utf-8", wantBody: "internal error\n", wantLogged: true},
		{name: "internal failure after the status line", err: errors.New("listing broke"), preWritten: true,
			wantStatus: http.StatusMultiStatus, wantBody: "<partial", wantLogged: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := httptest.NewRecorder()
			rw := &respWriter{ResponseWriter: rec}
			rq := &request{
				h:    &Handler{log: slog.New(slog.NewTextHandler(&logs, nil))},
				w:    rw,
				r:    httptest.NewRequest("PUT", "/webdav/a", nil),
				user: &models.User{Username: "alice"},
				path: "/a",
			}
			if c.preWritten {
				rw.WriteHeader(http.StatusMultiStatus)
				_, _ = rw.Write([]byte("<partial"))
			}
			rq.respond(c.status, c.err)
			if rec.Code != c.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, c.wantStatus)
			}
			if got := rec.Body.String(); got != c.wantBody {
				t.Errorf("body %q, want %q", got, c.wantBody)
			}
			if got := rec.Header().Get("Content-Type"); got != c.wantType {
				t.Errorf("Content-Type %q, want %q", got, c.wantType)
			}
			for k, v := range c.wantHeaders {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s %q, want %q", k, got, v)
				}
			}
			if logged := strings.Contains(logs.String(), "level=ERROR"); logged != c.wantLogged {
				t.Errorf("logged %v, want %v: %s", logged, c.wantLogged, logs.String())
			}
		})
	}
}

// TestMetaStoreChosenAtConstruction: the store is picked once by New, from
// the option and the probe, never per request.
func TestMetaStoreChosenAtConstruction(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	dir := t.TempDir()
	inDB := newEnv(t, db, dir, Options{ChecksumsInDB: true})
	if _, ok := inDB.h.meta.(*dbStore); !ok || inDB.h.meta.kind() != "database" {
		t.Fatalf("ChecksumsInDB: store %T (%s)", inDB.h.meta, inDB.h.meta.kind())
	}
	auto := newEnv(t, db, dir, Options{})
	want := "database"
	if xattrsWork(dir) {
		want = "extended attributes"
	}
	if got := auto.h.meta.kind(); got != want {
		t.Fatalf("auto: store %q, want %q", got, want)
	}
	if auto.h.quota.props != deadProps(auto.h.meta) {
		t.Fatal("quota counts dead properties through another store than the handler's")
	}
}
