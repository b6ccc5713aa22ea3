package console_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestExplorerFacetsInBrowser drives issue 48's console part in Chromium:
// a filter's match count on the table, a column's top values as bars
// with the same figures as a table, a date histogram and a numeric one,
// each over the objects the table's filters select, and the read rule:
// a viewer's bars do not count what the viewer may not read.
func TestExplorerFacetsInBrowser(t *testing.T) {
	ctx := browser(t)
	s := startStack(t)
	s.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Order", "primary_key": "ref",
		"properties": []map[string]any{{"name": "ref", "type": "string", "required": true}, {"name": "region", "type": "string"},
			{"name": "amount", "type": "integer"}, {"name": "placed", "type": "date"}, {"name": "extra", "type": "json"}}}, nil)
	regions := func(i int) string {
		switch {
		case i < 15:
			return "north"
		case i < 25:
			return "south"
		}
		return "east"
	}
	for i := range 30 {
		s.create("/api/v1/ontology/types/Order/objects", map[string]any{"properties": map[string]any{"ref": fmt.Sprintf("o-%02d", i),
			"region": regions(i), "amount": i * 10, "placed": fmt.Sprintf("2026-03-0%d", 1+i%3)}})
	}
	s.create("/api/v1/ontology/types/Order/objects", map[string]any{"marking": "confidential",
		"properties": map[string]any{"ref": "hidden", "region": "north", "amount": 5, "placed": "2026-03-01"}})
	s.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "viewer",
		"password": "viewer-password-1", "clearance": "public"}, nil)
	base := s.base + "/ui"
	sh := newShots(t)
	signInAs := func(user, pw string) chromedp.Action {
		return chromedp.Tasks{network.ClearBrowserCookies(), chromedp.Navigate(base + "/"), chromedp.WaitVisible("#username", chromedp.ByQuery),
			chromedp.SendKeys("#username", user, chromedp.ByQuery), chromedp.SendKeys("#password", pw, chromedp.ByQuery),
			click("#signin"), chromedp.WaitVisible(".signout button", chromedp.ByQuery)}
	}
	table := base + "/explore/Order?cols=region,amount,placed,extra"
	run(t, ctx, "top values of a column",
		signInAs("admin", adminPassword),
		settled(table),
		// JSON is indexed as hashes: no values to chart, no link.
		until(`document.querySelector('#facets-amount') !== null && document.querySelector('#facets-extra') === null`),
		follow("#facets-region"),
		until(`document.querySelector('#facet-total').textContent === '31'`),
		until(`[...document.querySelectorAll('#facet-table tbody tr')].map(r => [...r.cells].map(c => c.textContent).join(' ')).join('|') === 'north 16|south 10|east 5'`),
		until(`document.querySelectorAll('#facet-bars svg rect').length === 3`),
		until(`document.querySelector('#facet-bars svg title').textContent === 'north: 16'`),
		sh.take(ctx, "facets-01-top-values"),
	)
	run(t, ctx, "a filter's match count, and charts of what it selects",
		settled(table+"&f.amount=greater_than&v.amount=100"),
		until(`document.querySelector('#match-count').textContent === '19 objects match.'`),
		follow("#facets-placed"),
		until(`document.querySelector('#facet-total').textContent === '19'`),
		until(`document.querySelectorAll('#facet-table tbody tr').length === 3`),
		until(`document.querySelector('#facet-table tbody tr td').textContent.startsWith('2026-03-01')`),
		follow(`#intervals a[href*="interval=month"]`),
		until(`document.querySelectorAll('#facet-table tbody tr').length === 1 && document.querySelector('#facet-total').textContent === '19'`),
		follow("#back-to-table"),
		until(`document.querySelector('#match-count').textContent === '19 objects match.'`),
		follow("#facets-amount"),
		until(`document.querySelector('#facet-total').textContent === '19'`),
		until(`document.querySelector('main').textContent.includes('Buckets of width 10')`),
		sh.take(ctx, "facets-02-numbers"),
	)
	run(t, ctx, "bad input: an unknown property, an unknown interval",
		settled(base+"/explore/Order/facets?by=nope"),
		until(`document.querySelector('main').textContent.includes('has no property "nope"')`),
		settled(base+"/explore/Order/facets?by=placed&interval=fortnight"),
		until(`document.querySelector('main').textContent.includes('interval is one of')`),
	)
	run(t, ctx, "a viewer counts only what it may read",
		signInAs("viewer", "viewer-password-1"),
		settled(base+"/explore/Order/facets?by=region"),
		until(`document.querySelector('#facet-total').textContent === '30'`),
		until(`[...document.querySelector('#facet-table tbody tr').cells].map(c => c.textContent).join(' ') === 'north 15'`),
	)
}
