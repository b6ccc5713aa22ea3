package console_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/devtest"
)

var uploadCSRF = regexp.MustCompile(`"X-CSRF-Token": "([0-9a-f]+)"`)

// TestFilePickerUploadErrors: an upload from the form that WebDAV refuses
// — over the user's quota (507), over the server's size limit (413), onto
// a path another client has locked (423) — shows the user what went
// wrong, fills no reference, and leaves nothing written: no new file, the
// locked file's bytes unchanged.
func TestFilePickerUploadErrors(t *testing.T) {
	a := devtest.Start(t, adminPassword, []string{"--temporal-ui-url", "http://127.0.0.1:1/temporal", "--webdav-max-upload", "1000"}, nil)
	s := &stack{t: t, base: a.APIURL, app: a}
	const pw = "uploader-password-1"
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "uploader", "password": pw,
		"clearance": "public", "quota_bytes": 5000}, nil)
	dav := func(method, p string, body []byte, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.base+"/webdav"+p, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("uploader", pw)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, _ := dav("MKCOL", "/in", nil); st != http.StatusCreated {
		t.Fatalf("MKCOL: %d", st)
	}
	if st, _ := dav("PUT", "/in/locked.txt", []byte("original")); st != http.StatusCreated {
		t.Fatalf("PUT locked.txt: %d", st)
	}
	lockBody := []byte(`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>` +
		`<D:locktype><D:write/></D:locktype><D:owner>desktop</D:owner></D:lockinfo>`)
	if st, b := dav("LOCK", "/in/locked.txt", lockBody, "Content-Type", "application/xml", "Timeout", "Second-600"); st != http.StatusOK {
		t.Fatalf("LOCK: %d %s", st, b)
	}

	cookie := signIn(t, s.base+"/ui", "uploader", pw)
	_, frag := send(t, "GET", s.base+"/ui/files?field=p-report&dir=/in", nil, cookie)
	m := uploadCSRF.FindStringSubmatch(frag)
	if m == nil {
		t.Fatalf("no CSRF token in the picker:\n%s", frag)
	}
	upload := func(name string, body []byte) string {
		t.Helper()
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(body)
		mw.Close()
		req, err := http.NewRequest("POST", s.base+"/ui/files/upload?field=p-report&dir=/in", &buf)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("X-CSRF-Token", m[1])
		req.Header.Set("Cookie", cookie["Cookie"])
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, c := range []struct {
		name, why string
		size      int
		message   string
	}{
		// Within the quota, over the size limit (1,000 bytes).
		{"big.bin", "413", 1500, "larger than this server accepts"},
		// Within the size limit, over what the quota leaves (the fillers).
		{"quota.bin", "507", 600, "Your storage quota is full"},
		{"locked.txt", "423", 10, "locked by someone editing it"},
	} {
		if c.why == "507" {
			for i := range 5 {
				if st, _ := dav("PUT", fmt.Sprintf("/in/filler%d.bin", i), bytes.Repeat([]byte("f"), 900)); st != http.StatusCreated {
					t.Fatalf("PUT filler: %d", st)
				}
			}
		}
		page := upload(c.name, bytes.Repeat([]byte("x"), c.size))
		if !strings.Contains(page, `role="alert"`) || !strings.Contains(page, c.message) {
			t.Errorf("%s (%s): the page does not say %q:\n%s", c.name, c.why, c.message, page)
		}
		if strings.Contains(page, "data-media-fill") || strings.Contains(page, "Uploaded ") {
			t.Errorf("%s (%s): the page offers a reference to a refused upload:\n%s", c.name, c.why, page)
		}
	}
	for _, p := range []string{"/in/quota.bin", "/in/big.bin"} {
		if st, _ := dav("GET", p, nil); st != http.StatusNotFound {
			t.Errorf("GET %s after a refused upload: %d, want 404", p, st)
		}
	}
	if st, b := dav("GET", "/in/locked.txt", nil); st != http.StatusOK || b != "original" {
		t.Errorf("the locked file after a refused upload: %d %q", st, b)
	}
	if st, b := dav("PROPFIND", "/in", nil, "Depth", "1"); st != http.StatusMultiStatus ||
		strings.Count(b, "<D:response>") != 7 {
		t.Errorf("the folder holds other than itself, the fillers and locked.txt: %d\n%s", st, b)
	}
}
