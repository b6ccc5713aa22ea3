package api

import (
	_ "embed"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/channelspec"
)

// openAPITemplate is the API's OpenAPI 3 document, kept in the
// repository beside the routes. Its enums of notification channels are
// placeholders ([$channels], ["", $destination_channels]) that
// OpenAPIFor fills from the registered channels, so the document lists
// what the serving process accepts and no file lists channels.
//
//go:embed openapi.yaml
var openAPITemplate string

// OpenAPI is the document with the built-in channels; a test checks that
// every route of the router is in it.
var OpenAPI = OpenAPIFor(nil)

// OpenAPIFor is the document as served with the channels of chs (nil:
// the built-in ones).
func OpenAPIFor(chs *channelspec.Registry) []byte {
	doc := strings.NewReplacer(
		"[$channels]", flowList(chs.Names()),
		`["", $destination_channels]`, flowList(append([]string{""}, chs.WithDestination()...)),
	).Replace(openAPITemplate)
	member := func(ch string) string { return channelspec.Spec{Name: ch}.DestinationMember() }
	doc = memberLines(doc, "$destination_members", chs.WithDestination(), func(ch string) string {
		return fmt.Sprintf(`%s: {type: string, description: "The destination of the %s channel, as a secret reference {{ secrets.NAME }}."}`, member(ch), ch)
	})
	doc = memberLines(doc, "$own_destination_inputs", chs.WithOwnDestination(), func(ch string) string {
		return member(ch) + ": {type: string, format: uri}"
	})
	doc = memberLines(doc, "$own_destination_configured", chs.WithOwnDestination(), func(ch string) string {
		return channelspec.Spec{Name: ch}.ConfiguredMember() + ": {type: boolean}"
	})
	return []byte(doc)
}

// memberLines replaces each line of doc that is only placeholder with one
// line per channel (line(ch)), at the placeholder's indentation: the
// members named for channels (slack_webhook) come from the registry too.
func memberLines(doc, placeholder string, channels []string, line func(ch string) string) string {
	var b strings.Builder
	for l := range strings.Lines(doc) {
		indent, rest, _ := strings.Cut(l, placeholder)
		if rest != "\n" || strings.TrimLeft(indent, " ") != "" {
			b.WriteString(l)
			continue
		}
		for _, ch := range channels {
			b.WriteString(indent + line(ch) + "\n")
		}
	}
	return b.String()
}

// flowList is names as a YAML flow sequence of double-quoted strings.
func flowList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func serveOpenAPI(doc []byte) gin.HandlerFunc {
	return func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", doc) }
}
