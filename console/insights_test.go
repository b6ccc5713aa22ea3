package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleInsights drives the Insights page in Chromium: an auditor
// sees everyone's executions by outcome, durations, error codes with an
// example and deliveries; a viewer without the audit permission sees
// counts of their own executions only and is never linked to another's;
// the window changes; the charts have accessible names, the examples are
// reached by keyboard, and the page fits 390 px.
func TestConsoleInsights(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a dev stack and a browser")
	}
	ctx := browser(t)
	s := startStack(t)
	w := s.seed()
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	execute := func(user, pw, action string, params map[string]any) (id, status string) {
		st, out := s.doAs(user, pw, "POST", "/api/v1/ontology/actions/"+action+"/execute",
			map[string]any{"target_object_id": w.plain, "parameters": params})
		// A failed execution answers in the error's data.
		var ex struct {
			ID, Status string
			Error      struct{ Data struct{ ID, Status string } }
		}
		if err := json.Unmarshal(out, &ex); err == nil && ex.ID == "" {
			ex.ID, ex.Status = ex.Error.Data.ID, ex.Error.Data.Status
		}
		if st >= 500 || ex.ID == "" {
			t.Fatalf("execute %s as %s: %d %s", action, user, st, out)
		}
		return ex.ID, ex.Status
	}
	execute("admin", adminPassword, "triage", map[string]any{"status": "in_progress"})
	adminFailed, st := execute("admin", adminPassword, "triage", map[string]any{"priority": "low"}) // no status: fails
	if st != "failed" {
		t.Fatalf("the admin's triage without a status: %s, want failed", st)
	}
	viewerFailed, _ := execute("viewer", "viewer-password-1", "triage", map[string]any{"priority": "low"})
	execute("viewer", "viewer-password-1", "set-status", map[string]any{"status": "waiting"})

	sh := newShots(t)
	base := s.base + "/ui"
	signInAs := func(user, pw string) chromedp.Action {
		return chromedp.Tasks{chromedp.Navigate(base + "/"), chromedp.WaitVisible("#username", chromedp.ByQuery),
			chromedp.SendKeys("#username", user, chromedp.ByQuery), chromedp.SendKeys("#password", pw, chromedp.ByQuery),
			click("#signin"), chromedp.WaitVisible(".signout button", chromedp.ByQuery)}
	}
	row := func(chart, name, figure string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#%s li')].some(li => li.querySelector('.bar-label').textContent.includes(%q) && li.querySelector('.bar-figure').textContent.includes(%q))`,
			chart, name, figure)
	}
	linksTo := func(id string) string {
		return fmt.Sprintf(`document.querySelector('a[href="/ui/executions/%s"]') !== null`, id)
	}
	run(t, ctx, "an auditor sees everyone's executions",
		signInAs("admin", adminPassword),
		follow(`nav a[href="/ui/insights"]`),
		until(text("#insights-scope")+`.includes('every execution')`),
		until(row("chart-outcomes", "Triage ticket", "3 · 33.3% succeeded")),
		until(row("chart-outcomes", "set-status", "1 · 100.0% succeeded")),
		until(row("chart-errors", "in Triage ticket", "2 ·")),
		until(row("chart-durations", "Triage ticket", "p95")),
		until(row("chart-deliveries", "in_app", "delivered")),
		until(`document.querySelector('#windows a[aria-current="page"]').textContent.includes('24h')`),
		chartsNamed(),
		sh.take(ctx, "insights-01-auditor"),
	)
	run(t, ctx, "the example link and the window by keyboard",
		tabTo("a.example"),
		until(`document.activeElement.getAttribute('href').startsWith('/ui/executions/')`),
		tabTo(`#windows a[href$="7d"]`),
		chromedp.KeyEvent("\r"),
		chromedp.WaitReady("body", chromedp.ByQuery),
		until(`(document.querySelector('#windows a[aria-current="page"]')||{textContent:''}).textContent.includes('7d')`),
		until(row("chart-outcomes", "Triage ticket", "3 ·")),
	)
	run(t, ctx, "an example leads to a failed execution",
		follow("#chart-errors a.example"),
		until(`document.querySelector('h1 .status').textContent.includes('failed')`),
	)

	ctx = browser(t) // the viewer's own session
	run(t, ctx, "a viewer counts only their own executions and is linked only to them",
		signInAs("viewer", "viewer-password-1"),
		settled(base+"/insights"),
		until(text("#insights-scope")+`.includes('your own executions only')`),
		until(row("chart-outcomes", "Triage ticket", "1 · 0.0% succeeded")),
		until(row("chart-outcomes", "set-status", "1 · 100.0% succeeded")),
		until(row("chart-errors", "in Triage ticket", "1 ·")),
		until(linksTo(viewerFailed)),
		until(`!(`+linksTo(adminFailed)+`)`),
		chartsNamed(),
		sh.take(ctx, "insights-02-viewer"),
	)
	run(t, ctx, "the viewer may not open the auditor's execution",
		settled(base+"/executions/"+adminFailed),
		until(`document.querySelector('h1').textContent.includes('Error')`),
	)
	run(t, ctx, "the page at 390 px",
		chromedp.EmulateViewport(390, 844),
		settled(base+"/insights"),
		chromedp.WaitVisible("#chart-outcomes", chromedp.ByQuery),
		until(`document.documentElement.scrollWidth <= 390 && `+brokenWords+`.length === 0`),
		until(`[...document.querySelectorAll('svg.bar')].every(s => s.getBoundingClientRect().width > 300)`),
		sh.take(ctx, "insights-03-390px"),
		chromedp.EmulateViewport(1280, 900),
	)
	run(t, ctx, "an unknown window is refused",
		settled(base+"/insights?window=1y"),
		until(text("main")+`.includes('Unknown window')`),
	)
}

// chartsNamed checks that every chart is an image named by its title,
// and that every bar has a non-empty name.
func chartsNamed() chromedp.Action {
	return until(`document.querySelectorAll('svg.bar').length > 0 && [...document.querySelectorAll('svg.bar')].every(s =>
		s.getAttribute('role') === 'img' && ((document.getElementById(s.getAttribute('aria-labelledby'))||{}).textContent||'').trim().length > 3)`)
}

// tabTo presses Tab until the focus is on the element sel names (at most
// 60 presses): it can be reached by keyboard.
func tabTo(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for range 60 {
			var there bool
			if err := chromedp.Evaluate(fmt.Sprintf("document.activeElement === document.querySelector(%q)", sel), &there).Do(ctx); err != nil {
				return err
			}
			if there {
				return nil
			}
			if err := chromedp.KeyEvent("\t").Do(ctx); err != nil {
				return err
			}
		}
		return fmt.Errorf("%s not reached in 60 presses of Tab", sel)
	})
}
