package senders

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Slack's limits on the parts of a message (characters).
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
)

// Slack posts to Slack incoming webhooks.
type Slack struct {
	// Client must be an outbound (guarded) client.
	Client *http.Client
}

// Send posts m to the incoming-webhook URL dest (the value of a secret).
func (s *Slack) Send(ctx context.Context, dest string, m Message) error {
	body, err := SlackPayload(m)
	if err != nil {
		return err
	}
	return postJSON(ctx, s.Client, "slack", dest, body)
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackBlock struct {
	Type string    `json:"type"`
	Text slackText `json:"text"`
}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

// SlackPayload renders m as an incoming-webhook message: "text" is the
// fallback shown in notifications (title and body), "blocks" a header
// (the title, plain text) and a section (the body, mrkdwn). Slack's
// control characters &, < and > are escaped everywhere, so a value cannot
// form a link or a mention such as <!channel>; each part is cut to
// Slack's limit (150 characters for the header, 3000 for the others).
func SlackPayload(m Message) ([]byte, error) {
	title, body := strings.TrimSpace(m.Title), strings.TrimSpace(m.Body)
	fallback := title
	if body != "" {
		if fallback != "" {
			fallback += "\n"
		}
		fallback += body
	}
	msg := slackMessage{Text: slackEscape(fallback, slackSectionMax), Blocks: []slackBlock{}}
	if title != "" {
		// A header is one line.
		oneLine := strings.Join(strings.Fields(title), " ")
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "header", Text: slackText{Type: "plain_text", Text: slackEscape(oneLine, slackHeaderMax)}})
	}
	if body != "" {
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "section", Text: slackText{Type: "mrkdwn", Text: slackEscape(body, slackSectionMax)}})
	}
	if msg.Text == "" {
		return nil, errorf("slack", "the message is empty")
	}
	return json.Marshal(msg)
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackEscape escapes s and cuts it to at most max characters after
// escaping, never inside an entity.
func slackEscape(s string, max int) string {
	if e := slackEscaper.Replace(s); utf8.RuneCountInString(e) <= max {
		return e
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		piece := slackEscaper.Replace(string(r))
		if n+utf8.RuneCountInString(piece) > max-1 {
			break
		}
		b.WriteString(piece)
		n += utf8.RuneCountInString(piece)
	}
	return b.String() + "…"
}
