package console_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// davPut writes body at path of user's WebDAV tree (a nil body: MKCOL).
func (s *stack) davPut(user, pw, path string, body []byte) {
	s.t.Helper()
	method := "PUT"
	if body == nil {
		method = "MKCOL"
	}
	req, err := http.NewRequest(method, s.base+"/webdav"+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.SetBasicAuth(user, pw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		s.t.Fatalf("PUT %s as %s: %d", path, user, resp.StatusCode)
	}
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	img.Set(3, 3, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFilePickerInBrowser: a media_reference input's file picker lists the
// signed-in user's own WebDAV tree (never another user's), searches it by
// name, fills the input with the chosen file's webdav: reference, uploads
// a new file into the listed folder through WebDAV, previews an image, and
// the execution page shows both files pinned.
func TestFilePickerInBrowser(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a dev stack and a browser")
	}
	ctx := browser(t)
	s := startStack(t)
	sh := newShots(t)
	base := s.base + "/ui"

	s.davPut("admin", adminPassword, "/reports", nil)
	s.davPut("admin", adminPassword, "/reports/q3%20report.txt", []byte("revenue up"))
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	s.davPut("viewer", "viewer-password-1", "/viewer-secret.txt", []byte("not yours"))
	s.create("/api/v1/ontology/types", map[string]any{"name": "Doc", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true},
			{"name": "report", "type": "media_reference"}, {"name": "photo", "type": "media_reference"}}})
	obj := s.create("/api/v1/ontology/types/Doc/objects", map[string]any{"properties": map[string]any{"title": "d1"}})
	s.create("/api/v1/ontology/actions", map[string]any{"name": "attach", "object_type_id": "Doc", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "report", "type": "media_reference", "required": true},
			{"name": "photo", "type": "media_reference"}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{
			{"property": "report", "input": "report"}, {"property": "photo", "input": "photo"}}}}})
	photo := filepath.Join(t.TempDir(), "site photo.png")
	if err := os.WriteFile(photo, pngBytes(t), 0o644); err != nil {
		t.Fatal(err)
	}

	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/"), chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "admin", chromedp.ByQuery), chromedp.SendKeys("#password", adminPassword, chromedp.ByQuery),
		click("#signin"), chromedp.WaitVisible("ul.actions", chromedp.ByQuery))

	noViewer := `!document.querySelector('#p-report-files').textContent.includes('viewer-secret')`
	run(t, ctx, "browse and pick",
		chromedp.Navigate(base+"/actions/attach?target="+obj),
		chromedp.WaitVisible("#p-report", chromedp.ByQuery),
		// Keyboard: the summary opens the picker.
		chromedp.Focus("#p-report-picker summary", chromedp.ByQuery),
		chromedp.KeyEvent("\r"),
		until(`[...document.querySelectorAll('#p-report-files button.folder')].some(b => b.textContent.includes('reports'))`),
		until(noViewer),
		sh.take(ctx, "picker-01-root"),
		click("#p-report-files button.folder"),
		until(`!!document.querySelector('#p-report-files [data-media-pick="webdav:/reports/q3%20report.txt"]')`),
		sh.take(ctx, "picker-02-folder"),
		click(`#p-report-files [data-media-pick="webdav:/reports/q3%20report.txt"]`),
		until(`document.querySelector('#p-report').value === 'webdav:/reports/q3%20report.txt'`),
		quiet(),
		until(`!!document.querySelector('#p-report-preview a')`),
	)

	// Recent files: across folders, newest first, keyboard reachable, the
	// user's own only; picking one fills the input.
	s.davPut("admin", adminPassword, "/reports/deep", nil)
	s.davPut("admin", adminPassword, "/reports/deep/latest.txt", []byte("newest"))
	run(t, ctx, "pick from recent files",
		// Picking re-rendered the form: open the picker again, by keyboard.
		chromedp.Evaluate(`document.querySelector('#p-report-picker summary').focus()`, nil),
		chromedp.KeyEvent("\r"),
		until(`!!document.querySelector('#p-report-files button.recent')`),
		quiet(),
		chromedp.Evaluate(`document.querySelector('#p-report-files button.recent').focus()`, nil),
		chromedp.KeyEvent("\r"),
		until(`!!document.querySelector('#p-report-files ul.recent [data-media-pick="webdav:/reports/deep/latest.txt"]')`),
		until(`document.querySelector('#p-report-files ul.recent button.file').textContent === '/reports/deep/latest.txt'`),
		until(`document.querySelector('#p-report-files ul.recent').textContent.includes('/reports/q3 report.txt')`),
		until(noViewer),
		quiet(),
		sh.take(ctx, "picker-02b-recent"),
		chromedp.EmulateViewport(390, 844),
		until(`document.documentElement.scrollWidth <= 390`),
		chromedp.Focus(`#p-report-files ul.recent [data-media-pick="webdav:/reports/deep/latest.txt"]`, chromedp.ByQuery),
		chromedp.KeyEvent("\r"),
		until(`document.querySelector('#p-report').value === 'webdav:/reports/deep/latest.txt'`),
		chromedp.EmulateViewport(1280, 900),
		// Back to the file the run pins below.
		click(`#p-report-files ul.recent [data-media-pick="webdav:/reports/q3%20report.txt"]`),
		until(`document.querySelector('#p-report').value === 'webdav:/reports/q3%20report.txt'`),
		quiet(),
	)

	run(t, ctx, "search never finds another user's file",
		click("#p-photo-picker summary"),
		until(`!!document.querySelector('#p-photo-fq')`),
		quiet(),
		chromedp.Evaluate(`(() => { const q = document.querySelector('#p-photo-fq'); q.value = 'secret'; q.dispatchEvent(new Event('input', {bubbles: true})); })()`, nil),
		until(text("#p-photo-files")+`.includes('Nothing here matches “secret”')`), quiet(),
		chromedp.Evaluate(`(() => { const q = document.querySelector('#p-photo-fq'); q.value = 'q3'; q.dispatchEvent(new Event('input', {bubbles: true})); })()`, nil),
		until(`!!document.querySelector('#p-photo-files [data-media-pick="webdav:/reports/q3%20report.txt"]')`),
		sh.take(ctx, "picker-03-search"),
	)

	run(t, ctx, "upload into a folder and preview",
		chromedp.Evaluate(`(() => { const q = document.querySelector('#p-photo-fq'); q.value = ''; q.dispatchEvent(new Event('input', {bubbles: true})); })()`, nil),
		until(`[...document.querySelectorAll('#p-photo-files button.folder')].some(b => b.textContent.includes('reports'))`),
		quiet(),
		click("#p-photo-files button.folder"),
		until(text("#p-photo-files")+`.includes('Upload a file into /reports')`),
		quiet(),
		chromedp.SetUploadFiles("#p-photo-upload", []string{photo}, chromedp.ByQuery),
		until(`document.querySelector('#p-photo').value === 'webdav:/reports/site%20photo.png'`),
		quiet(),
		until(`(() => { const i = document.querySelector('#p-photo-preview img'); return i && i.complete && i.naturalWidth === 8; })()`),
		sh.take(ctx, "picker-04-uploaded"),
		chromedp.EmulateViewport(390, 844),
		click("#p-photo-picker summary"),
		until(`!!document.querySelector('#p-photo-files .file-list')`),
		until(`document.documentElement.scrollWidth <= 390`),
		sh.take(ctx, "picker-05-390px"),
		chromedp.EmulateViewport(1280, 900),
	)

	var href string
	run(t, ctx, "run",
		click("#run"),
		until(text("#run-status")+` === 'succeeded'`),
		chromedp.Evaluate(`[...document.querySelectorAll('#result a')].find(a => a.textContent === 'Details').href`, &href),
		chromedp.ActionFunc(func(ctx context.Context) error { return chromedp.Navigate(href).Do(ctx) }),
		until(`[...document.querySelectorAll('a.pinned-file')].map(a => a.textContent).join(',') .includes('q3 report.txt')`),
		until(`[...document.querySelectorAll('a.pinned-file')].some(a => a.textContent === 'site photo.png')`),
		sh.take(ctx, "picker-06-execution"),
	)
}
