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
	return []byte(strings.NewReplacer(
		"[$channels]", flowList(chs.Names()),
		`["", $destination_channels]`, flowList(append([]string{""}, chs.WithDestination()...)),
	).Replace(openAPITemplate))
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
