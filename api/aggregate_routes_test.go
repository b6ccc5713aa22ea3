package api_test

import (
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// TestAggregateRoute: the route answers groups under the read rule and
// refuses bad requests with 400 InvalidArgument naming the member.
func TestAggregateRoute(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Ticket","properties":[{"name":"status","type":"string"},
			{"name":"amount","type":"double"},{"name":"due","type":"date"},{"name":"tags","type":{"type":"array","element_type":"string"}}]}`)
		for i, st := range []string{"open", "open", "closed", "open"} {
			marking := "public"
			if i == 3 {
				marking = "pii" // hidden from reader (public clearance)
			}
			e.expect(201, "", "writer", "POST", "/types/Ticket/objects", fmt.Sprintf(
				`{"properties":{"status":%q,"amount":%d.5,"due":"2024-03-0%d","tags":["a","b"]},"marking":%q}`, st, i, i+1, marking))
		}
		body := `{"group_by":[{"property":"status"}],"metrics":[{"type":"count"},{"name":"total","type":"sum","property":"amount"}],"order":{"by":"count","direction":"desc"}}`
		r := e.expect(200, "", "writer", "POST", "/types/Ticket/aggregate", body)
		if !strings.Contains(r.raw, `{"key":[{"value":"open"}],"metrics":{"count":3,"total":5.5}}`) || r.str("accuracy") != "accurate" {
			t.Fatalf("writer's groups: %s", r.raw)
		}
		r = e.expect(200, "", "reader", "POST", "/types/Ticket/aggregate", body)
		if !strings.Contains(r.raw, `{"key":[{"value":"open"}],"metrics":{"count":2,"total":2}}`) {
			t.Fatalf("reader's groups (the pii ticket hidden): %s", r.raw)
		}
		r = e.expect(200, "", "reader", "POST", "/types/Ticket/aggregate", `{"filters":[{"key":"status","value":"open"}],"group_by":[{"property":"due","type":"date","interval":"month"}]}`)
		if !strings.Contains(r.raw, `"value":"2024-03-01T00:00:00Z","from":"2024-03-01T00:00:00Z","to":"2024-04-01T00:00:00Z"}],"metrics":{"count":2}`) {
			t.Fatalf("monthly histogram: %s", r.raw)
		}
		for _, c := range []struct{ body, field string }{
			{`{"metrics":[{"type":"sum","property":"nope"}]}`, "metrics[0].property"},
			{`{"metrics":[{"type":"sum","property":"status"}]}`, "metrics[0].type"},
			{`{"group_by":[{"property":"amount","type":"date","interval":"day"}]}`, "group_by[0].property"},
			{`{"group_by":[{"property":"status"},{"property":"status"},{"property":"status"},{"property":"status"}]}`, "group_by"},
			{`{"group_by":[{"property":"status","max_groups":10001}]}`, "group_by[0].max_groups"},
			{`{"group_by":[{"property":"due","type":"date","interval":"fortnight"}]}`, "group_by[0].interval"},
			{`{"filters":[{"key":"nope","value":"x"}]}`, "filter.nope"},
			{`{"accuracy":"roughly"}`, "accuracy"},
			{`{"order":{"by":"nope"}}`, "order.by"},
		} {
			r := e.expect(400, "InvalidArgument", "reader", "POST", "/types/Ticket/aggregate", c.body)
			if !strings.Contains(r.raw, `"field":"`+c.field+`"`) {
				t.Fatalf("%s: error does not name %s: %s", c.body, c.field, r.raw)
			}
		}
		// Too many groups: one object with 22 tags is 22³ groups by its
		// tags three times over, past the limit of 10,000.
		var tags []string
		for i := 0; i < 22; i++ {
			tags = append(tags, fmt.Sprintf("%q", fmt.Sprint("t", i)))
		}
		e.expect(201, "", "writer", "POST", "/types/Ticket/objects", `{"properties":{"tags":[`+strings.Join(tags, ",")+`]}}`)
		r = e.expect(400, "InvalidArgument", "writer", "POST", "/types/Ticket/aggregate", `{"group_by":[{"property":"tags"},{"property":"tags"},{"property":"tags"}]}`)
		if !strings.Contains(r.raw, `"reason":"too_many_groups"`) || !strings.Contains(r.raw, `"field":"group_by"`) {
			t.Fatalf("too many groups: %s", r.raw)
		}
		r = e.expect(200, "", "writer", "POST", "/types/Ticket/aggregate", `{"group_by":[{"property":"tags"}]}`)
		if !strings.Contains(r.raw, `{"key":[{"value":"a"}],"metrics":{"count":4}}`) || !strings.Contains(r.raw, `{"key":[{"value":"t9"}],"metrics":{"count":1}}`) {
			t.Fatalf("groups by array element: %s", r.raw)
		}
		e.expect(404, "", "reader", "POST", "/types/Nope/aggregate", `{}`)
	})
}
