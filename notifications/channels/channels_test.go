package channels

import (
	"errors"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// A delivery failure recorded on the execution does not carry recipients'
// addresses, which SMTP errors quote (go-mail adds "affected recipient(s)").
func TestUnaddressed(t *testing.T) {
	r := delivery.Result{Err: errors.New(`email: send: 550 5.1.1 <Bob@Example.org>: no such user, affected recipient(s): bob@example.org`), Retryable: false}
	got := unaddressed(r, []string{"alice@example.org", "bob@example.org"})
	if strings.Contains(got.Err.Error(), "@example.org") || !strings.Contains(got.Err.Error(), "550 5.1.1 <<address>>") || got.Retryable {
		t.Errorf("got %q", got.Err)
	}
	if ok := unaddressed(delivery.Result{}, []string{"a@example.org"}); ok.Err != nil {
		t.Errorf("a success gained an error: %v", ok.Err)
	}
}
