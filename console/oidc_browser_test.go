package console_test

import (
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
)

// The browser's whole flow with a real provider: the console sends an
// unsigned-in browser to its sign-in page, "Sign in with" goes to the
// provider and back, the user (created just in time, in the ops group)
// lands signed in, runs an action its group admits, and signs out.
func TestConsoleOIDCInBrowser(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a dev stack and a browser")
	}
	ctx := browser(t)
	s := startOIDCStack(t)
	w := s.seed()
	s.create("/api/v1/ontology/actions", map[string]any{"name": "escalate", "display_name": "Escalate", "object_type_id": "Ticket",
		"operation_kind": "update_object", "policy": map[string]any{"any_group": []string{"ops"}},
		"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "escalated"}}}})
	s.idp.QueueUser(&mockoidc.MockUser{Subject: "sub-ivy", PreferredUsername: "ivy", Groups: []string{"staff", "ops"}})
	base := s.base + "/ui"
	run(t, ctx, "sign in through the provider",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#signin-oidc", chromedp.ByQuery),
		click("#signin-oidc"),
		chromedp.WaitVisible("ul.actions", chromedp.ByQuery),
		until(`document.querySelector('h1') && document.querySelector('h1').textContent === 'Actions'`),
		until(text(".who")+` === 'ivy'`),
	)
	run(t, ctx, "run an action the group admits",
		chromedp.Navigate(base+"/actions/escalate?target="+w.plain),
		chromedp.WaitVisible("#run", chromedp.ByQuery),
		click("#run"),
		until(text("#run-status")+` === 'succeeded'`),
	)
	if o := s.object(w.plain); o["status"] != "escalated" {
		t.Errorf("after the run: %v", o)
	}
	run(t, ctx, "sign out",
		click(".signout button"),
		chromedp.WaitVisible("#signin-oidc", chromedp.ByQuery),
	)
}
