package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleExplorer drives the object explorer in Chromium: the types
// with counts, a type's table (a filter on a column, the next page,
// columns chosen and moved), an object's page with its links in both
// directions and its history, and an action started from the object.
func TestConsoleExplorer(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a dev stack and a browser")
	}
	ctx := browser(t)
	s := startStack(t)
	w := s.seed()
	s.fillTickets(60)
	s.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types", map[string]any{"name": "duplicates",
		"display_name": "Duplicates", "source_object_type_id": "Ticket", "target_object_type_id": "Ticket",
		"cardinality": "many_to_many"}, nil)
	s.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types/duplicates/links",
		map[string]any{"source_object_id": w.vip, "target_object_id": w.plain}, nil)
	s.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types/duplicates/links",
		map[string]any{"source_object_id": w.plain, "target_object_id": w.secret}, nil)
	s.must(http.StatusOK, "POST", "/api/v1/ontology/actions/triage/execute", map[string]any{"target_object_id": w.plain,
		"parameters": map[string]any{"status": "in_progress"}}, nil)
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	sh := newShots(t)
	base := s.base + "/ui"
	signInAs := func(user, pw string) chromedp.Action {
		return chromedp.Tasks{chromedp.Navigate(base + "/"), chromedp.WaitVisible("#username", chromedp.ByQuery),
			chromedp.SendKeys("#username", user, chromedp.ByQuery), chromedp.SendKeys("#password", pw, chromedp.ByQuery),
			click("#signin"), chromedp.WaitVisible(".signout button", chromedp.ByQuery)}
	}
	run(t, ctx, "types with counts",
		signInAs("admin", adminPassword),
		settled(base+"/explore"),
		until(`[...document.querySelectorAll('#types tr')].some(r => r.textContent.includes('Ticket') && r.textContent.includes('63'))`),
		sh.take(ctx, "explore-01-types"),
	)
	run(t, ctx, "table: page, filter, columns",
		settled(base+"/explore/Ticket"),
		until(`document.querySelectorAll('#objects tbody tr').length === 50 && document.querySelector('#next-page') !== null`),
		follow("#next-page"),
		until(`document.querySelectorAll('#objects tbody tr').length === 13 && document.querySelector('#first-page') !== null`),
		// The next page is a keyset position, not an offset.
		until(`new URL(location.href).searchParams.get('after') !== null`),
		chromedp.SetValue("#f-title", "includes", chromedp.ByQuery),
		chromedp.SetValue("#v-title", "filler-05", chromedp.ByQuery),
		submitGet("#filters"),
		until(`document.querySelectorAll('#objects tbody tr').length === 10`),
		until(`[...document.querySelectorAll('#objects tbody td a')].every(a => a.textContent.startsWith('filler-05'))`),
		sh.take(ctx, "explore-02-filtered"),
		settled(base+"/explore/Ticket?cols=status,title"),
		until(`[...document.querySelectorAll('#objects thead th')].map(th => th.textContent.trim().split(/\s/)[0]).join(',').startsWith('Object,status,title')`),
		follow(`a[aria-label="Move title left"]`),
		until(`[...document.querySelectorAll('#objects thead th')].map(th => th.textContent.trim().split(/\s/)[0]).join(',').startsWith('Object,title,status')`),
		settled(base+"/explore/Ticket?f.vip=bogus_op&v.vip=x"),
		until(text("#explore-error")+`.includes('filter.vip')`),
		settled(base+"/explore/Ticket?cols=title&f.title=greater_than&v.title=zzz"),
		until(`document.querySelectorAll('#objects tbody tr').length === 1`),
	)
	titles := `JSON.stringify([...document.querySelectorAll('#objects tbody tr td:nth-child(2)')].map(td => td.textContent))`
	sorted := func(desc bool) string {
		cmp := "(a < b ? -1 : a > b ? 1 : 0)"
		if desc {
			cmp = "(a < b ? 1 : a > b ? -1 : 0)"
		}
		return `(() => { const v = ` + titles + `; const w = JSON.parse(v); return w.length > 0 && JSON.stringify([...w].sort((a, b) => ` + cmp + `)) === v; })()`
	}
	run(t, ctx, "table: sort by a column, both ways, keeping filters",
		settled(base+"/explore/Ticket?cols=title,status"),
		// The header is a link (reachable by Tab), not yet sorted.
		until(`(() => { const a = document.querySelector('#objects thead th a#sort-title'); a.focus();
			return document.activeElement === a && a.closest('th').getAttribute('aria-sort') === null; })()`),
		follow("#sort-title"),
		until(`document.querySelector('#sort-title').closest('th').getAttribute('aria-sort') === 'ascending'`),
		until(sorted(false)+` && document.querySelectorAll('#objects tbody tr').length === 50`),
		until(text("#objects tbody tr:first-child td:nth-child(2)")+` === 'filler-000'`),
		until(`document.querySelector('#next-page').href.includes('sort=title')`),
		follow("#sort-title"),
		until(`document.querySelector('#sort-title').closest('th').getAttribute('aria-sort') === 'descending'`),
		until(sorted(true)+` && `+text("#objects tbody tr:first-child td:nth-child(2)")+` === 'vip-1'`),
		sh.take(ctx, "explore-05-sorted"),
		// A filter sent from the sorted table keeps the order.
		chromedp.SetValue("#f-title", "includes", chromedp.ByQuery),
		chromedp.SetValue("#v-title", "filler-05", chromedp.ByQuery),
		submitGet("#filters"),
		until(`document.querySelectorAll('#objects tbody tr').length === 10 && `+sorted(true)),
		until(text("#objects tbody tr:first-child td:nth-child(2)")+` === 'filler-059'`),
		until(`document.querySelector('#sort-title').closest('th').getAttribute('aria-sort') === 'descending'`),
		// The next page of a sorted table continues the order.
		settled(base+"/explore/Ticket?cols=title&sort=title"),
		follow("#next-page"),
		until(text("#objects tbody tr:first-child td:nth-child(2)")+` === 'filler-050' && `+sorted(false)),
		// A link from before keyset pages (?page=N) still lands on its page.
		settled(base+"/explore/Ticket?cols=title&sort=title&page=1"),
		until(text("#objects tbody tr:first-child td:nth-child(2)")+` === 'filler-050' && `+sorted(false)),
		// A bad sort is answered on the page, naming order_by.
		settled(base+"/explore/Ticket?cols=title&sort=nope"),
		until(text("#explore-error")+`.includes('order_by')`),
	)
	run(t, ctx, "object page: links, history, actions",
		settled(base+"/objects/Ticket/"+w.plain),
		until(text("#object-links")+`.includes('Duplicates') && `+text("#object-links")+`.includes('incoming') && `+text("#object-links")+`.includes('vip-1')`),
		until(text("#object-links")+`.includes('outgoing') && `+text("#object-links")+`.includes('secret-1')`),
		until(`[...document.querySelectorAll('#object-history tbody tr')].some(r => r.textContent.includes('Triage ticket') && r.textContent.includes('succeeded'))`),
		sh.take(ctx, "explore-03-object"),
		follow(`#object-actions a[href^="/ui/actions/`+w.triage+`?"]`),
		chromedp.WaitVisible("#p-status", chromedp.ByQuery),
		until(text("#target-current")+`.includes('plain-1')`),
	)
	ctx = browser(t) // a second browser: the viewer's own session
	run(t, ctx, "the read rule: a viewer sees neither the confidential object nor its count",
		signInAs("viewer", "viewer-password-1"),
		settled(base+"/explore"),
		until(`[...document.querySelectorAll('#types tr')].some(r => r.textContent.includes('Ticket') && r.textContent.includes('62'))`),
	)
	run(t, ctx, "a viewer's links leave out the confidential end",
		settled(base+"/objects/Ticket/"+w.plain),
		until(text("#object-links")+`.includes('vip-1') && !`+text("#object-links")+`.includes('secret-1')`),
	)
	run(t, ctx, "the table at 390 px",
		chromedp.EmulateViewport(390, 844),
		settled(base+"/explore/Ticket"),
		chromedp.WaitVisible("#objects", chromedp.ByQuery),
		until(`document.documentElement.scrollWidth <= 390 && `+brokenWords+`.length === 0`),
		sh.take(ctx, "explore-04-table-390px"),
		chromedp.EmulateViewport(1280, 900),
	)
}

// follow navigates to the href of the first element sel names (a click
// that navigates races the next evaluation against the page's unload).
func follow(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var href string
		if err := chromedp.Evaluate(fmt.Sprintf("document.querySelector(%q).href", sel), &href).Do(ctx); err != nil {
			return err
		}
		return settled(href).Do(ctx)
	})
}

// submitGet sends the GET form sel names as the browser would (its
// fields, by their names), through Navigate, which waits for the page.
func submitGet(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var href string
		js := fmt.Sprintf(`(() => { const f = document.querySelector(%q); const u = new URL(f.action);
			u.search = new URLSearchParams(new FormData(f)).toString(); return u.href; })()`, sel)
		if err := chromedp.Evaluate(js, &href).Do(ctx); err != nil {
			return err
		}
		return settled(href).Do(ctx)
	})
}

// settled navigates and waits until the new document is ready, so the
// next evaluation runs in the new page's context, not the unloaded one's.
func settled(url string) chromedp.Action {
	return chromedp.Tasks{chromedp.Navigate(url), chromedp.WaitReady("body", chromedp.ByQuery)}
}
