package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// smtpSink is a real SMTP server (emersion/go-smtp) on loopback that keeps
// what it receives.
type smtpSink struct {
	addr string
	mu   sync.Mutex
	got  []mailIn
	// grey counts the 451 answers still to give an address at RCPT
	// (greylisting, the commonest temporary refusal).
	grey map[string]int
}

type mailIn struct {
	rcpt []string
	data string
}

type sinkSession struct {
	s   *smtpSink
	cur mailIn
}

func (m *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (m *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if m.s.grey[to] > 0 {
		m.s.grey[to]--
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "greylisted, try again later"}
	}
	m.cur.rcpt = append(m.cur.rcpt, to)
	return nil
}
func (m *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	m.cur.data = string(b)
	m.s.mu.Lock()
	m.s.got = append(m.s.got, m.cur)
	m.s.mu.Unlock()
	m.cur = mailIn{}
	return err
}
func (m *sinkSession) Reset()        { m.cur = mailIn{} }
func (m *sinkSession) Logout() error { return nil }

func startSMTP(t *testing.T) *smtpSink {
	s := &smtpSink{grey: map[string]int{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s}, nil }))
	srv.Domain, srv.AllowInsecureAuth = "localhost", true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

func (s *smtpSink) mails() []mailIn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mailIn(nil), s.got...)
}

