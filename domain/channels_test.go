package domain_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/domain"
)

// TestSideEffectDestinationsKeepTheirMembers: destinations keyed by
// channel are written and read as the members stored before
// ("slack_webhook" after the other members, in the channels' order), so
// stored definitions read and write unchanged; an unknown member is
// refused as the strict decoder refused it.
func TestSideEffectDestinationsKeepTheirMembers(t *testing.T) {
	stored := `{"title":"<b>","channels":["slack","teams"],"send_to_actor":true,"metadata":{"n":1},` +
		`"slack_webhook":"{{ secrets.S }}","teams_webhook":"{{ secrets.T }}"}`
	var n domain.NotificationSideEffect
	if err := json.Unmarshal([]byte(stored), &n); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"slack": "{{ secrets.S }}", "teams": "{{ secrets.T }}"}
	if !reflect.DeepEqual(n.Destinations, want) || n.Title != "<b>" || !n.SendToActor {
		t.Fatalf("decoded %+v", n)
	}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(string(b), `\u003c`, "<"); strings.ReplaceAll(got, `\u003e`, ">") != stored {
		t.Fatalf("re-encoded\n%s\nwant\n%s", b, stored)
	}
	if err := json.Unmarshal([]byte(`{"title":"t","fax":1}`), &n); err == nil || !strings.Contains(err.Error(), `unknown field "fax"`) {
		t.Fatalf("unknown member: %v", err)
	}
}
