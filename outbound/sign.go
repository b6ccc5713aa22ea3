package outbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (standardwebhooks.com) header names.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// DecodeWebhookSecret reads a Standard Webhooks signing secret: base64
// (of 24 to 64 bytes), optionally prefixed with "whsec_". Check a
// signing secret with it when the configuration is saved.
func DecodeWebhookSecret(secret string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(secret), "whsec_"))
	if err != nil {
		return nil, errors.New("a signing secret is base64, optionally prefixed with whsec_")
	}
	if len(raw) < 24 || len(raw) > 64 {
		return nil, fmt.Errorf("a signing secret decodes to 24 to 64 bytes, not %d", len(raw))
	}
	return raw, nil
}

// SignWebhook sets the Standard Webhooks headers on h for one delivery
// attempt: webhook-id (the same on every attempt, so a receiver can drop
// duplicates), webhook-timestamp (this attempt's, in seconds) and
// webhook-signature, "v1," and the base64 HMAC-SHA256 of
// "id.timestamp.body" under the decoded secret.
func SignWebhook(h http.Header, secret, id string, ts time.Time, body []byte) error {
	key, err := DecodeWebhookSecret(secret)
	if err != nil {
		return err
	}
	t := strconv.FormatInt(ts.Unix(), 10)
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, t)
	h.Set(HeaderWebhookSignature, "v1,"+webhookMAC(key, id, t, body))
	return nil
}

func webhookMAC(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// VerifyWebhook is what a receiver does: it checks the signature (any of
// the space-separated v1 signatures) and that the timestamp is within
// tolerance of now. Ontoflow's tests receive with it; it is also the
// reference for receivers written in Go.
func VerifyWebhook(h http.Header, secret string, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := DecodeWebhookSecret(secret)
	if err != nil {
		return err
	}
	id, ts := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("missing webhook-id or webhook-timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook-timestamp is outside the tolerance")
	}
	want := webhookMAC(key, id, ts, body)
	for _, s := range strings.Fields(h.Get(HeaderWebhookSignature)) {
		if v, sig, ok := strings.Cut(s, ","); ok && v == "v1" && hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no valid webhook-signature")
}
