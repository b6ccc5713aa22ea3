package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's headless-capable browser. Under CI=true a
// missing browser fails the test: CI installs it (.ci/run).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("ONTOFLOW_CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found at /usr/bin/chromium (apt-get install chromium)")
	}
	t.Skip("chromium not installed; apt-get install chromium")
	return ""
}

// browser starts a fresh headless chromium (its own profile directory)
// and returns a context driving one tab. A JavaScript dialog (an alert a
// hostile value managed to run) fails the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-breakpad", true), chromedp.WindowSize(1280, 900),
	}
	// No UserDataDir: chromedp makes a fresh profile per browser and removes
	// it after the process exits. A t.TempDir() profile failed the test
	// when chromium's helpers were still writing it at cleanup.
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			t.Errorf("a JavaScript dialog opened: %q", ev.Message)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(false)) }()
		case *cdplog.EventEntryAdded:
			// The page must run within its CSP: a violation is a bug.
			if strings.Contains(ev.Entry.Text, "Content Security Policy") {
				t.Errorf("CSP violation: %s", ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			t.Errorf("JavaScript exception: %s", ev.ExceptionDetails.Error())
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// shots saves screenshots under $ONTOFLOW_SCREENSHOTS or a new temp
// dir. Either is left in place after the test, unlike t.TempDir(): the
// screenshots are the test's artifacts, for people and CI to keep.
type shots struct {
	t   *testing.T
	dir string
}

func newShots(t *testing.T) shots {
	t.Helper()
	dir := os.Getenv("ONTOFLOW_SCREENSHOTS")
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "ontoflow-console-screenshots-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("screenshot directory: %v", err)
	}
	t.Logf("screenshots: %s (kept after the test)", dir)
	return shots{t: t, dir: dir}
}

func (s shots) take(ctx context.Context, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var buf []byte
		if err := chromedp.CaptureScreenshot(&buf).Do(ctx); err != nil {
			return err
		}
		p := filepath.Join(s.dir, name+".png")
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
		s.t.Logf("screenshot: %s", p)
		return nil
	})
}

// run runs actions with a deadline, failing the test with what step.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(tctx, actions...); err != nil {
		var html string
		_ = chromedp.Run(ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		t.Fatalf("%s: %v\npage: %s", step, err, html)
	}
}

// until waits for a JavaScript expression to be true.
func until(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(15*time.Second))
}

// click clicks the element sel names at the moment of the click: htmx
// may have swapped the node a query returned a moment before.
func click(sel string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf("document.querySelector(%q).click()", sel), nil)
}

// quiet waits out pending live evaluations (their 300 ms delay) and
// in-flight htmx requests and swaps.
func quiet() chromedp.Action {
	return chromedp.Tasks{chromedp.Sleep(400 * time.Millisecond),
		until(`!document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')`)}
}

func text(sel string) string {
	return fmt.Sprintf("((document.querySelector(%q)||{}).textContent||'')", sel)
}

