package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestReferencesInBrowser drives issue 46's items 1 and 2 in Chromium:
// a reference picker searches what is typed even when the form's live
// refresh of another field lands in between (typed at machine speed),
// keeps the picked object's title after the refresh, and every page
// that shows a reference (edits, parameters, object page, explorer)
// names it by title, linked; a reference the reader may not read shows
// as "hidden object".
func TestReferencesInBrowser(t *testing.T) {
	ctx := browser(t)
	s := startStack(t)
	w := s.seed()
	sh := newShots(t)
	base := s.base + "/ui"
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	signInAs := func(user, pw string) chromedp.Action {
		return chromedp.Tasks{network.ClearBrowserCookies(), chromedp.Navigate(base + "/"), chromedp.WaitVisible("#username", chromedp.ByQuery),
			chromedp.SendKeys("#username", user, chromedp.ByQuery), chromedp.SendKeys("#password", pw, chromedp.ByQuery),
			click("#signin"), chromedp.WaitVisible(".signout button", chromedp.ByQuery)}
	}
	option := func(title string) string {
		return `[...document.querySelectorAll('#p-dup option')].some(o => o.textContent.startsWith('` + title + `'))`
	}
	run(t, ctx, "a field's refresh does not swallow the picker's search",
		signInAs("admin", adminPassword),
		chromedp.Navigate(base+"/actions/mark-duplicate?target="+w.plain),
		chromedp.WaitVisible("#p-dup-search", chromedp.ByQuery),
		// Another field first, then the picker's search straight away:
		// the field's refresh is in flight while the search is typed.
		chromedp.SendKeys("#p-tags", "x", chromedp.ByQuery),
		chromedp.SendKeys("#p-dup-search", "vi", chromedp.ByQuery),
		chromedp.SendKeys("#p-tags", "y", chromedp.ByQuery),
		chromedp.SendKeys("#p-dup-search", "p", chromedp.ByQuery),
		quiet(),
		until(option("vip-1")),
		until(`document.querySelector('#p-dup-search').value === 'vip'`),
		until(`document.querySelector('#p-tags').value === 'xy'`),
		// Searching again finds what is typed now.
		chromedp.Evaluate(`document.querySelector('#p-dup-search').value = ''`, nil),
		chromedp.SendKeys("#p-dup-search", "plain", chromedp.ByQuery),
		quiet(),
		until(option("plain-1")+` && !`+option("vip-1")),
		chromedp.Evaluate(`document.querySelector('#p-dup-search').value = ''`, nil),
		chromedp.SendKeys("#p-dup-search", "vip", chromedp.ByQuery),
		quiet(),
		until(option("vip-1")),
	)
	run(t, ctx, "the picked object keeps its title after the refresh",
		chromedp.Evaluate(`(() => { const s = document.querySelector('#p-dup'); s.value = '`+w.vip+`'; s.dispatchEvent(new Event('change', {bubbles: true})); })()`, nil),
		quiet(),
		chromedp.Evaluate(`document.querySelector('#p-dup-search').value = ''`, nil),
		chromedp.SendKeys("#p-tags", "\nz", chromedp.ByQuery),
		quiet(),
		until(`document.querySelector('#p-dup').value === '`+w.vip+`'`),
		until(`document.querySelector('#p-dup').selectedOptions[0].textContent === 'vip-1'`),
		sh.take(ctx, "refs-01-picker"),
	)
	ref := func(scope, title string) string {
		return `[...document.querySelectorAll('` + scope + ` a.ref')].some(a => a.textContent === '` + title + `' && a.href.includes('/ui/objects/Ticket/'))`
	}
	run(t, ctx, "edits and parameters name the reference",
		click("#run"),
		until(text("#run-status")+` === 'succeeded'`),
		until(ref("table.edits", "vip-1")),
		chromedp.Navigate(base+"/log"),
		chromedp.WaitVisible("#log", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#log tbody tr a').click()`, nil),
		chromedp.WaitVisible("dl.meta", chromedp.ByQuery),
		until(ref("dl.params", "vip-1")),
		until(`[...document.querySelectorAll('dl.params dt')].some(d => d.textContent === 'Duplicate of')`),
		until(`!document.querySelector('main').textContent.includes('`+w.vip+`')`),
		sh.take(ctx, "refs-02-execution"),
	)
	s.must(http.StatusOK, "PATCH", "/api/v1/ontology/types/Ticket/objects/"+w.vip,
		map[string]any{"properties": map[string]any{"duplicate_of": w.secret}}, nil)
	run(t, ctx, "the object page and the explorer name the reference",
		chromedp.Navigate(base+"/objects/Ticket/"+w.plain),
		until(ref("#prop-duplicate_of", "vip-1")),
		chromedp.Navigate(base+"/explore/Ticket?cols=status,duplicate_of"),
		until(ref("#objects", "vip-1")+` && `+ref("#objects", "secret-1")),
		// Issue 46 item 7: operators in words; moving a column is a
		// control of its own, not an arrow like the sort's.
		until(`[...document.querySelectorAll('#f-status option')].some(o => o.value === 'greater_than_or_equals' && o.textContent === 'at least')`),
		until(`document.querySelector('#objects thead .move a[aria-label="Move status right"]').textContent === 'move ⇥'`),
		sh.take(ctx, "refs-03-explorer"),
	)
	// Issue 46 item 5: the console's body limit is the API's (413), the
	// browser says so, and a long value does not make the explorer long.
	s.must(http.StatusOK, "PATCH", "/api/v1/ontology/types/Ticket/objects/"+w.vip,
		map[string]any{"properties": map[string]any{"summary": strings.Repeat("long ", 4000)}}, nil)
	run(t, ctx, "the API's limits in the console",
		chromedp.Navigate(base+"/actions/triage?target="+w.plain),
		chromedp.WaitVisible("#p-status", chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const s = document.querySelector('#p-status'); s.value = 'x'.repeat(5000002); s.dispatchEvent(new Event('input', {bubbles: true})); })()`, nil),
		until(text("#request-error")+`.includes('exceeds')`),
	)
	run(t, ctx, "Run over the limit says so",
		quiet(),
		chromedp.Evaluate(`document.querySelector('#request-error').replaceChildren()`, nil),
		click("#run"),
		until(text("#request-error")+`.includes('exceeds')`),
		sh.take(ctx, "refs-04-too-large"),
	)
	run(t, ctx, "a long value does not make the explorer long",
		chromedp.Navigate(base+"/explore/Ticket?cols=summary"),
		until(`[...document.querySelectorAll('#objects td')].some(td => td.textContent.startsWith('long long') && td.textContent.length <= 201)`),
		until(`document.documentElement.outerHTML.length < 100000`),
	)
	if st, _ := s.do("POST", "/api/v1/ontology/actions/set-status/execute", map[string]any{"target_object_id": w.plain,
		"parameters": map[string]any{"status": strings.Repeat("x", 5000002)}}); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("the API's answer to the same value: %d, want 413", st)
	}
	if got := s.object(w.plain)["status"]; got != "open" {
		t.Fatalf("a value over the limit was stored: %.20v", got)
	}
	run(t, ctx, "a reference the reader may not read is a hidden object",
		signInAs("viewer", "viewer-password-1"),
		chromedp.Navigate(base+"/explore/Ticket?cols=status,duplicate_of"),
		until(ref("#objects", "vip-1")),
		until(`[...document.querySelectorAll('#objects .hidden-ref')].some(e => e.textContent === 'hidden object')`),
		until(`!document.querySelector('main').textContent.includes('secret-1') && !document.querySelector('main').textContent.includes('`+w.secret+`')`),
		chromedp.Navigate(base+"/objects/Ticket/"+w.vip),
		until(text("#prop-duplicate_of")+`.includes('hidden object')`),
	)
}
