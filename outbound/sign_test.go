package outbound_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/outbound"
)

// The example of the Standard Webhooks specification and its reference
// libraries.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignWebhookMatchesTheSpecification(t *testing.T) {
	h := http.Header{}
	if err := outbound.SignWebhook(h, specSecret, specID, time.Unix(specTimestamp, 0), []byte(specBody)); err != nil {
		t.Fatal(err)
	}
	if h.Get("webhook-signature") != specSignature || h.Get("webhook-id") != specID || h.Get("webhook-timestamp") != "1614265330" {
		t.Fatalf("headers %v", h)
	}
	now := time.Unix(specTimestamp+60, 0)
	if err := outbound.VerifyWebhook(h, specSecret, []byte(specBody), now, 5*time.Minute); err != nil {
		t.Fatalf("verify: %v", err)
	}
	h.Set("webhook-signature", "v1,bogus "+specSignature) // several signatures: one valid is enough
	if err := outbound.VerifyWebhook(h, specSecret, []byte(specBody), now, 5*time.Minute); err != nil {
		t.Fatalf("verify with two signatures: %v", err)
	}
	for name, check := range map[string]func() error{
		"other body": func() error {
			return outbound.VerifyWebhook(h, specSecret, []byte(specBody+" "), now, 5*time.Minute)
		},
		"too old": func() error {
			return outbound.VerifyWebhook(h, specSecret, []byte(specBody), now.Add(time.Hour), 5*time.Minute)
		},
		"other secret": func() error {
			return outbound.VerifyWebhook(h, "whsec_"+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", []byte(specBody), now, 5*time.Minute)
		},
	} {
		if check() == nil {
			t.Errorf("%s: verified", name)
		}
	}
	for _, bad := range []string{"not base64!", "whsec_c2hvcnQ=", ""} {
		if err := outbound.SignWebhook(http.Header{}, bad, "id", time.Now(), nil); err == nil {
			t.Errorf("secret %q accepted", bad)
		}
	}
}