func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a dev stack and a browser")
	}
	ctx := browser(t)
	s := startStack(t)
	w := s.seed()
	sh := newShots(t)
	base := s.base + "/ui"

	t.Run("sign in", func(t *testing.T) {
		run(t, ctx, "sign in",
			chromedp.Navigate(base+"/"),
			chromedp.WaitVisible("#username", chromedp.ByQuery),
			sh.take(ctx, "01-sign-in"),
			chromedp.SendKeys("#username", "admin", chromedp.ByQuery),
			chromedp.SendKeys("#password", adminPassword, chromedp.ByQuery),
			click("#signin"),
			chromedp.WaitVisible("ul.actions", chromedp.ByQuery),
			until(`document.querySelector('h1') && document.querySelector('h1').textContent === 'Actions'`),
			until(`[...document.querySelectorAll('ul.actions a')].some(a => a.textContent === 'Triage ticket')`),
			sh.take(ctx, "02-actions"),
		)
	})

	t.Run("form from form_schema with live overrides", func(t *testing.T) { liveForm(t, ctx, base, w, s, sh) })

	t.Run("inputs per type: reference picker, date, geo point, list", func(t *testing.T) {
		run(t, ctx, "typed inputs",
			chromedp.Navigate(base+"/actions/mark-duplicate?target="+w.plain),
			chromedp.WaitVisible("#p-dup-search", chromedp.ByQuery),
			until(`document.querySelector('#p-seen_on').type === 'date' && document.querySelector('#p-location-lat').type === 'number'`),
			// An input without a display name is labelled in words.
			until(text("#p-seen_on-label")+`.startsWith('Seen on')`),
			chromedp.SendKeys("#p-dup-search", "vip", chromedp.ByQuery),
			until(`[...document.querySelectorAll('#p-dup option')].some(o => o.value === '`+w.vip+`')`),
			chromedp.Evaluate(`(() => { const s = document.querySelector('#p-dup'); s.value = '`+w.vip+`'; s.dispatchEvent(new Event('change', {bubbles: true})); })()`, nil),
			chromedp.Evaluate(`(() => { const d = document.querySelector('#p-seen_on'); d.value = '2026-01-02'; d.dispatchEvent(new Event('input', {bubbles: true})); })()`, nil),
			quiet(),
			chromedp.SendKeys("#p-location-lat", "48.85", chromedp.ByQuery),
			chromedp.SendKeys("#p-location-lon", "2.35", chromedp.ByQuery),
			chromedp.SendKeys("#p-tags", "red\nblue", chromedp.ByQuery),
			quiet(),
			click("#run"),
			until(text("#run-status")+` === 'succeeded'`),
		)
		o := s.object(w.plain)
		loc, _ := o["location"].(map[string]any)
		if o["duplicate_of"] != w.vip || o["seen_on"] != "2026-01-02" || fmt.Sprint(loc["lat"], loc["lon"]) != "48.85 2.35" ||
			fmt.Sprint(o["tags"]) != "[red blue]" {
			t.Fatalf("after mark-duplicate: %v", o)
		}
	})

	t.Run("override from the target's property", func(t *testing.T) {
		run(t, ctx, "vip target",
			chromedp.Navigate(base+"/actions/triage?target="+w.vip),
			until(`document.querySelector('#field-reason').dataset.required === 'true'`),
			until(text("#p-reason-label")+`.includes('Reason (VIP ticket)')`),
			until(`document.querySelector('#field-internal_note').hidden && document.querySelector('#p-internal_note').disabled`),
			sh.take(ctx, "04-form-vip-target"),
		)
	})

	t.Run("policy refusal shows its reason", func(t *testing.T) {
		run(t, ctx, "refusal",
			chromedp.Navigate(base+"/actions/archive?target="+w.secret),
			until(text("#refusal")+`.includes('confidential') && `+text("#refusal")+`.includes('marking_not_allowed')`),
			until(text("#refusal")+`.includes('Ask an administrator')`),
			until(`document.querySelector('#run') === null && document.querySelector('#preview') === null`),
			sh.take(ctx, "05-refusal"),
		)
	})

	t.Run("action log", func(t *testing.T) {
		run(t, ctx, "log",
			chromedp.Navigate(base+"/log"),
			until(`[...document.querySelectorAll('#log tbody tr')].filter(r => r.textContent.includes('Triage ticket') && r.textContent.includes('succeeded') && r.querySelector('a[href^="/ui/objects/"]')).length >= 1`),
			sh.take(ctx, "06-log"),
			chromedp.Evaluate(`[...document.querySelectorAll('#log tbody tr')].find(r => r.textContent.includes('Triage ticket') && r.textContent.includes('succeeded')).querySelector('a').click()`, nil),
			chromedp.WaitVisible("dl.meta", chromedp.ByQuery),
			until(`document.querySelector('#workflow-link') && document.querySelector('#workflow-link').href.includes('/namespaces/default/workflows/action%2Ftriage%2F')`),
			until(`document.querySelector('table.edits') !== null`),
			// The run undone in "form" reads reverted, linked both ways.
			chromedp.Navigate(base+"/log"),
			until(`document.querySelector('#log a.tag.reverted') !== null`),
			follow(`#log a.tag.reverted`),
			until(`document.querySelector('#revert-of') !== null`),
			follow(`#revert-of`),
			until(`document.querySelector('#reverted-by') !== null && `+text("h1")+`.includes('reverted')`),
			// A refused run says which field and why, by its label.
			settled(base+"/log?status=failed"),
			follow(`#log tbody tr a`),
			until(text("#execution-error")+`.includes('"Reason" is required')`),
			sh.take(ctx, "06-failed-execution"),
		)
	})

	t.Run("notifications", func(t *testing.T) {
		run(t, ctx, "inbox",
			chromedp.Navigate(base+"/notifications"),
			until(`document.querySelector('.badge') && document.querySelector('.badge').textContent === '1'`),
			until(text("#inbox")+`.includes('plain-1 triaged')`),
			sh.take(ctx, "07-notifications"),
			click(`#inbox button`),
			chromedp.WaitVisible("#inbox li.read", chromedp.ByQuery),
			until(`document.querySelector('#inbox li.read') !== null && document.querySelector('.badge') === null`),
		)
	})

	t.Run("hostile value renders as text; inline edit", func(t *testing.T) {
		run(t, ctx, "object page",
			chromedp.Navigate(base+"/objects/Ticket/"+w.plain),
			until(text("#prop-summary")+`.includes('<script>alert("pwned")</script><b>bold</b>')`),
			until(`document.querySelectorAll('main script, main b').length === 0`),
			sh.take(ctx, "08-object"),
			chromedp.Evaluate(`document.querySelector('#edit-status').value = ''`, nil),
			chromedp.SendKeys("#edit-status", "done", chromedp.ByQuery),
			click("#prop-status button"),
			until(text("#prop-status")+`.includes('Saved.')`),
		)
		if got := s.object(w.plain)["status"]; got != "done" {
			t.Fatalf("inline edit: status = %v, want done", got)
		}
	})

	t.Run("narrow screen", func(t *testing.T) {
		run(t, ctx, "390px",
			chromedp.EmulateViewport(390, 844),
			chromedp.Navigate(base+"/actions/triage?target="+w.plain),
			chromedp.WaitVisible("#p-status", chromedp.ByQuery),
			until(`document.documentElement.scrollWidth <= 390`),
			sh.take(ctx, "09-form-390px"),
			chromedp.Navigate(base+"/log"),
			chromedp.WaitVisible("#log", chromedp.ByQuery),
			until(`document.documentElement.scrollWidth <= 390 && `+brokenWords+`.length === 0`),
			sh.take(ctx, "10-log-390px"),
			chromedp.Evaluate(`document.querySelector('#log tbody tr a').click()`, nil),
			chromedp.WaitVisible("dl.meta", chromedp.ByQuery),
			until(`document.documentElement.scrollWidth <= 390 && `+brokenWords+`.length === 0`),
			sh.take(ctx, "11-execution-390px"),
			chromedp.EmulateViewport(1280, 900),
		)
	})

	t.Run("sign out revokes the session", func(t *testing.T) {
		run(t, ctx, "sign out",
			chromedp.Navigate(base+"/"),
			click(".signout button"),
			chromedp.WaitVisible("#username", chromedp.ByQuery),
			chromedp.Navigate(base+"/log"),
			chromedp.WaitVisible("#username", chromedp.ByQuery),
		)
	})
}

