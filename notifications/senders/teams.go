package senders

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// TeamsMaxBytes is the largest payload a Teams Workflows webhook takes
// (28 KB).
const TeamsMaxBytes = 28000

// Teams posts to Microsoft Teams Workflows webhooks ("Post to a channel
// when a webhook request is received"), which take Adaptive Cards only.
type Teams struct {
	// Client must be an outbound (guarded) client.
	Client *http.Client
}

// Send posts m to the Workflows webhook URL dest (the value of a secret).
func (t *Teams) Send(ctx context.Context, dest string, m Message) error {
	body, err := TeamsPayload(m)
	if err != nil {
		return err
	}
	return postJSON(ctx, t.Client, "teams", dest, body)
}

type teamsTextBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Wrap   bool   `json:"wrap"`
	Size   string `json:"size,omitempty"`
	Weight string `json:"weight,omitempty"`
}

type teamsCard struct {
	Type    string           `json:"type"`
	Schema  string           `json:"$schema"`
	Version string           `json:"version"`
	Body    []teamsTextBlock `json:"body"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

func teamsRender(title, body string) ([]byte, error) {
	card := teamsCard{Type: "AdaptiveCard", Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Version: "1.4"}
	if title != "" {
		card.Body = append(card.Body, teamsTextBlock{Type: "TextBlock", Text: title, Wrap: true, Size: "Large", Weight: "Bolder"})
	}
	if body != "" {
		card.Body = append(card.Body, teamsTextBlock{Type: "TextBlock", Text: body, Wrap: true})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a card is no HTML page: "<" stays one byte
	err := enc.Encode(teamsMessage{Type: "message", Attachments: []teamsAttachment{{
		ContentType: "application/vnd.microsoft.card.adaptive", Content: card,
	}}})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// TeamsPayload renders m as a Workflows message: one Adaptive Card
// (version 1.4) with the title (large, bold) and the body as TextBlocks.
// A payload over TeamsMaxBytes has its body cut, ending in an ellipsis,
// to the longest beginning that fits.
func TeamsPayload(m Message) ([]byte, error) {
	title, body := strings.TrimSpace(m.Title), strings.TrimSpace(m.Body)
	if title == "" && body == "" {
		return nil, errorf("teams", "the message is empty")
	}
	title = truncate(title, 1024)
	out, err := teamsRender(title, body)
	if err != nil || len(out) <= TeamsMaxBytes {
		return out, err
	}
	// The largest prefix of the body (in runes) whose payload fits.
	runes := []rune(body)
	lo, hi := 0, len(runes) // the answer is in [lo, hi)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if b, err := teamsRender(title, string(runes[:mid])+"…"); err == nil && len(b) <= TeamsMaxBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	return teamsRender(title, string(runes[:lo])+"…")
}
