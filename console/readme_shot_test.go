package console_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// quickStartCall is one `api $ONTO/<path> -d '<json>'` of the README's
// Quick start (a `\` line continuation may sit between path and body).
var quickStartCall = regexp.MustCompile(`api \$ONTO(/\S+)\s*(?:\\\s*)?-d '([^']*)'`)

// TestReadmeScreenshot runs the README's Quick start as written (its
// object type, object and action, read from README.md) and takes the
// screenshot the README shows: the triage form after typing "high" as the
// priority. With ONTOFLOW_UPDATE_DOCS=1 it writes docs/console-form.png;
// otherwise the picture goes with the other screenshots, so the README
// and its picture cannot drift apart unnoticed.
func TestReadmeScreenshot(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a dev stack and a browser")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	calls := quickStartCall.FindAllStringSubmatch(string(readme), -1)
	if len(calls) < 3 {
		t.Fatalf("the README's Quick start has %d api calls with a body, want the type, the object and the action", len(calls))
	}
	ctx := browser(t)
	s := startStack(t)
	var ticket string
	for _, c := range calls[:3] {
		var body, out map[string]any
		if err := json.Unmarshal([]byte(c[2]), &body); err != nil {
			t.Fatalf("README body of %s is not JSON: %v", c[1], err)
		}
		s.must(http.StatusCreated, "POST", c[1], body, &out)
		if strings.HasSuffix(c[1], "/objects") {
			ticket, _ = out["id"].(string)
		}
	}
	sh := newShots(t)
	base := s.base + "/ui"
	run(t, ctx, "README form",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", "admin", chromedp.ByQuery),
		chromedp.SendKeys("#password", adminPassword, chromedp.ByQuery),
		click("#signin"),
		chromedp.WaitVisible("ul.actions", chromedp.ByQuery),
		chromedp.EmulateViewport(1000, 760),
		chromedp.Navigate(base+"/actions/triage?target="+ticket),
		chromedp.WaitVisible("#p-priority", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#p-status').value = ''`, nil),
		chromedp.SendKeys("#p-status", "in_progress", chromedp.ByQuery),
		chromedp.SendKeys("#p-priority", "high", chromedp.ByQuery),
		quiet(),
		until(text("#p-reason-label")+`.includes('Reason for high priority')`),
		sh.take(ctx, "readme-console-form"),
	)
	if os.Getenv("ONTOFLOW_UPDATE_DOCS") != "1" {
		return
	}
	shot, err := os.ReadFile(filepath.Join(sh.dir, "readme-console-form.png"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("../docs/console-form.png", shot, 0o644); err != nil {
		t.Fatalf("write the README's screenshot: %v", err)
	}
}