// TestNotificationChannelsOnDev: one action notifies by in-app, e-mail,
// Slack and Teams; each lands at a real server on loopback (an SMTP
// server in the test process, an HTTP receiver for the chats), recipients
// without an address are skipped, and an unreachable SMTP server leaves
// the action succeeded with the failure recorded.
func TestNotificationChannelsOnDev(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			mail := startSMTP(t)
			c := startDevArgs(t, dsn, []string{"--outbound-allow", "127.0.0.1/32",
				"--smtp-url", "smtp://" + mail.addr + "?tls=none", "--smtp-from", "Ontoflow <ontoflow@example.org>"})
			channelSuite(t, c, mail)
			settingsSuite(t, c, mail)
			greylistSuite(t, c, mail)
		})
	}
	t.Run("more recipients than --max-recipients", func(t *testing.T) {
		c := startDevArgs(t, "", []string{"--max-recipients", "1"})
		var bob struct {
			ID string `json:"id"`
		}
		c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "bob", "password": "bob-password-1"}, &bob)
		ex := notifyRun(t, c, map[string]any{"title": "to two", "channels": []string{"in_app"}, "send_to_actor": true, "user_ids": []string{bob.ID}})
		out := waitNotified(t, c, ex)
		if ex["status"] != "succeeded" || len(out) != 1 || out[0]["status"] != "failed" ||
			!strings.Contains(fmt.Sprint(out[0]["error"]), "--max-recipients") {
			t.Errorf("execution %v, outcomes %v: the side effect is recorded failed, the action stands", ex["status"], out)
		}
		var page struct {
			Data []any `json:"data"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/notifications", nil, &page)
		if len(page.Data) != 0 {
			t.Errorf("%d notifications delivered past the limit", len(page.Data))
		}
	})
	t.Run("unreachable SMTP", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := ln.Addr().String()
		ln.Close() // nothing listens there now
		c := startDevArgs(t, "", []string{"--smtp-url", "smtp://" + dead + "?tls=none", "--smtp-from", "ontoflow@example.org"})
		c.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]any{"email": "admin@example.org"}, nil)
		ex := notifyRun(t, c, map[string]any{"title": "hi", "channels": []string{"email"}, "send_to_actor": true})
		out := waitNotified(t, c, ex)
		if ex["status"] != "succeeded" || len(out) != 1 || out[0]["status"] != "failed" || out[0]["error"] == "" {
			t.Errorf("execution %v, outcomes %v", ex["status"], out)
		}
	})
}

func channelSuite(t *testing.T, c devClient, mail *smtpSink) {
	rx := newReceiver(t)
	c.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "SLACK_OPS", "value": rx.srv.URL + "/slack/T000/B000/xyz", "channel": "slack"}, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "TEAMS_OPS", "value": rx.srv.URL + "/teams/flow", "channel": "teams"}, nil)
	c.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]any{"email": "admin@example.org"}, nil)
	st, body := c.do("PATCH", "/api/v1/me", map[string]any{"email": "Eve <eve@example.org>\r\nBcc: x@example.org"})
	if st != http.StatusBadRequest {
		t.Errorf("a display name or header in the address: %d %s", st, body)
	}
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "noaddr", "password": "noaddr-password"}, nil)
	var users struct {
		Data []struct {
			ID       string `json:"id"`
			Username string `json:"username"`
		} `json:"data"`
	}
	c.must(http.StatusOK, "GET", "/api/v1/users", nil, &users)
	var noaddr string
	for _, u := range users.Data {
		if u.Username == "noaddr" {
			noaddr = u.ID
		}
	}
	ex := notifyRun(t, c, map[string]any{"title": "Ticket <b>&</b> done", "body": "by {{ actor.username }}",
		"channels": []string{"in_app", "email", "slack", "teams"}, "send_to_actor": true, "user_ids": []string{noaddr},
		"slack_webhook": "{{ secrets.SLACK_OPS }}", "teams_webhook": "{{ secrets.TEAMS_OPS }}"})
	out := waitNotified(t, c, ex)
	byChannel := map[string]map[string]any{}
	for _, o := range out {
		byChannel[o["channel"].(string)] = o
	}
	for _, ch := range []string{"in_app", "email", "slack", "teams"} {
		if byChannel[ch]["status"] != "delivered" {
			t.Errorf("%s outcome %v", ch, byChannel[ch])
		}
	}
	// E-mail: the admin has an address; noaddr has none and is not sent to.
	mails := mail.mails()
	if len(mails) != 1 || len(mails[0].rcpt) != 1 || mails[0].rcpt[0] != "admin@example.org" ||
		!strings.Contains(mails[0].data, "Subject: Ticket <b>&</b> done") || !strings.Contains(mails[0].data, "by admin") ||
		!strings.Contains(mails[0].data, "text/html") {
		t.Errorf("mails %+v", mails)
	}
	// Slack: one post for the shared destination, escaped, with blocks.
	slack := rx.seenAt("/slack/T000/B000/xyz")
	if len(slack) != 1 {
		t.Fatalf("%d Slack posts, want 1 (two recipients, one shared destination, the same text)", len(slack))
	}
	var sp struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text struct {
				Type, Text string
			} `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(slack[0].Body, &sp); err != nil || !strings.Contains(sp.Text, "Ticket &lt;b&gt;&amp;&lt;/b&gt; done") ||
		len(sp.Blocks) != 2 || sp.Blocks[0].Type != "header" || sp.Blocks[1].Type != "section" {
		t.Errorf("Slack payload %s (%v)", slack[0].Body, err)
	}
	// Teams: an Adaptive Card message.
	teams := rx.seenAt("/teams/flow")
	if len(teams) != 1 {
		t.Fatalf("%d Teams posts, want 1", len(teams))
	}
	var tp struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Type    string `json:"type"`
				Version string `json:"version"`
				Body    []struct {
					Type, Text string
				} `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(teams[0].Body, &tp); err != nil || tp.Type != "message" || len(tp.Attachments) != 1 ||
		tp.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" || tp.Attachments[0].Content.Version != "1.4" ||
		len(tp.Attachments[0].Content.Body) < 2 || tp.Attachments[0].Content.Body[0].Text != "Ticket <b>&</b> done" {
		t.Errorf("Teams payload %s (%v)", teams[0].Body, err)
	}
	// The destinations are secrets: not in the execution record.
	_, rec := c.do("GET", "/api/v1/ontology/executions/"+ex["id"].(string), nil)
	if strings.Contains(string(rec), "/slack/T000") || strings.Contains(string(rec), "/teams/flow") {
		t.Errorf("the execution shows a destination: %s", rec)
	}
}

// settingsSuite: users' notification settings choose the channels they
// accept and give their own chat destinations, which stay write-only.
func settingsSuite(t *testing.T, c devClient, mail *smtpSink) {
	rx := newReceiver(t)
	own := rx.srv.URL + "/slack/own/T1/B1/secretpart"
	var created struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "carol", "password": "carol-password-1", "email": "carol@example.org"}, &created)
	carol := c.as("carol", "carol-password-1")
	var v map[string]any
	carol.must(http.StatusOK, "GET", "/api/v1/me/notification-settings", nil, &v)
	if v["channels"] != nil || v["slack_configured"] != false {
		t.Errorf("defaults %v", v)
	}
	if st, b := carol.do("PUT", "/api/v1/me/notification-settings", map[string]any{"channels": []string{"carrier_pigeon"}}); st != http.StatusBadRequest {
		t.Errorf("an unknown channel: %d %s", st, b)
	}
	if st, b := carol.do("PUT", "/api/v1/me/notification-settings", map[string]any{"slack_webhook": "ftp://x"}); st != http.StatusBadRequest {
		t.Errorf("a non-http destination: %d %s", st, b)
	}
	carol.must(http.StatusOK, "PUT", "/api/v1/me/notification-settings", map[string]any{"channels": []string{"in_app", "slack"}, "slack_webhook": own}, &v)
	st, b := carol.do("GET", "/api/v1/me/notification-settings", nil)
	if st != http.StatusOK || strings.Contains(string(b), "secretpart") || !strings.Contains(string(b), `"slack_configured":true`) {
		t.Errorf("settings show %d %s", st, b)
	}
	before := len(mail.mails())
	ex := notifyRun(t, c, map[string]any{"title": "for carol", "channels": []string{"email", "slack"}, "user_ids": []string{created.ID}})
	out := waitNotified(t, c, ex)
	by := map[string]map[string]any{}
	for _, o := range out {
		by[o["channel"].(string)] = o
	}
	if by["email"]["status"] != "skipped" || !strings.Contains(fmt.Sprint(by["email"]["error"]), "notification settings") {
		t.Errorf("e-mail to a user who turned it off: %v", by["email"])
	}
	if len(mail.mails()) != before {
		t.Errorf("a mail was sent to a user who turned e-mail off")
	}
	if by["slack"]["status"] != "delivered" || len(rx.seenAt("/slack/own/T1/B1/secretpart")) != 1 {
		t.Errorf("Slack to the user's own destination: %v, %d posts", by["slack"], len(rx.seenAt("/slack/own/T1/B1/secretpart")))
	}
	_, rec := c.do("GET", "/api/v1/ontology/executions/"+ex["id"].(string), nil)
	if strings.Contains(string(rec), "secretpart") {
		t.Errorf("the execution shows the user's destination: %s", rec)
	}

	// The destination is the user's own: the secrets API does not show or
	// change it, and no action may reference it (an admin could otherwise
	// redirect it or post it to a receiver of their choosing).
	name := "USER_" + strings.ReplaceAll(created.ID, "-", "") + "_SLACK"
	if _, b := c.do("GET", "/api/v1/secrets", nil); strings.Contains(string(b), "USER_") {
		t.Errorf("the secrets list shows a user's destination: %s", b)
	}
	if st, b := c.do("PUT", "/api/v1/secrets/"+name, map[string]any{"value": rx.srv.URL + "/evil"}); st != http.StatusNotFound {
		t.Errorf("PUT of a user's destination: %d %s", st, b)
	}
	if st, b := c.do("POST", "/api/v1/secrets", map[string]any{"name": "USER_X_SLACK", "value": "https://x.example/"}); st != http.StatusBadRequest {
		t.Errorf("a secret with the reserved prefix: %d %s", st, b)
	}
	st, b = c.do("POST", "/api/v1/ontology/actions", map[string]any{"name": "exfil", "operation_kind": "invoke_webhook",
		"config": map[string]any{"operation": map[string]any{"url": rx.srv.URL + "/x", "body": "{{ secrets." + name + " }}"}}})
	if st != http.StatusBadRequest {
		t.Errorf("an action referencing a user's destination: %d %s", st, b)
	}
}

// greylistSuite: one recipient's address is refused for now (451) on the
// first attempt. The retry of the e-mail step sends to that address only:
// the recipient delivered the first time gets one mail, not two, and each
// recipient's outcome is recorded.
func greylistSuite(t *testing.T, c devClient, mail *smtpSink) {
	var grey struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "grey", "password": "grey-password-1", "email": "grey@example.org"}, &grey)
	mail.mu.Lock()
	mail.grey["grey@example.org"] = 1
	mail.mu.Unlock()
	before := len(mail.mails())
	ex := notifyRun(t, c, map[string]any{"title": "greylisted", "channels": []string{"email"}, "send_to_actor": true, "user_ids": []string{grey.ID}})
	out := waitNotified(t, c, ex)
	got := map[string]int{}
	for _, m := range mail.mails()[before:] {
		for _, r := range m.rcpt {
			got[r]++
		}
	}
	if got["admin@example.org"] != 1 || got["grey@example.org"] != 1 || len(got) != 2 {
		t.Errorf("mails by address %v: each recipient gets one mail, the retry goes to the refused address only", got)
	}
	b, _ := json.Marshal(out)
	var rec []struct {
		Status     string `json:"status"`
		Deliveries []struct {
			RecipientID string `json:"recipient_id"`
			Status      string `json:"status"`
		} `json:"deliveries"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || len(rec) != 1 || rec[0].Status != "delivered" || len(rec[0].Deliveries) != 2 ||
		rec[0].Deliveries[0].Status != "delivered" || rec[0].Deliveries[1].Status != "delivered" || rec[0].Deliveries[1].RecipientID != grey.ID {
		t.Errorf("outcomes %s (%v): one side effect delivered to both recipients, each recorded", b, err)
	}
}

var notifyN int

// notifyRun defines and runs an action with one side effect n on a fresh
// Note object and returns the execution.
func notifyRun(t *testing.T, c devClient, n map[string]any) map[string]any {
	t.Helper()
	notifyN++
	typ := fmt.Sprintf("Note%d", notifyN)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": typ, "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}}}, nil)
	var a struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "note-" + typ, "object_type_id": typ,
		"operation_kind": "create_object", "inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "title", "input": "title"}}},
			"notification_side_effects": []map[string]any{n}}}, &a)
	var ex map[string]any
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+a.ID+"/execute", map[string]any{"parameters": map[string]any{"title": "x"}}, &ex)
	return ex
}

// waitNotified waits until every channel's outcome is recorded.
func waitNotified(t *testing.T, c devClient, ex map[string]any) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var rec struct {
			NotifiedAt    *string          `json:"notified_at"`
			Notifications []map[string]any `json:"notifications"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+ex["id"].(string), nil, &rec)
		if rec.NotifiedAt != nil {
			return rec.Notifications
		}
		if time.Now().After(deadline) {
			t.Fatalf("notifications not recorded: %+v", rec)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