// brokenWords lists the words of table cells that the page renders
// across two lines (a word broken inside, "tri age"): a word laid out in
// one piece has one client rectangle. A break after a hyphen
// ("set-" / "status") is a break between words.
const brokenWords = `(() => { const bad = [];
  for (const cell of document.querySelectorAll('table td, table th')) {
    const w = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT); let n;
    while ((n = w.nextNode())) { const re = /[^\s-]+/g; let m;
      while ((m = re.exec(n.data))) { const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (r.getClientRects().length > 1) bad.push(m[0]); } } }
  return bad; })()`

// liveForm opens triage, picks the target by search, watches the
// overrides change the DOM as it types, submits without a required
// value, then valid.
func liveForm(t *testing.T, ctx context.Context, base string, w world, s *stack, sh shots) {
	run(t, ctx, "pick target",
		chromedp.Navigate(base+"/actions/triage"),
		chromedp.WaitVisible("#target-search", chromedp.ByQuery),
		chromedp.SendKeys("#target-search", "plain", chromedp.ByQuery),
		until(`[...document.querySelectorAll('#target-options a')].length === 1`),
		click("#target-options a"),
		chromedp.WaitVisible("#target-current", chromedp.ByQuery),
		chromedp.WaitVisible("#p-status", chromedp.ByQuery),
		// Keyboard: focus goes on to the form, not back to the page's top.
		until(`document.activeElement && document.activeElement.id === 'p-status'`),
	)
	run(t, ctx, "layout",
		until(`document.querySelector('#section-main').tagName === 'FIELDSET'`),
		until(`document.querySelector('#section-main .grid').dataset.columns === '2'`),
		until(`document.querySelector('#section-details').tagName === 'DETAILS'`),
		until(text("#section-details summary")+` === 'Details'`),
		until(`!document.querySelector('#field-internal_note').hidden`),
		until(`document.querySelector('#field-reason').dataset.required === 'false'`),
		until(`document.querySelector('label[for=p-status]').textContent.includes('Status')`),
		until(`document.querySelector('#field-status').dataset.required === 'true'`),
		// The form starts from the target's current values (issue 46, 6).
		until(`document.querySelector('#p-status').value === 'open' && document.querySelector('#p-priority').value === ''`),
	)
	run(t, ctx, "typing a parameter hides one field and requires another",
		quiet(),
		chromedp.SendKeys("#p-priority", "high", chromedp.ByQuery),
		until(`document.querySelector('#field-internal_note').hidden`),
		until(`document.querySelector('#field-reason').dataset.required === 'true'`),
		until(text("#p-reason-label")+`.includes('Reason for high priority')`),
		until(`document.activeElement && document.activeElement.id === 'p-priority'`),
		sh.take(ctx, "03-form-live"),
	)
	run(t, ctx, "section override; a collapsed section stays collapsed",
		quiet(),
		click("#section-details summary"),
		until(`!document.querySelector('#section-details').open`),
		chromedp.Evaluate(`document.querySelector('#p-status').value = ''`, nil),
		chromedp.SendKeys("#p-status", "closed", chromedp.ByQuery),
		until(text("#section-details summary")+` === 'Closing details'`),
		until(`document.querySelector('#section-details .grid').dataset.columns === '2'`),
		until(`!document.querySelector('#section-details').open`),
		quiet(),
		click("#section-details summary"),
		until(`document.querySelector('#section-details').open`),
	)
	run(t, ctx, "missing required value",
		quiet(),
		click("#run"),
		until(text("#p-reason-err")+`.includes('"Reason for high priority" is required')`),
		until(text("#run-failure")+`.includes('"Reason" is required')`),
		until(text("#run-failure")+`.includes('recorded in the action log')`),
		until(`document.querySelector('#result').contains(document.activeElement)`),
		sh.take(ctx, "04-form-invalid"),
	)
	if got := s.object(w.plain)["status"]; got != "open" {
		t.Fatalf("a refused run changed the object: status = %v", got)
	}
	// A refused run is recorded as the API records one (docs/console.md,
	// "What becomes an execution").
	var failed struct {
		Data []any `json:"data"`
	}
	s.must(http.StatusOK, "GET", "/api/v1/ontology/executions?status=failed&action_type=triage", nil, &failed)
	if len(failed.Data) != 1 {
		t.Fatalf("a refused console run: %d failed executions recorded, want 1 as the API: %v", len(failed.Data), failed.Data)
	}
	run(t, ctx, "preview",
		quiet(),
		chromedp.SendKeys("#p-reason", "customer escalated", chromedp.ByQuery),
		until(`document.querySelector('#p-reason-err').textContent === ''`),
		quiet(),
		click("#preview"),
		until(`[...document.querySelectorAll('#preview-result tr')].some(r => r.textContent.includes('status') && r.textContent.includes('open') && r.textContent.includes('closed'))`),
		until(`[...document.querySelectorAll('#preview-result tr')].some(r => r.textContent.includes('notes') && r.textContent.includes('customer escalated'))`),
		sh.take(ctx, "04-form-preview"),
	)
	if got := s.object(w.plain)["status"]; got != "open" {
		t.Fatalf("preview changed the object: status = %v", got)
	}
	run(t, ctx, "valid run",
		quiet(),
		click("#run"),
		until(text("#run-status")+` === 'succeeded'`),
		until(`document.querySelector('#result').contains(document.activeElement)`),
		until(`document.querySelector('#workflow-link') !== null`),
		until(`document.querySelector('table.edits') !== null`),
		sh.take(ctx, "04-form-result"),
	)
	o := s.object(w.plain)
	if o["status"] != "closed" || o["priority"] != "high" || o["notes"] != "customer escalated" {
		t.Fatalf("after run: %v", o)
	}
	if o["internal"] != nil {
		t.Fatalf("hidden parameter was written: %v", o)
	}
	undo(t, ctx, w, s)
}

// undo reverts the run from its result with a justification.
func undo(t *testing.T, ctx context.Context, w world, s *stack) {
	var n int
	run(t, ctx, "undo button", chromedp.Evaluate(`document.querySelectorAll('#undo').length`, &n))
	if n == 0 {
		t.Fatal("the result offers no Undo button")
	}
	run(t, ctx, "undo",
		chromedp.SendKeys(".undo-why", "wrong ticket", chromedp.ByQuery),
		click("#undo"),
		until(`((document.querySelector('#undo-status')||{}).textContent||'').includes('succeeded')`),
	)
	if o := s.object(w.plain); o["status"] != "open" || o["priority"] != nil {
		t.Fatalf("after undo: %v", o)
	}
}
