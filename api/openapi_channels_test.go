package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/channelspec"
)

// TestServedOpenAPIListsTheRegisteredChannels: the document served
// enumerates the channels of the registry the server was given, where a
// side effect, an outcome or a user's settings name a channel, and the
// channels a secret may be bound to; a channel registered only here
// appears, so the document and the registry cannot drift.
func TestServedOpenAPIListsTheRegisteredChannels(t *testing.T) {
	for name, reg := range map[string]*channelspec.Registry{
		"built-in":  nil,
		"with test": channelspec.Default().With(channelspec.Spec{Name: "pager", Destination: true}),
	} {
		t.Run(name, func(t *testing.T) {
			srv := api.New(api.Deps{Channels: reg})
			rec := httptest.NewRecorder()
			srv.Router().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.yaml", nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != http.StatusOK || strings.Contains(string(body), "[$channels]") || strings.Contains(string(body), "$destination_channels]") {
				t.Fatalf("status %d; placeholders left in the served document (%d bytes)", rec.Code, len(body))
			}
			var doc any
			if err := yaml.Unmarshal(body, &doc); err != nil {
				t.Fatalf("served document is not YAML: %v", err)
			}
			all, bound := reg.Names(), append([]string{""}, reg.WithDestination()...)
			var lists, secret int
			for _, e := range enums(doc) {
				switch {
				case slices.Equal(e, all):
					lists++
				case slices.Equal(e, bound):
					secret++
				case slices.ContainsFunc(e, func(v string) bool { return slices.Contains(all, v) }):
					t.Errorf("an enum of channels %q is neither the registry's %q nor its bindable %q", e, all, bound)
				}
			}
			if lists != 3 || secret != 1 {
				t.Fatalf("enums of the registry's channels: %d (want 3), of its bindable ones: %d (want 1)", lists, secret)
			}
		})
	}
}

// enums collects every enum of strings in a parsed YAML document.
func enums(v any) [][]string {
	var out [][]string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if l, ok := c.([]any); ok && k == "enum" {
				var e []string
				for _, s := range l {
					if s, ok := s.(string); ok {
						e = append(e, s)
					}
				}
				out = append(out, e)
				continue
			}
			out = append(out, enums(c)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, enums(c)...)
		}
	}
	return out
}

// TestServedOpenAPINamesMembersOfTheRegisteredChannels: the members named
// for a channel (a side effect's and a user's "<channel>_webhook", the
// settings' "<channel>_configured") are those of the registry given, so a
// process without Slack and Teams names neither, and a channel registered
// only here has its members.
func TestServedOpenAPINamesMembersOfTheRegisteredChannels(t *testing.T) {
	reg := channelspec.New(channelspec.Spec{Name: "in_app"},
		channelspec.Spec{Name: "pager", Destination: true, OwnDestination: true})
	doc := string(api.OpenAPIFor(reg))
	for _, gone := range []string{"slack", "teams", "Slack", "Teams", "$destination_members", "$own_destination"} {
		if strings.Contains(doc, gone) {
			t.Errorf("the document for in_app and pager names %q", gone)
		}
	}
	if n := strings.Count(doc, "pager_webhook:"); n != 2 {
		t.Errorf("pager_webhook is a member %d times, want 2 (side effect, settings input)", n)
	}
	if n := strings.Count(doc, "pager_configured: {type: boolean}"); n != 1 {
		t.Errorf("pager_configured is a member %d times, want 1 (settings view)", n)
	}
	var parsed any
	if err := yaml.Unmarshal([]byte(doc), &parsed); err != nil {
		t.Fatalf("document is not YAML: %v", err)
	}
	builtin := string(api.OpenAPIFor(nil))
	for _, m := range []string{"slack_webhook:", "teams_webhook:"} {
		if n := strings.Count(builtin, m); n != 2 {
			t.Errorf("built-in document: %s %d times, want 2", m, n)
		}
	}
}
